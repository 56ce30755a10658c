import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { practiceStart, readCommittedFile, type CourseHistory } from "./history.js";
import type { ContinueOrigin } from "./continue.js";
import { recordVerified, updateProgress, type LoadedProgress } from "./progress.js";
import { firstDeviation, type Deviation, type TestFileChange } from "./deviation.js";
import { labResults, patternsToIsolate, settledFailure, type EarlierResult, type LabResult } from "./labs.js";
import { buildProject, compiledTestPath, failureLocation, isFileFailure, runTests, type BuildResult, type RunOptions, type TestOutcome, type TestReport } from "./runner.js";

/**
 * 检查一个练习目录：编译、运行测试、按实践归类、找出第一处偏差。
 * verify 用 scope "all"（本章 + 更早章节 + 测试文件是否被改动），
 * watch 与 hint 用 scope "focused"（只跑本章，越快越好）。
 */
export interface PracticeCheck {
  chapter: Chapter;
  dir: string;
  build: BuildResult;
  buildMs: number;
  testMs: number;
  focused: TestOutcome[];
  labs: LabResult[];
  earlier: EarlierResult[];
  missing: TestFileChange[];
  modified: TestFileChange[];
  deviation?: Deviation;
  /** 编译干净、每个实践计数准确、更早章节全绿、测试文件原样：可以点亮。 */
  passed: boolean;
  /** 先行的结论（见 CheckOptions.onSettled）：第一处偏差已定，其余测试还在运行。 */
  pending?: boolean;
}

/** 运行单个测试文件的选项：runner.runTests 的一部分（watch 的预热进程也接受同样的选项）。 */
export type RunFileOptions = Pick<RunOptions, "pattern" | "signal" | "onOutcome">;

export interface CheckOptions {
  dir: string;
  chapter: Chapter;
  chapters: readonly Chapter[];
  scope: "focused" | "all";
  /** scope 为 all 时用来核对测试文件是否与课程版本一致。 */
  integrity?: { kitRoot: string; history: CourseHistory };
  signal?: AbortSignal;
  /** 换一种方式运行单个测试文件（watch 用预热的进程）；默认是 runner.runTests。 */
  runFile?: (file: string, options: RunFileOptions) => Promise<TestReport>;
  /**
   * 只跑聚焦测试时：测试还没跑完、第一处偏差就已经确定（见 labs.settledFailure），先把这个结论交出来
   * （pending 为真）。最终结果照常由返回值给出。需要 runFile 逐项报告结果（RunFileOptions.onOutcome）。
   */
  onSettled?: (check: PracticeCheck) => void;
  /** 已经编译好的结果（watch 一直开着的编译器给出的那一轮）：给了就不再冷启动 tsc。 */
  compiled?: { build: BuildResult; ms: number };
}

export async function checkPractice(options: CheckOptions): Promise<PracticeCheck> {
  const { dir, chapter, scope, signal } = options;
  const earlierChapters = scope === "all" ? options.chapters.filter((other) => other.id < chapter.id) : [];
  const signalOption = signal ? { signal } : {};

  // 测试文件是否原样只读 git，与编译、测试互不相干：先开始，最后再等
  const changes =
    scope === "all" && options.integrity
      ? testFileChanges(options.integrity.kitRoot, options.integrity.history, chapter, options.chapters, dir)
      : Promise.resolve({ missing: [], modified: [] });
  changes.catch(() => {}); // 出错时在下面 await 处抛出；这里只防止“未处理的拒绝”提前结束进程

  const buildStarted = performance.now();
  const build = options.compiled?.build ?? (await buildProject(dir, signalOption));
  const buildMs = options.compiled?.ms ?? performance.now() - buildStarted;

  const focusedFile = compiledTestPath(dir, chapter.focusedTest.path);
  const earlierFiles = new Map(earlierChapters.map((other) => [compiledTestPath(dir, other.focusedTest.path), other]));
  const files = [focusedFile, ...earlierFiles.keys()].filter((file) => existsSync(file));
  const testStarted = performance.now();
  const runFile = options.runFile ?? ((file: string, more: RunFileOptions) => runTests([file], more));
  const report =
    files.length === 0
      ? { tests: [], passed: 0, failed: 0 }
      : files.length === 1 && files[0] !== undefined
        ? await runFile(files[0], { ...signalOption, ...settleEarly(options, build, buildMs, focusedFile) })
        : await runTests(files, signalOption);
  const focused = report.tests.filter((test) => test.file === focusedFile);
  // 有失败时，按实践的 pattern 单独再跑一次：一个挂住的测试不该连累别的实践
  const isolated = new Map<string, TestOutcome[]>();
  if (existsSync(focusedFile) && !focused.some(isFileFailure)) {
    const patterns = patternsToIsolate(chapter, focused);
    const reports = await Promise.all(patterns.map((pattern) => runFile(focusedFile, { pattern, ...signalOption })));
    patterns.forEach((pattern, index) => isolated.set(pattern, reports[index]?.tests ?? []));
  }
  const testMs = performance.now() - testStarted;
  const labs = labResults(chapter, focused, isolated);
  const earlier = [...earlierFiles].map(([file, other]): EarlierResult => {
    const tests = report.tests.filter((test) => test.file === file);
    const passed = tests.filter((test) => test.ok).length;
    return { chapter: other, tests, passed, ok: passed === tests.length && tests.length === other.focusedTest.count };
  });

  const { missing, modified } = await changes;
  const found = firstDeviation({ chapter, build, focused, labs, earlier, missing, modified });
  // 抛出的错误只有一句信息不够：补上它在 packages/pi-course 里的第一帧位置
  const location = found?.kind === "test" ? failureLocation(found.test, dir) : undefined;
  const deviation = found?.kind === "test" && location ? { ...found, location } : found;
  const passed =
    deviation === undefined &&
    build.ok &&
    focused.length === chapter.focusedTest.count &&
    labs.every((lab) => lab.ok) &&
    earlier.every((result) => result.ok);
  return { chapter, dir, build, buildMs, testMs, focused, labs, earlier, missing, modified, ...(deviation ? { deviation } : {}), passed };
}

/** 逐项收下聚焦测试的结果；第一处偏差一确定，就交给 onSettled（只交一次）。 */
function settleEarly(options: CheckOptions, build: BuildResult, buildMs: number, focusedFile: string): Pick<RunFileOptions, "onOutcome"> {
  const { onSettled, chapter, dir } = options;
  if (!onSettled || !build.ok || options.scope !== "focused") return {};
  const arrived: TestOutcome[] = [];
  let settled = false;
  return {
    onOutcome(outcome) {
      if (settled || outcome.file !== focusedFile) return;
      arrived.push(outcome);
      if (outcome.ok || isFileFailure(outcome)) return;
      const lab = settledFailure(chapter, arrived);
      if (!lab?.firstFailure) return;
      settled = true;
      const location = failureLocation(lab.firstFailure, dir);
      const deviation: Deviation = { kind: "test", test: lab.firstFailure, chapter, lab: lab.lab, ...(location ? { location } : {}) };
      const labs = labResults(chapter, arrived);
      onSettled({ chapter, dir, build, buildMs, testMs: 0, focused: [...arrived], labs, earlier: [], missing: [], modified: [], deviation, passed: false, pending: true });
    },
  };
}

/**
 * 测试是本章的规格：练习目录里本章与更早章节的测试文件必须与创建时放进去的版本一致
 * （本章的聚焦测试取自目标，其余取自起点）。换行符差异不算改动。
 */
export async function testFileChanges(
  kitRoot: string,
  history: CourseHistory,
  chapter: Chapter,
  chapters: readonly Chapter[],
  dir: string,
): Promise<{ missing: TestFileChange[]; modified: TestFileChange[] }> {
  const start = practiceStart(chapter, history);
  const target = history.chapters[chapter.id]?.target ?? start;
  const missing: TestFileChange[] = [];
  const modified: TestFileChange[] = [];
  const wanted = chapters
    .filter((candidate) => candidate.id <= chapter.id)
    .map((other) => ({ file: other.focusedTest.path, commit: other.id === chapter.id ? target : start }));
  // 各章的文件彼此独立：一起读，结果仍按章节顺序
  const expected = await Promise.all(wanted.map(({ file, commit }) => readCommittedFile(kitRoot, commit, file).catch(() => undefined)));
  wanted.forEach(({ file, commit }, index) => {
    const text = expected[index];
    if (text === undefined) return; // 那个提交里没有这个文件：不是练习目录该有的
    const actualPath = path.join(dir, file);
    if (!existsSync(actualPath)) missing.push({ file, commit });
    else if (normalise(readFileSync(actualPath, "utf8")) !== normalise(text)) modified.push({ file, commit });
  });
  const config = await buildConfigChange(kitRoot, [start, target], dir);
  if (config) (config.missing ? missing : modified).push(config.change);
  return { missing, modified };
}

/** 决定编译什么、编译到哪里的文件：测试文件再干净，改了它就能让 dist/test 里跑的是另一份测试。 */
const BUILD_CONFIG = "packages/pi-course/tsconfig.json";

/**
 * verify 跑的是 tsc 按 packages/pi-course/tsconfig.json 编译出的 dist/test：
 * 把 rootDir / include 指向一份削弱过的测试，源码里的测试文件原样不动也能“通过”。
 * 所以这份配置也必须与课程版本（起点或目标）一致。
 */
async function buildConfigChange(
  kitRoot: string,
  commits: readonly string[],
  dir: string,
): Promise<{ missing: boolean; change: TestFileChange } | undefined> {
  const actualPath = path.join(dir, BUILD_CONFIG);
  const versions: string[] = [];
  for (const commit of commits) {
    try {
      versions.push(normalise(await readCommittedFile(kitRoot, commit, BUILD_CONFIG)));
    } catch {
      // 这个提交里没有它
    }
  }
  const [commit] = commits;
  if (versions.length === 0 || commit === undefined) return undefined;
  if (!existsSync(actualPath)) return { missing: true, change: { file: BUILD_CONFIG, commit } };
  return versions.includes(normalise(readFileSync(actualPath, "utf8"))) ? undefined : { missing: false, change: { file: BUILD_CONFIG, commit } };
}

function normalise(text: string): string {
  return text.replace(/\r\n/g, "\n");
}

/**
 * verify 记下什么：只有这一次亲眼看到全部通过才点亮，记下目标、时间、目录，以及代码是谁的——
 * 接续目录（practice --continue）是学习者自己的代码，按 --use-course 换成课程版本的文件照实记下。
 * 没通过时什么也不写（返回 undefined）：之前的点亮原样保留，一次失败不抹掉一次亲眼看到的通过。
 */
export function recordCheck(
  file: string,
  run: { chapter: Chapter; check: PracticeCheck; marker: { origin?: ContinueOrigin }; target: string; dir: string; now: Date; fingerprint?: string },
): LoadedProgress | undefined {
  const { chapter, check, marker, target, dir, now, fingerprint } = run;
  if (!check.passed) return undefined;
  return updateProgress(file, (draft) => {
    const origin = marker.origin;
    const basis = origin
      ? { basis: "own" as const, ownSince: origin.ownSince, courseFiles: origin.course.length > 0 ? origin.course : undefined }
      : { basis: "course" as const };
    recordVerified(draft, chapter.id, { target, verifiedAt: now.toISOString(), dir, ...basis, fingerprint });
    draft.practiceDirs[chapter.id] ??= dir;
  });
}
