import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { ensureHistory, readCommittedFile, type CourseHistory } from "../scripts/engine/history.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import {
  checkCompileFails,
  checkMutations,
  checkRegions,
  checkTipMatchesPackage,
  findHeldOut,
  findHintText,
  materialise,
  PROMISES,
  type SelfCheckContext,
} from "../scripts/engine/selfcheck.ts";
import { KIT, tempDir } from "./helpers.ts";
import { assignShards, estimatedCost, SHARD_COUNT, shardFile, shardFilesOnDisk } from "./_selfcheck/chapters.ts";

/**
 * 课程自检：对每一章逐条证明 DESIGN §4 的承诺。
 * 测试名写明章节与承诺，任何一条被打破时，失败信息直接指出是哪一章的哪一条。
 * 每章的承诺在 test/_selfcheck/shard-*.test.ts 里（分成几个文件，两个核一起做）；
 * 这里是套件层面的检查，以及“自检真的会失败”的反例。
 */
const chapters = loadChapters(LESSONS_DIR);
const work = tempDir("selfcheck");
let history: CourseHistory;
const ctx = (): SelfCheckContext => ({ kitRoot: KIT, chapters, history, workRoot: work.dir });

before(async () => {
  history = await ensureHistory(KIT, chapters);
});
after(() => work.remove());

test("课程历史末端与套件里的 packages/pi-course 逐文件一致", async () => {
  assert.deepEqual(await checkTipMatchesPackage(ctx()), []);
});

test("变异测试会抓住活下来的变异：只改注释的“变异”被报告为没有测试守住", { timeout: 120_000 }, async () => {
  const chapter = chapters.find((candidate) => candidate.id === "01")!;
  const dir = await materialise(ctx(), history.chapters["01"]!.target, "mutations-survivor");
  const file = "packages/pi-course/src/trace-events.ts";
  const harmless = { rule: "只改一行注释", file, find: "// ── 在边界上解析 unknown", replace: "// ── 改过的注释" };
  const missing = { rule: "原文不存在", file, find: "这段原文不在文件里", replace: "x" };
  const emitted = path.join(dir, "packages/pi-course/dist/src/trace-events.js");
  const problems = await checkMutations({ ...chapter, mutations: [harmless, missing] }, dir);
  assert.equal(problems.length, 2, problems.join("\n"));
  // 变异换进 dist 的 JS 与改过的源文件都换回了原样
  assert.equal(readFileSync(path.join(dir, file), "utf8"), await readCommittedFile(KIT, history.chapters["01"]!.target, file));
  assert.match(readFileSync(emitted, "utf8"), /\/\/# sourceMappingURL=trace-events\.js\.map\s*$/);
  assert.match(problems[0]!, /变异 1（只改一行注释）之后聚焦测试仍然 \d+\/\d+ 全绿/);
  assert.match(problems[1]!, /变异 2（原文不存在）的原文在 .* 里出现 0 次/);
  assert.deepEqual(await checkMutations({ ...chapter, mutations: [] }, dir), [
    "chapter.json 没有列出 mutations：课文说出的每条规则都要有一条让聚焦测试变红的变异",
  ]);
});

test("编译失败用例会抓住照样编译通过的替换和报错不对的替换", { timeout: 120_000 }, async () => {
  const chapter = chapters.find((candidate) => candidate.id === "01")!;
  const dir = await materialise(ctx(), history.chapters["01"]!.target, "compile-fails");
  const file = "packages/pi-course/src/trace-events.ts";
  const harmless = { rule: "只改一行注释", file, find: "// ── 在边界上解析 unknown", replace: "// ── 改过的注释", code: "TS2322" };
  const wrongCode = { ...harmless, rule: "报的是别的错", replace: "const broken: number = \"x\";\n// ── 在边界上解析 unknown", code: "TS2304" };
  const right = { ...wrongCode, rule: "报的正是声明的错", code: "TS2322" };
  const problems = await checkCompileFails({ ...chapter, compileFails: [harmless, wrongCode, right] }, dir);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0]!, /编译失败用例 1（只改一行注释）之后 tsc 仍然编译通过，应当报 TS2322/);
  assert.match(problems[1]!, /编译失败用例 2（报的是别的错）之后 tsc 没有在 .*trace-events\.ts 报 TS2304：TS2322/);
});

test("承诺 9 会失败：实践没有区域、占位代码没有对应的区域、后面实践的占位挡住前面的实践", { timeout: 240_000 }, async () => {
  const chapter07 = chapters.find((candidate) => candidate.id === "07")!;
  const extraLab = { ...chapter07.labs[0]!, id: "7.9" };
  assert.deepEqual(await checkRegions(ctx(), { ...chapter07, labs: [...chapter07.labs, extraLab] }), [
    "实践 7.9 在目标的教学文件里没有区域：练习目录里它无事可做",
  ]);
  const chapter04 = chapters.find((candidate) => candidate.id === "04")!;
  const stray = { file: chapter04.teachingFiles[0]!, lab: chapter04.labs[0]!.id, match: "x", code: ["x"] };
  assert.deepEqual(await checkRegions(ctx(), { ...chapter04, placeholders: [stray] }), [
    "声明了 placeholders，目标的教学文件里却没有本章的实践区域",
  ]);
  // 没有 7.3 / 7.4 的临时占位，planTurn 与 stopBeforeCall 一上来就抛错：填回 7.1 之后它的测试也过不了。
  const problems = await checkRegions(ctx(), { ...chapter07, placeholders: [] }, "regions-07-without-placeholders");
  assert.ok(problems.some((problem) => problem.startsWith("填回实践 7.1 之后")), problems.join("\n"));
});

test("承诺 9 只容许声明过的 tsc 错误：扩展区域换回的起点代码过不了 tsc 时，没有声明成第一次红灯就报告", { timeout: 240_000 }, async () => {
  // 第 11 章的扩展区域换回第 10 章的 entryToMessages：它的 never 挡住两种新条目（TS2322），chapter.json 把它声明为第一次红灯。
  const chapter11 = chapters.find((candidate) => candidate.id === "11")!;
  assert.equal(chapter11.firstRed.kind, "tsc");
  const undeclared = { kind: "test" as const, summary: "build 干净", failures: [{ test: "x", includes: "x" }] };
  const asTest = await checkRegions(ctx(), { ...chapter11, firstRed: undeclared }, "regions-11-undeclared");
  assert.equal(asTest.length, 1, asTest.join("\n"));
  assert.match(asTest[0]!, /^切出的脚手架编译失败：.*TS2322/);
  const other = { kind: "tsc" as const, summary: "别的错", errors: [{ code: "TS2322", file: "packages/pi-course/src/session-tree.ts", includes: "别的措辞" }] };
  const wrong = await checkRegions(ctx(), { ...chapter11, firstRed: other }, "regions-11-other");
  assert.match(wrong[0] ?? "", /^切出的脚手架编译失败：.*TS2322/);
});

test("练习目录里出现提示原文会被发现", () => {
  const chapter = chapters.find((candidate) => candidate.id === "05")!;
  const dir = path.join(work.dir, "hint-leak");
  mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  writeFileSync(path.join(dir, "notes.md"), `抄来的：${chapter.labs[1]!.hints.pseudocode}\n`);
  writeFileSync(path.join(dir, "node_modules", "ignored.md"), chapter.labs[0]!.hints.code);
  assert.deepEqual(findHintText(chapter, dir), [`练习目录的 notes.md 含有实践 ${chapter.labs[1]!.id} 的提示（伪代码）原文`]);
});

test("练习目录里出现留出文件会被发现：在自检放它的位置，或者换了名字藏在别处", () => {
  const lessonDir = path.join(work.dir, "heldout-lesson");
  mkdirSync(path.join(lessonDir, "heldout"), { recursive: true });
  writeFileSync(path.join(lessonDir, "heldout", "99-heldout.test.ts"), "// 留出测试\n");
  writeFileSync(path.join(lessonDir, "heldout", "tasks.ts"), "export const TASKS = [];\n");
  const heldOut = { files: ["heldout/99-heldout.test.ts", "heldout/tasks.ts"], into: "packages/pi-course/test/heldout", count: 1 };
  const capstone = { ...chapters[0]!, id: "99", dir: lessonDir, heldOut };

  const dir = path.join(work.dir, "heldout-leak");
  mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  writeFileSync(path.join(dir, "node_modules", "tasks.ts"), "export const TASKS = [];\n");
  assert.deepEqual(findHeldOut([...chapters, capstone], dir), [], "干净的练习目录（node_modules 不算）");

  mkdirSync(path.join(dir, "packages/pi-course/test/heldout"), { recursive: true });
  writeFileSync(path.join(dir, "packages/pi-course/test/heldout/99-heldout.test.ts"), "// 留出测试\n");
  writeFileSync(path.join(dir, "notes.ts"), "export const TASKS = [];\n");
  assert.deepEqual(findHeldOut([...chapters, capstone], dir), [
    "练习目录里有 packages/pi-course/test/heldout/99-heldout.test.ts：第 99 章的留出文件 heldout/99-heldout.test.ts不该进练习目录",
    "练习目录的 notes.ts 就是第 99 章的留出文件 heldout/tasks.ts",
  ]);
});

test("每一章的自检恰好落在一个分片文件里，分片文件一个不少、一个不多", () => {
  assert.deepEqual(
    shardFilesOnDisk(),
    Array.from({ length: SHARD_COUNT }, (_, index) => index + 1),
    `test/_selfcheck/ 里应当正好有 ${Array.from({ length: SHARD_COUNT }, (_, index) => shardFile(index + 1)).join("、")}`,
  );
  const assigned = assignShards(chapters);
  assert.deepEqual([...assigned.keys()].sort(), chapters.map((chapter) => chapter.id).sort());
  for (const [id, shard] of assigned) assert.ok(shard >= 1 && shard <= SHARD_COUNT, `第 ${id} 章分到了不存在的分片 ${shard}`);
  // 分得大致一样重：最重的分片不超过平均负担加上最重的一章
  const loads = Array.from({ length: SHARD_COUNT }, () => 0);
  for (const chapter of chapters) loads[assigned.get(chapter.id)! - 1]! += estimatedCost(chapter);
  const average = loads.reduce((sum, load) => sum + load, 0) / SHARD_COUNT;
  const heaviestChapter = Math.max(...chapters.map(estimatedCost));
  assert.ok(Math.max(...loads) <= average + heaviestChapter, `分片的负担不均：${loads.join("、")}`);
});

// 章节的承诺原先在这个文件里，现在在 test/_selfcheck/ 的分片里。照旧用章节名筛这个文件，会一项承诺都不选中、
// 悄悄“全部通过”；这时为被选中的章节登记一项红灯，说清该运行哪条命令。npm test 不带名称过滤，不受影响。
const namePatterns = process.execArgv.flatMap((arg, index, all) =>
  arg.startsWith("--test-name-pattern=") ? [arg.slice("--test-name-pattern=".length)] : arg === "--test-name-pattern" ? [all[index + 1] ?? ""] : [],
);
for (const chapter of chapters) {
  const labels = Object.values(PROMISES).map((promise) => `第 ${chapter.id} 章 · 承诺 ${promise}`);
  const selected = labels.find((label) => namePatterns.some((pattern) => safeRegExp(pattern)?.test(label)));
  if (selected === undefined) continue;
  test(selected, () => {
    assert.fail(
      `第 ${chapter.id} 章的承诺不在 test/selfcheck.test.ts 里，而在 test/_selfcheck/ 的分片里：\n` +
        `  node --import tsx --test --test-name-pattern="第 ${chapter.id} 章" test/_selfcheck/*.test.ts`,
    );
  });
}

function safeRegExp(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern);
  } catch {
    return undefined;
  }
}
