import { spawn } from "node:child_process";
import path from "node:path";
import { run } from "node:test";

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

/** 在课程项目（套件、worktree 或练习目录）里编译 @pi/course，返回结构化的错误。 */
export function buildProject(projectDir: string): Promise<BuildResult> {
  const tsc = path.join(projectDir, "node_modules", "typescript", "bin", "tsc");
  const args = [tsc, "-p", COURSE_PACKAGE, "--pretty", "false"];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: projectDir, stdio: ["ignore", "pipe", "pipe"] });
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

/** 用 node:test 的 run() 运行测试文件，按事件收集结果，不解析任何文本输出。 */
export async function runTests(
  files: readonly string[],
  options: { pattern?: string; timeoutMs?: number } = {},
): Promise<TestReport> {
  const stream = run({
    files: [...files],
    concurrency: true,
    timeout: options.timeoutMs ?? 60_000,
    ...(options.pattern === undefined ? {} : { testNamePatterns: [options.pattern] }),
  });
  const tests: TestOutcome[] = [];
  stream.on("test:pass", (event) => {
    if (event.details.type === "suite" || event.skip !== undefined) return;
    tests.push({ name: event.name, file: event.file ?? "", ok: true });
  });
  stream.on("test:fail", (event) => {
    if (event.details.type === "suite") return;
    tests.push({ name: event.name, file: event.file ?? "", ok: false, ...describeFailure(event.details.error) });
  });
  // 排空事件流，等全部测试结束。
  for await (const _event of stream) {
    /* 结果已经由上面的监听器收集 */
  }
  const passed = tests.filter((test) => test.ok).length;
  return { tests, passed, failed: tests.length - passed };
}

/** node:test 把断言错误包在 cause 里；取出真正的信息和期望值。 */
function describeFailure(error: unknown): Pick<TestOutcome, "message" | "actual" | "expected"> {
  const root = (error as { cause?: unknown } | undefined)?.cause ?? error;
  if (root instanceof Error || (typeof root === "object" && root !== null)) {
    const record = root as { message?: unknown; actual?: unknown; expected?: unknown };
    const result: Pick<TestOutcome, "message" | "actual" | "expected"> = { message: String(record.message ?? root) };
    if ("actual" in record) result.actual = record.actual;
    if ("expected" in record) result.expected = record.expected;
    return result;
  }
  return { message: String(root) };
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
