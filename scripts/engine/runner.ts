import { spawn, type ChildProcessByStdio } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { SourceMap } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import { tscCommand } from "../kit-cache.mjs";
import { COURSE_PACKAGE, isInside } from "./paths.js";
import { mapInPool } from "./pool.js";
import { RECORD_PREFIX } from "./test-records.mjs";
import { escapeRegExp } from "./regexp.js";

export interface TscError {
  file: string;
  line: number;
  column: number;
  code: string;
  message: string;
}

export interface BuildResult {
  ok: boolean;
  errors: TscError[];
  /** tsc 的原始输出，只在出现无法解析的失败时有用。 */
  output: string;
}

export interface TestOutcome {
  name: string;
  file: string;
  ok: boolean;
  /** 断言或抛出的错误信息；通过的测试没有。 */
  message?: string;
  actual?: unknown;
  expected?: unknown;
  /** 失败时错误的堆栈（原文），用来找出错的位置，见 failureLocation。 */
  stack?: string;
  /** node:test 报告的这项测试自己的用时（毫秒）；直接运行时才有（bench 用它说明时间花在哪里）。 */
  ms?: number;
}

export interface TestReport {
  /** 被选中并真正运行的测试（名称过滤跳过的不算）。 */
  tests: TestOutcome[];
  passed: number;
  failed: number;
  /** 第一次运行的节奏：每条结果离上一条（第一条离启动）隔了多久。自检的变异拿它定期限（见 RunOptions.pace）。 */
  pace?: RunPace;
}

/** 一次运行里结果到达的节奏，按到达的顺序。 */
export interface RunPace {
  records: Array<{ name: string; gapMs: number }>;
}

const TSC_LINE = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/;

export interface BuildOptions {
  /** 另用一个 tsc 入口（bench 拿 TypeScript 5.9 做对照）；默认是项目自己的 typescript。 */
  tsc?: string;
  /** 中止时结束 tsc 子进程（watch 退出时用）。 */
  signal?: AbortSignal;
  /**
   * 增量编译：tsc 把上一次的程序状态记在这个 .tsbuildinfo 文件里（放在 dist/ 之外），这次只重新检查、
   * 重新写出内容变了的文件及受它影响的文件；dist/ 不删。输出与全量编译相同，所以只给这样的调用方用：
   * 在同一个目录里反复“改一处、编译、测”，并且从不删除源文件（删掉的源文件，它的旧输出会留在 dist/ 里）。
   * 第一次（还没有这个文件时）照常先删 dist/ 再全量编译。自检切出脚手架的一项用它。
   */
  incremental?: string;
  /**
   * 单线程检查（TypeScript 7 的 --singleThreaded）：CPU 少用约三成，空闲的机器上慢一点。
   * 自检用它：npm test 里几个测试文件同时在编译、在跑，CPU 早就占满了，省下的 CPU 就是省下的时间。
   */
  singleThreaded?: boolean;
}

/**
 * 在课程项目（套件、worktree 或练习目录）里编译 @pi/course，返回结构化的错误。
 * 先删掉 dist/：它只是编译产物，留着的话，这次没能编译出来的文件会由上一次的旧输出顶替，
 * 测试就会在旧代码上“通过”。删掉以后，测试只会运行这一次编译真正写出的东西。
 */
export async function buildProject(projectDir: string, options: BuildOptions = {}): Promise<BuildResult> {
  const tsc = options.tsc ? { file: process.execPath, args: [options.tsc] } : await tscCommand(projectDir);
  const args = [...tsc.args, "-p", COURSE_PACKAGE, "--pretty", "false"];
  // 只有原生的 TypeScript 7 认得这个选项（经启动器运行的别的版本不认）
  if (options.singleThreaded && tsc.args.length === 0) args.push("--singleThreaded");
  if (options.incremental !== undefined) args.push("--incremental", "--tsBuildInfoFile", options.incremental);
  if (options.incremental === undefined || !existsSync(options.incremental)) {
    rmSync(path.join(projectDir, COURSE_PACKAGE, "dist"), { recursive: true, force: true });
  }
  return new Promise((resolve, reject) => {
    const child = spawn(tsc.file, args, {
      cwd: projectDir,
      stdio: ["ignore", "pipe", "pipe"],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => {
      const errors = parseTscOutput(output);
      resolve({ ok: code === 0 && errors.length === 0, errors, output });
    });
  });
}

/**
 * 项目的 TypeScript 怎样启动：TypeScript 7 的 npm 包只是一层 node 启动器，
 * 真正的编译器是平台包里的原生可执行文件；直接运行它，既省掉一次 node 启动，
 * 结束时也只有一个进程要收拾。找不到（例如别的 TypeScript 版本）就经 node 运行 bin/tsc。
 * 实现在 kit-cache.mjs 里：套件编译自己的副本时（tsx 之前、只能用 JS）也用它。
 */
export { tscCommand };

export function parseTscOutput(output: string): TscError[] {
  const errors: TscError[] = [];
  for (const line of output.split(/\r?\n/)) {
    const match = TSC_LINE.exec(line);
    if (!match) continue;
    const [, file = "", row = "0", column = "0", code = "", message = ""] = match;
    errors.push({ file: file.split(path.sep).join("/"), line: Number(row), column: Number(column), code, message });
  }
  return errors;
}

/** 编译后的测试文件路径：packages/pi-course/test/03-x.test.ts → …/dist/test/03-x.test.js。 */
export function compiledTestPath(projectDir: string, testSource: string): string {
  const relative = path.relative(COURSE_PACKAGE, testSource).replace(/\.ts$/, ".js");
  return path.join(projectDir, COURSE_PACKAGE, "dist", relative);
}

/** 测试进程的报告器（见 test-reporter.mjs）：每个测试一行带 RECORD_PREFIX 的 JSON 记录。 */
const REPORTER = new URL("./test-reporter.mjs", import.meta.url).href;
/** 冻结 node:assert 的预加载模块（见 test-guard.mjs）；文件 URL 里没有空格，可以直接写进 NODE_OPTIONS。 */
const TEST_GUARD = new URL("./test-guard.mjs", import.meta.url).href;
/** 预热进程的入口（见 warm-child.mjs）：先启动好，从标准输入收到文件名才 import 测试文件。 */
const WARM_ENTRY = fileURLToPath(new URL("./warm-child.mjs", import.meta.url));
/** 每项测试的默认时限。 */
export const TEST_TIMEOUT_MS = 60_000;

/**
 * 运行测试文件：每个文件在自己的 node 进程里直接运行（node 文件，不经 node --test 或 run() 再套一层进程），
 * 报告器把每个测试事件写成一行 JSON，不解析任何给人看的文本。几个文件时见 runFilesApart。
 * 挂住的测试在各版本 Node 上的结果先由 settleHangs 统一，verify、watch、hint 的结论才不随版本变。
 */
export async function runTests(files: readonly string[], options: RunOptions = {}): Promise<TestReport> {
  const [file] = files;
  if (file === undefined || files.length > 1) return runFilesApart(files, options);
  const { outcomes: first, pace } = await runOnce(file, options);
  // 重跑没开始的测试时不再逐项报告：逐项报告只为先行给出第一处偏差，重跑的结果只进最后的报告
  const { onOutcome: _onOutcome, ...again } = options;
  // 提前收场时，要的只是“有没有测试失败”，已经有了答案：不再把没开始的测试补跑一遍
  const tests =
    options.stopAtFirstFailure && first.some((outcome) => !outcome.ok)
      ? classifyHangs(first).map(({ unstarted: _unstarted, failureType: _failureType, ...outcome }) => outcome)
      : await settleHangs(first, async (_files, pattern) => (await runOnce(file, { ...again, pattern })).outcomes);
  const passed = tests.filter((test) => test.ok).length;
  return { tests, passed, failed: tests.length - passed, pace };
}

/**
 * 几个测试文件：各自一个进程，几个同时跑，彼此独立。
 * 不全部同时开：章节测试里有几百毫秒的计时，开太多进程会让它们互相拖到超时（两核机器上同时 3 个）。
 * 先开第一个文件（verify 的聚焦测试），再从后往前（后面的章节测试多、跑得久）；报告仍按 files 的顺序。
 */
export async function runFilesApart(files: readonly string[], options: RunOptions = {}): Promise<TestReport> {
  const order = [...files.slice(0, 1), ...files.slice(1).reverse()];
  const reports = await mapInPool(order, availableParallelism() + 1, (file) => runTests([file], options));
  const tests = files.flatMap((file) => reports[order.indexOf(file)]?.tests ?? []);
  const passed = tests.filter((test) => test.ok).length;
  return { tests, passed, failed: tests.length - passed };
}

export interface RunOptions {
  pattern?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /**
   * 收到第一项失败就结束测试进程组，只交回已经收到的结果（自检的变异测试用：
   * 它只问“还是不是全绿”，第一项失败已经回答了，不必再等其余测试或挂住的进程）。
   * 这时报告不完整，不能拿来数通过了几项。
   */
  stopAtFirstFailure?: boolean;
  /**
   * 与 stopAtFirstFailure 同用：未变异的目标上同一个文件实测的节奏。下一条结果比那次晚到太多
   * （paceLimitMs），就当作这项测试挂住了（记一项失败）并结束进程组：变异让测试等一个永远不来的结果时，
   * 不必等到测试自己的时限（几秒到二十秒）。按名称过滤跳过的测试也有记录，所以按名字就能在节奏里找到下一项。
   */
  pace?: RunPace;
  /**
   * 每项测试一有结果就报告（watch 先行画出第一处偏差用）。挂住的测试已经换成 HUNG_MESSAGE，
   * 因它没开始的测试不报告（它们随后重跑，结果只在最后的报告里）。
   */
  onOutcome?: (outcome: TestOutcome) => void;
  /** 测试进程从哪里来：默认现启动一个（coldTestProcess）；watch 交给它预先启动好的进程（见 watch/warm-tests.ts）。 */
  launch?: TestLauncher;
}

/** 报告器写出的一条记录：多带 node:test 的原始失败类型，只在 settleHangs 里用。 */
export type ReportedOutcome = TestOutcome & { failureType?: string };

/**
 * 一个测试进程的启动规格：参数、环境（含冻结 assert 的预加载）、报告器、时限、名称过滤。
 * 冷启动与预热的进程都由它给出，区别只在入口：冷启动直接运行测试文件；预热的进程运行 warm-child.mjs，
 * 收到文件名才 import 它。所以 verify 与 watch 对同一份代码给出同样的结论。
 */
export interface TestProcessSpec {
  args: string[];
  env: NodeJS.ProcessEnv;
}

export function testProcessSpec(entry: { file: string } | "warm", options: Pick<RunOptions, "pattern" | "timeoutMs">): TestProcessSpec {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // 否则测试进程会以为自己嵌套在另一个测试里
  delete env.PI_COURSE_PROGRESS; // 学习者的代码不该知道、更不该碰进度文件在哪里
  // 不继承套件的 NODE_OPTIONS（例如 tsx 加载器）；只打开源码映射：有 .js.map 时错误堆栈直接指向 .ts 源码。
  env.NODE_OPTIONS = `--enable-source-maps --import=${TEST_GUARD}`;
  // 报告器以它为记录的 file：源码映射之后 node:test 报告的是 .ts 路径。预热的进程收到文件名时自己设上
  delete env.PI_COURSE_TEST_FILE;
  if (entry !== "warm") env.PI_COURSE_TEST_FILE = entry.file;
  const args = [
    `--test-reporter=${REPORTER}`,
    "--test-reporter-destination=stdout",
    `--test-timeout=${options.timeoutMs ?? TEST_TIMEOUT_MS}`,
    ...(options.pattern === undefined ? [] : [`--test-name-pattern=${options.pattern}`]),
    entry === "warm" ? WARM_ENTRY : entry.file,
  ];
  return { args, env };
}

/** 一个按 testProcessSpec 启动的测试进程；begin(file) 让它开始运行这个文件。 */
export interface TestProcess {
  child: ChildProcessByStdio<Writable | null, Readable, Readable>;
  begin(file: string): void;
}

/** 给出运行 file（带这些选项）的测试进程。 */
export type TestLauncher = (file: string, options: { pattern?: string; timeoutMs: number }) => TestProcess;

/** 现启动一个直接运行 file 的测试进程。 */
export const coldTestProcess: TestLauncher = (file, options) => ({ child: spawnTestProcess(testProcessSpec({ file }, options), "ignore"), begin: () => {} });

/** 预先启动一个等文件名的测试进程：begin(file) 时才把文件名写进它的标准输入。 */
export function warmTestProcess(options: { pattern?: string; timeoutMs: number }): TestProcess {
  const child = spawnTestProcess(testProcessSpec("warm", options), "pipe");
  child.stdin.on("error", () => {}); // 进程已经退出时写入会 EPIPE：结果由 close 事件处理
  return { child, begin: (file) => child.stdin.end(`${JSON.stringify({ file })}\n`) };
}

function spawnTestProcess(spec: TestProcessSpec, stdin: "ignore"): ChildProcessByStdio<null, Readable, Readable>;
function spawnTestProcess(spec: TestProcessSpec, stdin: "pipe"): ChildProcessByStdio<Writable, Readable, Readable>;
function spawnTestProcess(spec: TestProcessSpec, stdin: "ignore" | "pipe"): ChildProcessByStdio<Writable | null, Readable, Readable> {
  // 测试进程和它启动的进程自成一个进程组：收场时连组一起结束，一个不留。
  // 它还有自己的临时目录（TMPDIR）：被 SIGKILL 结束的测试（第一个失败就收场、卡住、watch 里又存了一次）
  // 来不及跑 finally 与 after 钩子，它在 os.tmpdir() 下建的目录随这个目录一起删掉，不留在学习者的 /tmp 里。
  const scratch = mkdtempSync(path.join(tmpdir(), "pi-course-run-"));
  const env = { ...spec.env, TMPDIR: scratch, TMP: scratch, TEMP: scratch };
  const child = spawn(process.execPath, spec.args, { env, stdio: [stdin, "pipe", "pipe"], detached: true }) as ChildProcessByStdio<Writable | null, Readable, Readable>;
  child.on("error", () => {}); // 启动失败由 collectOutcomes 报告（预热的进程可能还没人在听）
  liveScratch.set(scratch, child);
  child.once("close", () => removeScratch(scratch));
  return child;
}

/** 还在用的测试进程临时目录与它的进程：本进程退出时（例如预热着没用上的进程）先结束进程组，再删目录。 */
const liveScratch = new Map<string, { pid?: number | undefined }>();
process.once("exit", () => {
  for (const [scratch, child] of liveScratch) {
    killTestProcess(child);
    removeScratch(scratch);
  }
});

function removeScratch(scratch: string): void {
  liveScratch.delete(scratch);
  try {
    rmSync(scratch, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // 删不掉（例如还有进程占着）也不影响结论：它在系统的临时目录里
  }
}

/** 结束测试进程和它的整个进程组。 */
export function killTestProcess(child: { pid?: number | undefined }): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // 组已经不在了
  }
}

interface CollectedRun {
  outcomes: ReportedOutcome[];
  pace: RunPace;
}

/** 变异后的运行里，下一条结果最多等多久：实测的间隔放宽 4 倍再加 1.5 秒（同一台机器、同样忙），不超过 ceiling。 */
export function paceLimitMs(gapMs: number, ceiling: number): number {
  return Math.min(ceiling, 4 * gapMs + 1_500);
}

/**
 * 节奏里下一条会到的记录：从 cursor 起第一条名字被 selected 选中的。Node 20 把没选中的测试也报成
 * skipped（cursor 自己走过它们），Node 22 起根本不报，所以这里按名字跳过。等的时间取从 cursor
 * 到它之间最慢的那条（猜错了只会多等）；走过最后一条时名字没有，等的时间取整个节奏里最慢的。
 */
function nextExpected(pace: RunPace, cursor: number, selected?: RegExp): { name?: string; gapMs: number } {
  const rest = pace.records.slice(cursor);
  const at = rest.findIndex((record) => selected === undefined || selected.test(record.name));
  if (at < 0) return { gapMs: Math.max(0, ...pace.records.map((record) => record.gapMs)) };
  return { name: rest[at]!.name, gapMs: Math.max(...rest.slice(0, at + 1).map((record) => record.gapMs)) };
}

function runOnce(file: string, options: RunOptions): Promise<CollectedRun> {
  const timeoutMs = options.timeoutMs ?? TEST_TIMEOUT_MS;
  const launch = options.launch ?? coldTestProcess;
  const settings = { timeoutMs, ...(options.pattern === undefined ? {} : { pattern: options.pattern }) };
  return collectOutcomes(launch(file, settings), file, { ...options, timeoutMs });
}

/** 运行一个测试进程并收下它的记录：逐项报告、卡住时结束、提前收场、文件没能加载，冷启动与预热的进程都走这里。 */
function collectOutcomes(testProcess: TestProcess, file: string, options: RunOptions & { timeoutMs: number }): Promise<CollectedRun> {
  const { child } = testProcess;
  return new Promise((resolve, reject) => {
    const killGroup = () => killTestProcess(child);
    const { signal } = options;
    signal?.addEventListener("abort", killGroup, { once: true });
    process.once("exit", killGroup);
    // 每项测试都有时限；超过时限还久久没有新的结果，说明测试进程在最后一项之后没有退出
    // （例如学习者的代码留下了一个没关的连接）。这时结束整个组，把已经收到的结果交回去。
    let lastOutput = Date.now();
    let stalled = false;
    const stallMs = options.timeoutMs + STALL_GRACE_MS;
    // 结果到达的节奏：启动时算起，每来一条结果记下隔了多久
    let lastRecord = Date.now();
    const pace: RunPace = { records: [] };
    const expected = options.stopAtFirstFailure ? options.pace : undefined;
    let cursor = 0; // expected 里下一条记录的位置
    const selected = options.pattern === undefined ? undefined : new RegExp(options.pattern);
    let quietLimit: number | undefined;
    let quiet = false;
    let stopped = false;
    const stallCheck = setInterval(() => {
      if (expected !== undefined && !stopped) {
        quietLimit = paceLimitMs(nextExpected(expected, cursor, selected).gapMs, options.timeoutMs);
        if (Date.now() - lastRecord > quietLimit) {
          quiet = true;
          stopped = true;
          killGroup();
          return;
        }
      }
      if (Date.now() - lastOutput <= stallMs) return;
      stalled = true;
      killGroup();
    }, expected === undefined ? 250 : 50);
    let stdout = "";
    let stderr = "";
    const arrived: ReportedOutcome[] = [];
    child.stdout.on("data", (chunk: Buffer) => {
      lastOutput = Date.now();
      const before = stdout.lastIndexOf("\n") + 1;
      stdout += chunk.toString("utf8");
      const all = recordsIn(stdout.slice(before, stdout.lastIndexOf("\n") + 1));
      for (const record of all) {
        pace.records.push({ name: record.name, gapMs: Date.now() - lastRecord });
        lastRecord = Date.now();
        if (expected !== undefined) {
          const at = expected.records.findIndex((candidate, index) => index >= cursor && candidate.name === record.name);
          cursor = at < 0 ? expected.records.length : at + 1;
        }
      }
      const records = all.filter((record) => !record.skipped);
      if (options.onOutcome) for (const record of records) reportAsItArrives(arrived, record, options.onOutcome);
      if (options.stopAtFirstFailure && !stopped && records.some((record) => !record.ok)) {
        stopped = true;
        killGroup();
      }
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    let failedToStart: Error | undefined;
    child.on("error", (error) => (failedToStart ??= error));
    child.on("close", (code) => {
      clearInterval(stallCheck);
      process.off("exit", killGroup);
      signal?.removeEventListener("abort", killGroup);
      if (signal?.aborted) return reject(signal.reason ?? new Error("aborted"));
      if (failedToStart) return reject(failedToStart);
      const records = recordsIn(stdout);
      if (code !== 0 && !stalled && !stopped && !records.some((record) => !record.ok && !record.skipped)) records.push(loadFailure(file, stderr, code));
      // 被名称过滤跳过的测试没有运行，不计入选中数。
      const outcomes: ReportedOutcome[] = records.filter((record) => !record.skipped).map(({ skipped: _skipped, ...outcome }) => outcome);
      if (stalled) outcomes.push({ name: file, file, ok: false, message: STALLED_MESSAGE });
      if (quiet) {
        // 挂住的多半就是节奏里的下一项：以它的名字记下（作者工具据此写出是哪项测试抓住了变异）
        const next = nextExpected(expected ?? pace, cursor, selected);
        outcomes.push({ name: next.name ?? file, file, ok: false, message: `${quietLimit} 毫秒没有新的结果（未变异时这里只隔 ${next.gapMs} 毫秒）：当作有一项测试挂住了` });
      }
      resolve({ outcomes, pace });
    });
    if (signal?.aborted) killGroup();
    else testProcess.begin(file);
  });
}

/**
 * 非零退出、却没有一项失败的记录（例如 import 失败，测试一项也没开始）：以文件路径为名记一次失败，
 * 信息取 stderr 里的第一行错误。冷启动与预热的进程都由 node 自己把没接住的错误写到 stderr。
 */
function loadFailure(file: string, stderr: string, code: number | null): RecordedOutcome {
  const lines = stderr.split("\n").map((line) => line.trim());
  const reason = lines.find((line) => /^(\w*Error\b|Error \[)/.test(line)) ?? lines.find((line) => line !== "" && !line.startsWith("node:"));
  return { name: file, file, ok: false, skipped: false, message: reason ?? `测试进程以状态 ${code} 退出` };
}

/** 逐项报告一条刚到的记录：挂住的测试已经换成统一的说明，因它没开始的测试先不报告。 */
function reportAsItArrives(arrived: ReportedOutcome[], record: RecordedOutcome, onOutcome: (outcome: TestOutcome) => void): void {
  const { skipped: _skipped, ...outcome } = record;
  arrived.push(outcome);
  const latest = classifyHangs(arrived).at(-1);
  if (!latest || latest.unstarted) return;
  const { unstarted: _unstarted, failureType: _failureType, ...settled } = latest;
  onOutcome(settled);
}

/** 报告器写出的一条记录：被名称过滤跳过的测试也有一条，skipped 为真。 */
export type RecordedOutcome = ReportedOutcome & { skipped: boolean };

/**
 * 测试进程标准输出里的记录（带 RECORD_PREFIX 的 JSON 行，见 test-records.mjs）；测试自己打印的行不算，
 * 进程被结束时写到一半的最后一行也不算。
 */
export function recordsIn(text: string): RecordedOutcome[] {
  return text.split("\n").flatMap((line) => {
    if (!line.startsWith(RECORD_PREFIX)) return [];
    try {
      return [reviveOutcome(JSON.parse(line.slice(RECORD_PREFIX.length)) as RecordedOutcome)];
    } catch {
      return [];
    }
  });
}

/** 超过单项时限之后再等多久没有新结果，就认定测试进程停在那里不会退出了。 */
const STALL_GRACE_MS = 5_000;
export const STALLED_MESSAGE = "测试文件跑完（或超时）之后没有退出：多半是留下了没关的连接、计时器或子进程，已结束它。";

/** 一项测试挂住（等的 Promise 永远不兑现）时，不论哪个版本的 Node，verify 都给出这句话。 */
export const HUNG_MESSAGE = "测试一直没有结束：它等待的 Promise 没有兑现（Node 20、22 在事件循环变空时取消它，Node 24 起等到时限到了才取消）。";

const EVENT_LOOP_DRAINED = "Promise resolution is still pending but the event loop has already resolved";
const TIMED_OUT = /^test timed out after \d+ms$/;

/**
 * 统一挂住的测试。同一个文件里一项测试挂住时，Node 20、22 等到事件循环空了就把它和其后所有
 * 还没开始的测试都记为 cancelled；Node 24 起让它超时，其余照常运行。这里把挂住的那项
 * 改写成同一句 HUNG_MESSAGE，把没开始的那些按名字单独再跑一次，结果在每个版本上相同。
 */
export async function settleHangs(
  first: readonly ReportedOutcome[],
  rerun: (files: string[], pattern: string) => Promise<ReportedOutcome[]>,
): Promise<TestOutcome[]> {
  let outcomes = classifyHangs(first);
  // 每一轮至少有一项不再是“没开始”（每个文件里第一个被取消的就是挂住的那项），轮数有上限
  for (let round = 0; round < outcomes.length; round += 1) {
    const unstarted = outcomes.filter((outcome) => outcome.unstarted);
    if (unstarted.length === 0) break;
    const files = [...new Set(unstarted.map((outcome) => outcome.file))];
    const again = classifyHangs(await rerun(files, exactNames(unstarted.map((outcome) => outcome.name))));
    outcomes = outcomes.map((outcome) =>
      outcome.unstarted ? (again.find((other) => other.file === outcome.file && other.name === outcome.name) ?? outcome) : outcome,
    );
  }
  return outcomes.map(({ unstarted: _unstarted, failureType: _failureType, ...outcome }) => outcome);
}

function classifyHangs(outcomes: readonly ReportedOutcome[]): Array<ReportedOutcome & { unstarted?: boolean }> {
  const hungFiles = new Set<string>();
  return outcomes.map((outcome) => {
    const drained = outcome.failureType === "cancelledByParent" && outcome.message === EVENT_LOOP_DRAINED;
    const timedOut = outcome.failureType === "testTimeoutFailure" && TIMED_OUT.test(outcome.message ?? "");
    if (drained && hungFiles.has(outcome.file)) return { ...outcome, unstarted: true };
    if (!drained && !timedOut) return outcome;
    hungFiles.add(outcome.file);
    // 堆栈只指向 node 内部，而且各版本不同；去掉它，verify 就不会给出随版本变化的位置
    const { stack: _stack, ...rest } = outcome;
    return { ...rest, message: HUNG_MESSAGE };
  });
}

/** 只选中这些名字的 --test-name-pattern（整名匹配）。 */
export function exactNames(names: readonly string[]): string {
  const escaped = [...new Set(names)].map(escapeRegExp);
  return `^(?:${escaped.join("|")})$`;
}

/** test-records.mjs 给 JSON 表达不了的值加的标记（正则、undefined、NaN、bigint、Map、Set）。 */
const TAG = "$piCourse";

export function reviveOutcome<T extends TestOutcome>(outcome: T): T {
  if ("actual" in outcome) outcome.actual = reviveValue(outcome.actual);
  if ("expected" in outcome) outcome.expected = reviveValue(outcome.expected);
  return outcome;
}

/** 把 test-records.mjs 编码过的断言值还原，显示时才是 /模式/ 而不是 {}。 */
export function reviveValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reviveValue);
  if (value === null || typeof value !== "object") return value;
  const record = value as Record<string, unknown>;
  switch (record[TAG]) {
    case "regexp":
      try {
        return new RegExp(String(record.source), String(record.flags ?? ""));
      } catch {
        return `/${String(record.source)}/${String(record.flags ?? "")}`;
      }
    case "undefined":
      return undefined;
    case "bigint":
      return BigInt(String(record.text));
    case "number":
      return Number(record.text);
    case "text":
      return String(record.text);
    case "map":
      return new Map((record.entries as Array<[unknown, unknown]>).map(([key, item]) => [reviveValue(key), reviveValue(item)]));
    case "set":
      return new Set((record.values as unknown[]).map(reviveValue));
    default:
      return Object.fromEntries(Object.entries(record).map(([key, item]) => [key, reviveValue(item)]));
  }
}

/** 失败发生在哪里：相对练习目录的路径与行列；compiled 表示只找到编译后的 .js（没有源码映射）。 */
export interface SourceLocation {
  file: string;
  line: number;
  column: number;
  compiled: boolean;
}

const FRAME = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?$/;

/**
 * 堆栈里第一帧落在项目 packages/pi-course 之内的位置（跳过 node 内部与依赖）。
 * 在 dist/ 的 .js 里、旁边又有 .js.map 时，换算回 .ts 源码的位置。
 */
export function failureLocation(outcome: Pick<TestOutcome, "stack">, projectDir: string): SourceLocation | undefined {
  if (!outcome.stack) return undefined;
  const roots = packageRoots(projectDir);
  for (const line of outcome.stack.split("\n")) {
    const match = FRAME.exec(line);
    if (!match) continue;
    const [, where = "", row = "0", column = "0"] = match;
    let file: string;
    try {
      file = where.startsWith("file://") ? fileURLToPath(where) : where;
    } catch {
      continue;
    }
    if (!path.isAbsolute(file)) continue;
    const root = roots.find((candidate) => isInside(candidate, file));
    if (!root || file.split(path.sep).includes("node_modules")) continue;
    const project = path.dirname(path.dirname(root)); // root 是 <项目>/packages/pi-course
    const generated = { file, line: Number(row), column: Number(column) };
    const original = file.endsWith(".js") && isInside(path.join(root, "dist"), file) ? mapToSource(generated) : undefined;
    const found = original ?? generated;
    const relative = path.relative(project, found.file).split(path.sep).join("/");
    return { file: relative, line: found.line, column: found.column, compiled: original === undefined && found.file.endsWith(".js") };
  }
  return undefined;
}

/** 项目的 packages/pi-course，外加它的真实路径（macOS 的 /var → /private/var 这类符号链接）。 */
function packageRoots(projectDir: string): string[] {
  const root = path.resolve(projectDir, COURSE_PACKAGE);
  try {
    const real = realpathSync(root);
    return real === root ? [root] : [root, real];
  } catch {
    return [root];
  }
}

/** 用旁边的 .js.map 把编译后的位置（行列从 1 起）换算回源码；没有映射或换算不出时返回 undefined。 */
function mapToSource(at: { file: string; line: number; column: number }): { file: string; line: number; column: number } | undefined {
  const mapFile = `${at.file}.map`;
  if (!existsSync(mapFile)) return undefined;
  try {
    const payload = JSON.parse(readFileSync(mapFile, "utf8")) as { sourceRoot?: string };
    const entry = new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]).findEntry(at.line - 1, at.column - 1) as {
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
    };
    if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return undefined;
    const source = entry.originalSource.startsWith("file://")
      ? fileURLToPath(entry.originalSource)
      : path.resolve(path.dirname(at.file), payload.sourceRoot ?? "", entry.originalSource);
    return { file: source, line: entry.originalLine + 1, column: entry.originalColumn + 1 };
  } catch {
    return undefined;
  }
}

/** 整个测试文件没能跑起来（例如 import 失败）时，node:test 以文件路径为名报告一次失败。 */
export function isFileFailure(outcome: TestOutcome): boolean {
  return !outcome.ok && outcome.name === outcome.file;
}

/** 失败信息里是否出现了某个片段：同时查看信息文字和断言的 actual / expected。 */
export function failureMentions(outcome: TestOutcome, fragment: string): boolean {
  const haystack = [outcome.message, outcome.actual, outcome.expected]
    .map((value) => (typeof value === "string" ? value : value === undefined ? "" : value instanceof RegExp ? String(value) : safeJson(value)))
    .join("\n");
  return haystack.includes(fragment);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
