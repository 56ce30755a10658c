import type { Chapter, Lab } from "./chapters.js";
import type { EarlierResult, LabResult, RunResult } from "./labs.js";
import { isFileFailure, type BuildResult, type SourceLocation, type TestOutcome, type TscError } from "./runner.js";

/** 一次检查里最先该看的那一处偏差；后面的失败常常是它的连锁反应。 */
export type Deviation =
  | { kind: "tsc"; error: TscError; count: number }
  | { kind: "build"; output: string }
  | { kind: "load"; test: TestOutcome; chapter: Chapter }
  | { kind: "test"; test: TestOutcome; chapter: Chapter; lab?: Lab; location?: SourceLocation }
  | { kind: "count"; lab: Lab; result: RunResult }
  | { kind: "missing"; files: TestFileChange[] }
  | { kind: "modified"; files: TestFileChange[] };

/** 一份缺失或被改动的测试文件，以及它应有的版本所在的提交。 */
export interface TestFileChange {
  file: string;
  commit: string;
}

export interface DeviationInput {
  chapter: Chapter;
  build: BuildResult;
  focused: readonly TestOutcome[];
  labs: readonly LabResult[];
  earlier: readonly EarlierResult[];
  /** 练习目录里缺少的测试文件（相对项目根）。 */
  missing?: readonly TestFileChange[];
  /** 与课程版本不同的测试文件。 */
  modified?: readonly TestFileChange[];
}

/**
 * 按学习者该处理的顺序找第一处偏差：编译错误 → 测试文件跑不起来 →
 * 本章按实践顺序的第一条失败 → 测试文件缺失 → 计数不对 → 更早章节的回归 → 测试文件被改动。
 * 缺失排在计数之前：聚焦测试文件不在时每个实践都选中 0 项，真正的原因是文件没了。
 */
export function firstDeviation(input: DeviationInput): Deviation | undefined {
  const { chapter, build } = input;
  const [firstError] = build.errors;
  if (firstError) return { kind: "tsc", error: firstError, count: build.errors.length };
  if (!build.ok) return { kind: "build", output: build.output };
  const loadFailure = input.focused.find(isFileFailure);
  if (loadFailure) return { kind: "load", test: loadFailure, chapter };
  for (const result of input.labs) {
    if (result.firstFailure) return { kind: "test", test: result.firstFailure, chapter, lab: result.lab };
  }
  const unlabelled = input.focused.find((test) => !test.ok);
  if (unlabelled) return { kind: "test", test: unlabelled, chapter };
  if (input.missing && input.missing.length > 0) return { kind: "missing", files: [...input.missing] };
  for (const result of input.labs) {
    const wrong = result.runs.find((run) => !run.ok);
    if (wrong) return { kind: "count", lab: result.lab, result: wrong };
  }
  for (const earlier of input.earlier) {
    const failure = earlier.tests.find((test) => !test.ok);
    if (failure) return isFileFailure(failure) ? { kind: "load", test: failure, chapter: earlier.chapter } : { kind: "test", test: failure, chapter: earlier.chapter };
  }
  if (input.modified && input.modified.length > 0) return { kind: "modified", files: [...input.modified] };
  return undefined;
}
