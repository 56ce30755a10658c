import assert from "node:assert/strict";
import { test } from "node:test";

import { addedLinesOf, generateMutants, isEquivalent, uniqueReplacement } from "../scripts/engine/mutants.ts";
import { runScript } from "./helpers.ts";

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
