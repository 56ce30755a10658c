import type { Chapter, Lab, TestRun } from "./chapters.js";
import { isFileFailure, type TestOutcome } from "./runner.js";

/**
 * 把一次测试运行的结果按实践归类：每个实践的每条运行命令用自己的
 * --test-name-pattern 选出测试（与 node --test 的选择相同），再与声明的计数比较。
 */
export interface RunResult {
  run: TestRun;
  /** 被这条命令选中的测试。 */
  tests: TestOutcome[];
  passed: number;
  ok: boolean;
}

export interface LabResult {
  lab: Lab;
  runs: RunResult[];
  ok: boolean;
  /** 这个实践选中的测试里第一条失败的（按测试文件里的顺序）。 */
  firstFailure?: TestOutcome;
}

export function selectTests(tests: readonly TestOutcome[], run: Pick<TestRun, "pattern">): TestOutcome[] {
  const named = tests.filter((test) => !isFileFailure(test));
  if (run.pattern === undefined) return named;
  const pattern = new RegExp(run.pattern);
  return named.filter((test) => pattern.test(test.name));
}

/**
 * 按实践归类。整份文件一起跑时，一个挂住的测试会让同文件的其他测试被取消；
 * 所以 isolated 里可以放某个 pattern 单独运行（与 node --test --test-name-pattern 相同）的结果，
 * 有它就用它，没有就从整份文件的结果里按名称挑选。
 */
export function labResults(
  chapter: Chapter,
  focused: readonly TestOutcome[],
  isolated: ReadonlyMap<string, readonly TestOutcome[]> = new Map(),
): LabResult[] {
  return chapter.labs.map((lab) => {
    const runs = lab.runs.map((run): RunResult => {
      const alone = run.pattern === undefined ? undefined : isolated.get(run.pattern);
      const tests = alone ? selectTests(alone, {}) : selectTests(focused, run);
      const passed = tests.filter((test) => test.ok).length;
      return { run, tests, passed, ok: tests.length === run.expect.total && passed === run.expect.pass };
    });
    const failures = runs.flatMap((run) => run.tests.filter((test) => !test.ok));
    const firstFailure = failures[0];
    return { lab, runs, ok: runs.every((run) => run.ok), ...(firstFailure ? { firstFailure } : {}) };
  });
}

/** 哪些 pattern 需要单独再跑一次：整份文件的结果里，它选中的测试没有全部按声明通过。 */
export function patternsToIsolate(chapter: Chapter, focused: readonly TestOutcome[]): string[] {
  const patterns = new Set<string>();
  for (const lab of chapter.labs) {
    for (const run of lab.runs) {
      if (run.pattern === undefined) continue;
      const tests = selectTests(focused, run);
      const passed = tests.filter((test) => test.ok).length;
      if (tests.length !== run.expect.total || passed !== run.expect.pass) patterns.add(run.pattern);
    }
  }
  return [...patterns];
}

/**
 * 测试还在一项项报回来时，能不能先定下结论：有一个实践里已经有测试失败，排在它前面的实践都已报齐并全部通过。
 * 聚焦测试按文件顺序逐项运行、各实践的测试在文件里依次排列，之后的结果改变不了“第一处偏差在这里”；
 * watch 据此不等整个文件跑完就先画出这一屏。定不下来时是 undefined。
 */
export function settledFailure(chapter: Chapter, partial: readonly TestOutcome[]): LabResult | undefined {
  for (const result of labResults(chapter, partial)) {
    if (result.firstFailure) return result;
    if (!result.ok) return undefined; // 这个实践还没报齐
  }
  return undefined;
}

/** 第一个还没通过的实践：watch 的“当前实践”、hint 的默认实践。 */
export function currentLab(results: readonly LabResult[]): LabResult | undefined {
  return results.find((result) => !result.ok);
}

/** 更早章节的测试结果（回归检查）。 */
export interface EarlierResult {
  chapter: Chapter;
  tests: TestOutcome[];
  passed: number;
  ok: boolean;
}
