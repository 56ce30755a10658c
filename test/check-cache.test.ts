import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";

import { cacheEnabled, cacheKey, kitCheckKey, readCached, writeCached } from "../scripts/engine/check-cache.ts";
import { LESSON_NOT_AN_INPUT, loadChapters } from "../scripts/engine/chapters.ts";
import { chapterRun, contractFor, runFor } from "../scripts/engine/contract.ts";
import type { CourseHistory } from "../scripts/engine/history.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { KIT, spawnProcess, tempDir } from "./helpers.ts";
import { assignShards, shardFile } from "./_selfcheck/chapters.ts";

const work = tempDir("check-cache");
after(() => work.remove());

function fakeHistory(ids: readonly string[], salt = ""): CourseHistory {
  const chapters: CourseHistory["chapters"] = {};
  for (const id of ids) chapters[id] = { parent: `p${id}${salt}`.padEnd(40, "0"), target: `t${id}${salt}`.padEnd(40, "0"), steps: {} };
  return { branch: "course", base: "b".repeat(40), tip: "c".repeat(40), chapters };
}

test("缓存键随检查读到的输入而变：本章或之前各章的提交、本章的元数据、之前各章的元数据、读课文的检查还有本章的课文；之后的章节改了不影响", () => {
  const lessons = path.join(work.dir, "lessons");
  cpSync(LESSONS_DIR, lessons, { recursive: true });
  const load = () => loadChapters(lessons);
  const chapters = load();
  const ids = chapters.map((chapter) => chapter.id);
  const ctx = (history = fakeHistory(ids), list = load()) => ({ kitRoot: KIT, chapters: list, history, workRoot: work.dir });
  const keyOf = (id: string, context = ctx()) => {
    const chapter = context.chapters.find((candidate) => candidate.id === id)!;
    return cacheKey(context, chapter, contractFor(chapter).find((check) => check.id === "target")!);
  };
  const before = keyOf("05");
  assert.equal(keyOf("05"), before, "输入不变，键不变");
  const other = contractFor(chapters[5]!).find((check) => check.id === "fault")!;
  assert.notEqual(cacheKey(ctx(), ctx().chapters[5]!, other), before, "不同的检查各有各的键");

  const history = fakeHistory(ids);
  history.chapters["05"]!.target = "f".repeat(40);
  assert.notEqual(keyOf("05", ctx(history)), before, "本章的提交变了（补丁链上它之前的任何改动都会这样）");

  const meta04 = path.join(lessons, "04-scripted-model", "chapter.json");
  const original04 = readFileSync(meta04, "utf8");
  writeFileSync(meta04, original04.replace(/"minutes": (\d+)/, (_all, minutes: string) => `"minutes": ${Number(minutes) + 1}`));
  assert.notEqual(keyOf("05"), before, "之前一章的元数据变了（承诺 4 核对它的计数）");
  writeFileSync(meta04, original04);

  const lessonKey = () => {
    const chapter = ctx().chapters[5]!;
    return cacheKey(ctx(), chapter, contractFor(chapter).find((check) => check.id === "lesson")!);
  };
  const lessonBefore = lessonKey();
  const lesson05 = path.join(lessons, "05-provider-adapter", "lesson.md");
  writeFileSync(lesson05, `${readFileSync(lesson05, "utf8")}\n多一行。\n`);
  assert.notEqual(lessonKey(), lessonBefore, "本章的课文变了：读课文的检查重做");
  assert.equal(keyOf("05"), before, "本章的课文变了：不读课文的检查（承诺 3）不受影响");
  cpSync(path.join(LESSONS_DIR, "05-provider-adapter", "lesson.md"), lesson05);

  const meta08 = path.join(lessons, "08-coding-tools", "chapter.json");
  writeFileSync(meta08, readFileSync(meta08, "utf8").replace(/"minutes": (\d+)/, (_all, minutes: string) => `"minutes": ${Number(minutes) + 1}`));
  assert.equal(keyOf("05"), before, "之后的章节改了，第 05 章的检查不受影响");
});

test("缓存只在本机的 npm test 里用：CI=true 或 --no-cache 时不读不写；记录写坏了等于没有", () => {
  assert.equal(cacheEnabled({}), true);
  assert.equal(cacheEnabled({ CI: "true" }), false);
  assert.equal(cacheEnabled({ CI: "1" }), false);
  assert.equal(cacheEnabled({ CI: "false" }), true);
  assert.equal(cacheEnabled({ PI_COURSE_SELFCHECK_CACHE: "off" }), false);
  const dir = mkdtempSync(path.join(os.tmpdir(), "pi-course-cache-"));
  const previous = process.env.PI_COURSE_SELFCHECK_CACHE_DIR;
  process.env.PI_COURSE_SELFCHECK_CACHE_DIR = dir;
  try {
    writeCached(KIT, "abc", { chapter: "03", check: "target", durationMs: 1200, at: "2026-12-01T00:00:00.000Z" });
    assert.deepEqual(readCached(KIT, "abc"), { chapter: "03", check: "target", durationMs: 1200, at: "2026-12-01T00:00:00.000Z" });
    writeFileSync(path.join(dir, "bad.json"), "{半个");
    assert.equal(readCached(KIT, "bad"), undefined);
    assert.equal(readCached(KIT, "missing"), undefined);
  } finally {
    if (previous === undefined) delete process.env.PI_COURSE_SELFCHECK_CACHE_DIR;
    else process.env.PI_COURSE_SELFCHECK_CACHE_DIR = previous;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("套件测试里缓存的检查（接续链）：lessons/ 下任何一个文件、测试自己的源文件、引擎一变，键就变；别处的文件不影响", () => {
  const root = path.join(work.dir, "kit-key");
  const put = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  };
  put("lessons/03-x/chapter.patch", "补丁");
  put("lessons/03-x/lesson.md", "课文");
  put("test/chain.test.ts", "测试");
  put("scripts/engine/a.ts", "引擎");
  put("README.md", "说明");
  const key = () => kitCheckKey(root, "chain", ["test/chain.test.ts"]);
  const first = key();
  assert.equal(key(), first, "同样的输入，同样的键");
  put("README.md", "说明改了");
  assert.equal(key(), first, "链不读的文件不影响");
  put("lessons/03-x/lesson.md", "课文改了");
  const second = key();
  assert.notEqual(second, first, "课文变了");
  put("lessons/03-x/chapter.patch", "补丁改了");
  const third = key();
  assert.notEqual(third, second, "补丁变了");
  put("test/chain.test.ts", "测试改了");
  assert.notEqual(key(), third, "测试自己的源文件变了");
  assert.notEqual(kitCheckKey(root, "another", ["test/chain.test.ts"]), key(), "不同的检查不共用键");
});

test("真实的自检跑两遍：第二遍每一项都来自缓存并这样说；CI=true 时照样全部重做", { timeout: 240_000 }, async () => {
  const cache = mkdtempSync(path.join(os.tmpdir(), "pi-course-cache-"));
  const stats = path.join(cache, "stats.txt");
  // 只启动第 01 章所在的那个分片文件：其余分片按名字过滤后什么也不做，却各要启动一次、读一遍课程历史
  const shard = assignShards(loadChapters(LESSONS_DIR)).get("01");
  assert.ok(shard !== undefined, "第 01 章应当分在某个分片里");
  const run = (env: Record<string, string>) =>
    spawnProcess(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", "--test-name-pattern=第 01 章", `test/_selfcheck/${shardFile(shard)}`], {
      cwd: KIT,
      env: { ...process.env, NODE_TEST_CONTEXT: undefined, CI: "", PI_COURSE_SELFCHECK_CACHE: "", PI_COURSE_SELFCHECK_CACHE_DIR: cache, PI_COURSE_SELFCHECK_STATS: stats, ...env },
    });
  const count = (kind: string) => readFileSync(stats, "utf8").split("\n").filter((line) => line === kind).length;
  try {
    const first = await run({});
    assert.equal(first.code, 0, first.stdout + first.stderr);
    const checks = count("run");
    assert.ok(checks >= 8, `第 01 章至少有八项检查，实际 ${checks}`);
    assert.equal(count("hit"), 0);
    const second = await run({});
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.equal(count("hit"), checks, "第二遍每一项都来自缓存");
    assert.match(second.stdout, /来自缓存：\S+ 同样的输入检查通过/);
    const ci = await run({ CI: "true" });
    assert.equal(ci.code, 0, ci.stdout + ci.stderr);
    assert.equal(count("run"), checks * 2, "CI=true 时全部重新检查");
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});

test("不读课文的检查看不到课文：它拿到的每一章的课文路径都指向不存在的文件，真去读就失败；声明了 readsLesson 的检查拿到真课文", () => {
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = chapters[5]!;
  const ctx = { kitRoot: KIT, chapters, history: fakeHistory(chapters.map((other) => other.id)), workRoot: work.dir };
  const run = chapterRun(ctx, chapter);
  const checks = contractFor(chapter);
  const reading = checks.filter((check) => check.readsLesson).map((check) => check.id);
  assert.deepEqual(reading, ["history", "lesson"], "读课文的只有承诺 1（引用的提交号）与承诺 7（课文合规）");
  for (const check of checks) {
    const view = runFor(check, run);
    if (check.readsLesson) {
      assert.equal(view.chapter.lessonPath, chapter.lessonPath);
      assert.ok(readFileSync(view.chapter.lessonPath, "utf8").length > 0);
      continue;
    }
    assert.throws(() => readFileSync(view.chapter.lessonPath), /ENOENT/, `${check.id} 看不到本章的课文`);
    assert.ok(view.ctx.chapters.every((other) => other.lessonPath === LESSON_NOT_AN_INPUT), `${check.id} 也看不到别章的课文`);
  }
});
