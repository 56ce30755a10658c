import { spawn } from "node:child_process";
import { existsSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { COURSE_PACKAGE, isInside } from "./paths.js";

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

/**
 * 在课程项目（套件、worktree 或练习目录）里编译 @pi/course，返回结构化的错误。
 * 先删掉 dist/：它只是编译产物，留着的话，这次没能编译出来的文件会由上一次的旧输出顶替，
 * 测试就会在旧代码上“通过”。删掉以后，测试只会运行这一次编译真正写出的东西。
 */
export function buildProject(projectDir: string, options: BuildOptions = {}): Promise<BuildResult> {
  const tsc = options.tsc ?? path.join(projectDir, "node_modules", "typescript", "bin", "tsc");
  const args = [tsc, "-p", COURSE_PACKAGE, "--pretty", "false"];
  rmSync(path.join(projectDir, COURSE_PACKAGE, "dist"), { recursive: true, force: true });
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
/** 冻结 node:assert 的预加载模块（见 test-guard.mjs）；文件 URL 里没有空格，可以直接写进 NODE_OPTIONS。 */
const TEST_GUARD = new URL("./test-guard.mjs", import.meta.url).href;

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
  delete env.PI_COURSE_PROGRESS; // 学习者的代码不该知道、更不该碰进度文件在哪里
  // 不继承套件的 NODE_OPTIONS（例如 tsx 加载器）；只打开源码映射：
  // run() 的测试子进程继承这个环境，有 .js.map 时错误堆栈直接指向 .ts 源码。
  env.NODE_OPTIONS = `--enable-source-maps --import=${TEST_GUARD}`;
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
