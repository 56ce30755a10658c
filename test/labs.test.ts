import assert from "node:assert/strict";
import { test } from "node:test";

import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { firstDeviation } from "../scripts/engine/deviation.ts";
import { labResults, patternsToIsolate, settledFailure } from "../scripts/engine/labs.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import type { BuildResult, TestOutcome } from "../scripts/engine/runner.ts";

/** 实践归类与“第一处偏差”的顺序：用第 03 章的真实元数据和手写的测试结果。 */
const chapters = loadChapters(LESSONS_DIR);
const chapter = findChapter(chapters, "03");
const earlierChapter = findChapter(chapters, "02");
const FILE = "/p/packages/pi-course/dist/test/03-message-ir.test.js";

const names = {
  projection: "文本投影有损，但不修改原 content",
  error: "error 终态自行结束流，result() 交出事件里的同一条 AssistantMessage",
  replay: "system message 按出现顺序重放：追加说明、按名替换段落、null 删除",
  text: "systemMessageText 按固定顺序拼接 content 与段落，跳过空串和 null",
};

function outcome(name: string, ok: boolean, extra: Partial<TestOutcome> = {}): TestOutcome {
  return { name, file: FILE, ok, ...(ok ? {} : { message: "失败" }), ...extra };
}

const clean: BuildResult = { ok: true, errors: [], output: "" };
const allPass = Object.values(names).map((name) => outcome(name, true));

test("每个实践按自己的 --test-name-pattern 选出测试，并与声明的计数比较", () => {
  const results = labResults(chapter, allPass);
  assert.deepEqual(
    results.map((result) => [result.lab.id, result.ok, result.runs.map((run) => `${run.passed}/${run.tests.length}`)]),
    [
      ["3.1", true, ["1/1", "2/2"]],
      ["3.2", true, ["4/4"]],
    ],
  );
  assert.equal(firstDeviation({ chapter, build: clean, focused: allPass, labs: results, earlier: [] }), undefined);
});

test("整份文件里被连累的测试：单独运行 pattern 的结果优先", () => {
  const focused = [outcome(names.projection, true), outcome(names.error, false), outcome(names.replay, false), outcome(names.text, false)];
  assert.deepEqual(patternsToIsolate(chapter, focused), ["system"]);
  const isolated = new Map([["system", [outcome(names.replay, true), outcome(names.text, true)]]]);
  const results = labResults(chapter, focused, isolated);
  assert.equal(results[0]?.ok, true);
  assert.equal(results[1]?.ok, false);
  const deviation = firstDeviation({ chapter, build: clean, focused, labs: results, earlier: [] });
  assert.equal(deviation?.kind, "test");
  assert.equal(deviation?.kind === "test" ? deviation.test.name : "", names.error);
});

test("第一处偏差的顺序：tsc → 测试文件跑不起来 → 本章失败 → 测试文件缺失 → 计数 → 更早章节 → 测试文件被改动", () => {
  const tsc = { file: "packages/pi-course/src/types.ts", line: 3, column: 1, code: "TS2322", message: "坏了" };
  const earlier = [{ chapter: earlierChapter, tests: [{ name: "旧测试", file: "/p/02.js", ok: false, message: "回归" }], passed: 0, ok: false }];
  const modified = [{ file: chapter.focusedTest.path, commit: "c".repeat(40) }];
  const failing = [outcome(names.projection, false), ...allPass.slice(1)];
  const missingOne = allPass.slice(1);
  const load = [outcome(FILE, false, { message: "Error [ERR_MODULE_NOT_FOUND]: Cannot find module" })];
  const deviation = (build: BuildResult, focused: TestOutcome[], withEarlier = true, withModified = true) =>
    firstDeviation({
      chapter,
      build,
      focused,
      labs: labResults(chapter, focused),
      earlier: withEarlier ? earlier : [],
      ...(withModified ? { modified } : {}),
    })?.kind;

  assert.equal(deviation({ ok: false, errors: [tsc], output: "" }, failing), "tsc");
  assert.equal(deviation({ ok: false, errors: [], output: "tsc 崩了" }, failing), "build");
  assert.equal(deviation(clean, load), "load");
  assert.equal(deviation(clean, failing), "test");
  assert.equal(deviation(clean, missingOne), "count");
  assert.equal(deviation(clean, allPass), "test", "更早章节的回归");
  assert.equal(deviation(clean, allPass, false), "modified");
  assert.equal(deviation(clean, allPass, false, false), undefined);
});

test("聚焦测试文件缺失：第一处偏差说文件缺了，而不是“计数不对”", () => {
  const missing = [{ file: chapter.focusedTest.path, commit: "c".repeat(40) }];
  const found = firstDeviation({ chapter, build: clean, focused: [], labs: labResults(chapter, []), earlier: [], missing });
  assert.equal(found?.kind, "missing");
});

test("结果还在逐项报回时：排在前面的实践报齐并通过、这一个已有失败，第一处偏差才算定下（watch 先画这一屏）", () => {
  // 文件里的顺序：投影（3.1）→ error 终态（只属于 3.2）→ 两项 system（3.1）
  const settled = settledFailure(chapter, [outcome(names.projection, false)]);
  assert.equal(settled?.lab.id, "3.1");
  assert.equal(settled?.firstFailure?.name, names.projection);

  // error 终态失败了，但 3.1 的 system 两项还没报回：3.1 也可能失败，那才是第一处偏差
  assert.equal(settledFailure(chapter, [outcome(names.projection, true), outcome(names.error, false)]), undefined);

  const later = settledFailure(chapter, [outcome(names.projection, true), outcome(names.error, false), outcome(names.replay, true), outcome(names.text, true)]);
  assert.equal(later?.lab.id, "3.2");
  assert.equal(later?.firstFailure?.name, names.error);

  assert.equal(settledFailure(chapter, allPass), undefined);
  assert.equal(settledFailure(chapter, []), undefined);
});

