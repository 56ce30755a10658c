import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { COURSE_PACKAGE } from "./paths.js";

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
}

export interface TestReport {
  /** 被选中并真正运行的测试（名称过滤跳过的不算）。 */
  tests: TestOutcome[];
  passed: number;
  failed: number;
}

const TSC_LINE = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/;

export interface BuildOptions {
  /** 另用一个 tsc 入口（bench 拿 TypeScript 5.9 做对照）；默认是项目自己的 typescript。 */
  tsc?: string;
  /** 中止时结束 tsc 子进程（watch 退出时用）。 */
  signal?: AbortSignal;
}

/** 在课程项目（套件、worktree 或练习目录）里编译 @pi/course，返回结构化的错误。 */
export function buildProject(projectDir: string, options: BuildOptions = {}): Promise<BuildResult> {
  const tsc = options.tsc ?? path.join(projectDir, "node_modules", "typescript", "bin", "tsc");
  const args = [tsc, "-p", COURSE_PACKAGE, "--pretty", "false"];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
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

const DRIVER = fileURLToPath(new URL("./test-driver.mjs", import.meta.url));

/**
 * 用 node:test 的 run() 运行测试文件：在独立子进程里调用（见 test-driver.mjs），
 * 每个测试事件以一行 JSON 传回，不解析任何给人看的文本。
 */
export function runTests(
  files: readonly string[],
  options: { pattern?: string; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<TestReport> {
  const request = JSON.stringify({ files, pattern: options.pattern, timeoutMs: options.timeoutMs ?? 60_000 });
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT; // 否则子进程里的 run() 会以为自己嵌套在另一个测试里
  delete env.NODE_OPTIONS;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DRIVER, request], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) {
        reject(new Error(`测试驱动异常退出（${code}）：${stderr.trim()}`));
        return;
      }
      const records = stdout
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as TestOutcome & { skipped: boolean });
      // 被名称过滤跳过的测试没有运行，不计入选中数。
      const tests = records.filter((record) => !record.skipped).map(({ skipped: _skipped, ...outcome }) => outcome);
      const passed = tests.filter((test) => test.ok).length;
      resolve({ tests, passed, failed: tests.length - passed });
    });
  });
}

/** 整个测试文件没能跑起来（例如 import 失败）时，node:test 以文件路径为名报告一次失败。 */
export function isFileFailure(outcome: TestOutcome): boolean {
  return !outcome.ok && outcome.name === outcome.file;
}

/** 失败信息里是否出现了某个片段：同时查看信息文字和断言的 actual / expected。 */
export function failureMentions(outcome: TestOutcome, fragment: string): boolean {
  const haystack = [outcome.message, outcome.actual, outcome.expected]
    .map((value) => (typeof value === "string" ? value : value === undefined ? "" : safeJson(value)))
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
