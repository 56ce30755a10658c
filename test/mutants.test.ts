import assert from "node:assert/strict";
import { cpSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { findCatchers, writeCatchers } from "../scripts/engine/caught-by.ts";
import { loadChapters } from "../scripts/engine/chapters.ts";
import { ensureHistory } from "../scripts/engine/history.ts";
import { addedLinesOf, generateMutants, isEquivalent, uniqueReplacement } from "../scripts/engine/mutants.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { judgeMutant, materialise, prepareMutantDir } from "../scripts/engine/selfcheck.ts";
import { KIT, runScript, tempDir } from "./helpers.ts";

const work = tempDir("mutants");
after(() => work.remove());

const SOURCE = [
  "export function clamp(value: number, max: number): number {",
  "  // #region lab 1.1",
  "  if (value > max) return max;",
  "  if (!Number.isFinite(value)) log(value);",
  "  return value === 0 ? 0 : value;",
  "  // #endregion",
  "}",
  "",
  "export function outside(a: number, b: number): boolean {",
  "  return a > b;",
  "}",
].join("\n");

test("生成的变异只落在本章实践的区域里：运算符互换、边界 +1、条件取反（已经是 !… 的条件只去掉 !）、删掉一条调用", () => {
  const mutants = generateMutants(SOURCE, "src/clamp.ts", new Set(["1.1"]));
  assert.deepEqual(
    mutants.map((mutant) => [mutant.line, mutant.operator]),
    [
      [3, "条件取反"],
      [3, ">→>="],
      [4, "去掉 !"],
      [4, "删掉语句"],
      [5, "===→!=="],
      [5, "边界 +1"],
      [5, "边界 +1"],
    ],
  );
  assert.ok(mutants.every((mutant) => mutant.line < 6), "区域外的 outside() 不生成变异");
  assert.deepEqual(generateMutants(SOURCE, "src/clamp.ts", new Set(["2.1"])), [], "别的实践的区域不算本章的教学代码");
  for (const mutant of mutants) {
    assert.equal(SOURCE.split(mutant.find).length - 1, 1, `find 恰好出现一次：${mutant.find}`);
    assert.notEqual(mutant.replace, mutant.find);
  }
  const removed = mutants.find((mutant) => mutant.operator === "删掉语句");
  assert.equal(removed?.replace, "  if (!Number.isFinite(value)) ;", "删掉的调用换成空语句，if 仍然合法");
});

test("没有本章区域的文件：变异落在本章补丁新加的行上；find 不唯一时往前后多带一行", () => {
  const patch = [
    "diff --git a/src/clamp.ts b/src/clamp.ts",
    "--- a/src/clamp.ts",
    "+++ b/src/clamp.ts",
    "@@ -8,3 +8,4 @@",
    " ",
    " export function outside(a: number, b: number): boolean {",
    "+  return a > b;",
    " }",
  ].join("\n");
  const added = addedLinesOf(patch, "src/clamp.ts");
  assert.deepEqual([...added], [10]);
  assert.deepEqual(
    generateMutants(SOURCE.replace(/ *\/\/ #(end)?region.*\n/g, ""), "src/clamp.ts", new Set(["1.1"]), new Set([8])).map((mutant) => mutant.operator),
    [">→>="],
  );
  const twice = "a();\nx = 1;\nb();\nx = 1;\n";
  const start = twice.lastIndexOf("1");
  const { find, replace } = uniqueReplacement(twice, start, start + 1, "2");
  assert.equal(find, "b();\nx = 1;\n");
  assert.equal(replace, "b();\nx = 2;\n");
  assert.ok(isEquivalent({ file: "f.ts", find, replace }, [{ file: "f.ts", find, replace, reason: "x 没人读" }]));
  assert.equal(isEquivalent({ file: "g.ts", find, replace }, [{ file: "f.ts", find, replace, reason: "x 没人读" }]), undefined);
});

test("course mutants 02 在真实的目标上跑一遍：报告得分，逐个列出活下来的变异，可以抄进 equivalentMutants", { timeout: 120_000 }, async () => {
  const run = await runScript("course", ["mutants", "02", "--json"]);
  assert.equal(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout) as { chapter: string; killed: number; survived: number; score: number; outcomes: Array<{ fate: string; mutant: { file: string } }> };
  assert.equal(report.chapter, "02");
  assert.ok(report.outcomes.length > 10, `第 02 章的 event-stream.ts 应当生成不少变异，实际 ${report.outcomes.length}`);
  assert.ok(report.killed > 0 && report.score > 0.5, JSON.stringify({ killed: report.killed, score: report.score }));
  assert.ok(report.outcomes.every((outcome) => outcome.mutant.file === "packages/pi-course/src/event-stream.ts"));
  const text = await runScript("course", ["mutants", "02"]);
  assert.match(text.stdout, /^第 02 章 · .*变异得分 \d+\.\d%/m);
  const usage = await runScript("course", ["mutants"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /用法：npm run course -- mutants <章节>/);
});

test("caughtBy：course caught-by 找出抓住每条声明变异的测试并写进 chapter.json（字段紧跟 rule、其余原样）；点名的测试抓不住时照常跑整个文件", { timeout: 120_000 }, async () => {
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = chapters.find((candidate) => candidate.id === "02")!;
  const ctx = { kitRoot: KIT, chapters, history: await ensureHistory(KIT, chapters), workRoot: work.dir };
  const catchers = await findCatchers(ctx, chapter);
  assert.equal(catchers.length, chapter.mutations.length);
  const focused = readFileSync(path.join(KIT, chapter.focusedTest.path), "utf8");
  for (const catcher of catchers) {
    assert.equal(catcher.problem, undefined, catcher.rule);
    assert.ok(catcher.by !== undefined && focused.includes(JSON.stringify(catcher.by)), `抓住「${catcher.rule}」的应当是聚焦测试里的一项：${catcher.by}`);
  }

  // 写进一份复制的 chapter.json：caughtBy 紧跟 rule，别的字段与顺序不变
  const copy = path.join(work.dir, "chapter-02");
  cpSync(chapter.dir, copy, { recursive: true });
  writeCatchers({ ...chapter, dir: copy }, catchers.map((catcher, index) => (index === 0 ? { ...catcher, by: undefined } : catcher)));
  const written = JSON.parse(readFileSync(path.join(copy, "chapter.json"), "utf8")) as { mutations: Array<Record<string, unknown>> };
  assert.ok(!("caughtBy" in written.mutations[0]!), "没找到的那条去掉旧的 caughtBy");
  assert.deepEqual(Object.keys(written.mutations[1]!).slice(0, 2), ["rule", "caughtBy"]);
  assert.equal(written.mutations[1]!.caughtBy, catchers[1]!.by);

  // 点名一项抓不住它的测试（这条变异之后照样通过的那项）：结论照旧是被抓住，抓住它的还是原来那项
  const dir = await materialise(ctx, ctx.history.chapters["02"]!.target, "judge-02");
  assert.deepEqual(await prepareMutantDir(dir), []);
  const [first] = chapter.mutations;
  const innocent = "end() 在没有终态事件时收尾：放行等待的迭代并完成 result()";
  assert.notEqual(catchers[0]!.by, innocent);
  const verdict = await judgeMutant(chapter, dir, { ...first!, caughtBy: innocent }, "变异 1");
  assert.deepEqual(verdict, { kind: "killed", by: catchers[0]!.by });
});
