import assert from "node:assert/strict";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { ensureHistory, type CourseHistory } from "../scripts/engine/history.ts";
import { lintCourse } from "../scripts/engine/lint.ts";
import { KIT_ROOT, LESSONS_DIR } from "../scripts/engine/paths.ts";
import { runScript, tempDir } from "./helpers.ts";

const work = tempDir("lint");
after(() => work.remove());

const CHAPTER = "10-session-tree";
const META = `lessons/${CHAPTER}/chapter.json`;

interface MutationJson {
  file: string;
  find: string;
  replace: string;
  region?: string;
}

/** 复制真实课程的 lessons/，对第 10 章的 chapter.json 做一次改动，返回对复制品的静态检查结果。 */
async function lintWith(name: string, edit: (meta: { mutations: MutationJson[]; fault: { test: string } }) => void): Promise<string[]> {
  const dir = path.join(work.dir, name);
  cpSync(LESSONS_DIR, dir, { recursive: true });
  const metaPath = path.join(dir, CHAPTER, "chapter.json");
  const meta = JSON.parse(readFileSync(metaPath, "utf8"));
  edit(meta);
  writeFileSync(metaPath, JSON.stringify(meta, null, 2));
  // 只改了 chapter.json：补丁没变，课程历史还是同一串提交（缓存里取，不重建）
  const chapters = loadChapters(dir);
  return lintCourse(KIT_ROOT, chapters, await ensureHistory(KIT_ROOT, chapters), chapters.filter((chapter) => chapter.dirName === CHAPTER));
}

/** 第 10 章里改 session-store.ts 的那条变异（它的原文在实践 10.2 的区域里）。 */
function storeMutation(meta: { mutations: MutationJson[] }): [number, MutationJson] {
  const index = meta.mutations.findIndex((mutation) => mutation.file.endsWith("/session-store.ts"));
  assert.ok(index >= 0, "第 10 章应当有一条改 session-store.ts 的变异");
  return [index, meta.mutations[index]!];
}

let history: CourseHistory;
before(async () => {
  history = await ensureHistory(KIT_ROOT, loadChapters(LESSONS_DIR));
});

// 用时的目标（≤ 10 s）由 npm run bench 在空闲的机器上测；这里只要求它不编译、不跑测试，在测试的时限里跑完，
// 机器再忙也不会因为慢了几秒而失败
test("course lint：真实课程没有问题，不编译，几秒钟跑完", { timeout: 60_000 }, async () => {
  assert.deepEqual(await lintCourse(KIT_ROOT, loadChapters(LESSONS_DIR), history), []);
  const result = await runScript("course", ["lint", "10"]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /课程静态检查通过：10/);
});

test("一处锚点坏了（变异的原文在目标里找不到）：指到 chapter.json 的那个字段，说出文件和次数", { timeout: 30_000 }, async () => {
  let at = -1;
  let file = "";
  const problems = await lintWith("broken-anchor", (meta) => {
    const [index, mutation] = storeMutation(meta);
    at = index;
    file = mutation.file;
    mutation.find = `${mutation.find} /* 目标里没有这一段 */`;
  });
  assert.deepEqual(problems, [`${META} mutations[${at}].find：原文在 ${file} 里出现 0 次，应当恰好 1 次`]);
});

test("变异点名它所在的实践区域：只在那个区域里找原文；点错区域时指到 region 字段", { timeout: 30_000 }, async () => {
  assert.deepEqual(await lintWith("region-right", (meta) => (storeMutation(meta)[1].region = "10.2")), []);
  let at = -1;
  let file = "";
  const problems = await lintWith("region-wrong", (meta) => {
    const [index, mutation] = storeMutation(meta);
    [at, file] = [index, mutation.file];
    mutation.region = "10.3";
  });
  assert.deepEqual(problems, [`${META} mutations[${at}].region：原文要在 ${file} 的实践 10.3 区域里找，文件里却没有这个实践的区域`]);
});

test("故障实验点名的测试不在聚焦测试里：指到 fault.test", { timeout: 30_000 }, async () => {
  const problems = await lintWith("fault-test", (meta) => (meta.fault.test = "10.9 没有这项测试"));
  // 课文的「## 故障实验」当然也没点名这项测试，那一条由课文检查报出；这里只看 chapter.json 的字段
  assert.deepEqual(
    problems.filter((problem) => problem.startsWith(META)),
    [`${META} fault.test：聚焦测试里没有名为「10.9 没有这项测试」的测试`],
  );
  assert.ok(problems.some((problem) => problem.includes("「## 故障实验」没有点名会失败的测试「10.9 没有这项测试」")));
});

test("变异的 caughtBy 点名的测试不在聚焦测试里：指到 mutations[i].caughtBy", { timeout: 30_000 }, async () => {
  const problems = await lintWith("caught-by", (meta) => {
    const [, mutation] = storeMutation(meta);
    (mutation as MutationJson & { caughtBy?: string }).caughtBy = "10.9 没有这项测试";
  });
  const index = storeMutation(JSON.parse(readFileSync(path.join(LESSONS_DIR, CHAPTER, "chapter.json"), "utf8")))[0];
  assert.deepEqual(
    problems.filter((problem) => problem.startsWith(META)),
    [`${META} mutations[${index}].caughtBy：聚焦测试里没有名为「10.9 没有这项测试」的测试`],
  );
});
