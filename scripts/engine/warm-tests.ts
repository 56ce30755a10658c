import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

import { recordsIn, type RecordedOutcome, type TestOutcome, type TestReport } from "./runner.js";
import type { RunFileOptions } from "./verify.js";

/**
 * watch 用的预热测试进程：每种运行（整个文件、或某个实践的 --test-name-pattern）
 * 都有一个已经启动好、只等文件名的 node 进程。保存后测试直接开始，
 * 不用先等 node 启动、加载 node:test（在繁忙的两核机器上，这一步比测试本身还慢）。
 * 用掉一个就在测完后补一个；同一文件的不同运行彼此独立，可以同时进行。
 */
const CHILD = fileURLToPath(new URL("./warm-child.mjs", import.meta.url));
const REPORTER = new URL("./warm-reporter.mjs", import.meta.url).href;

export class WarmTests {
  private readonly idle = new Map<string, ChildProcessWithoutNullStreams>();
  private closed = false;

  constructor(
    private readonly projectDir: string,
    private readonly timeoutMs = 60_000,
  ) {}

  /** 为这些运行各备好一个进程（pattern 为 undefined 表示整个文件）。 */
  prepare(patterns: ReadonlyArray<string | undefined>): void {
    for (const pattern of patterns) this.ensure(pattern);
  }

  /** 与 runner.runTests 相同的约定；只运行一个文件。 */
  run(file: string, options: RunFileOptions = {}): Promise<TestReport> {
    const key = options.pattern ?? "";
    const waiting = this.idle.get(key);
    this.idle.delete(key);
    // 备好的进程可能已经没了（被系统杀掉、启动时崩溃）：那就现在启动一个
    const child = waiting && waiting.exitCode === null && waiting.signalCode === null ? waiting : this.spawn(options.pattern);
    return new Promise<TestReport>((resolve, reject) => {
      let stdout = "";
      let stderr = "";
      const abort = () => child.kill();
      options.signal?.addEventListener("abort", abort, { once: true });
      let reported = 0; // stdout 里已经逐项报告过的部分
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString("utf8");
        const complete = stdout.lastIndexOf("\n") + 1;
        if (!options.onOutcome || complete <= reported) return;
        for (const record of recordsIn(stdout.slice(reported, complete))) {
          if (!record.skipped) options.onOutcome({ ...withoutSkipped(record), file });
        }
        reported = complete;
      });
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
      child.on("error", reject);
      child.on("close", () => {
        options.signal?.removeEventListener("abort", abort);
        this.ensure(options.pattern); // 下一次保存用的进程：在这次测完之后才启动，不和测试抢 CPU
        if (options.signal?.aborted) {
          reject(options.signal.reason ?? new Error("aborted"));
          return;
        }
        const records = recordsIn(stdout);
        if (records.length === 0 && stderr.trim() !== "") {
          // 没有任何记录：进程在测试开始前就崩了，把它的第一行错误当作文件没能运行
          const reason = stderr.split("\n").find((line) => /^(\w*Error\b|Error \[)/.test(line.trim())) ?? stderr.trim().split("\n")[0];
          records.push({ name: file, file, ok: false, skipped: false, message: reason?.trim() ?? "测试进程异常退出" });
        }
        const tests = records.filter((record) => !record.skipped).map(withoutSkipped);
        const passed = tests.filter((test) => test.ok).length;
        resolve({ tests, passed, failed: tests.length - passed });
      });
      child.stdin.end(`${JSON.stringify({ file })}\n`);
    });
  }

  close(): void {
    this.closed = true;
    for (const child of this.idle.values()) child.kill();
    this.idle.clear();
  }

  private ensure(pattern: string | undefined): void {
    const key = pattern ?? "";
    if (this.closed || this.idle.has(key)) return;
    this.idle.set(key, this.spawn(pattern));
  }

  private spawn(pattern: string | undefined): ChildProcessWithoutNullStreams {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    delete env.NODE_OPTIONS; // 与 runner.runTests 一样：不继承套件的加载器
    const args = [
      "--enable-source-maps",
      `--test-reporter=${REPORTER}`,
      "--test-reporter-destination=stdout",
      `--test-timeout=${this.timeoutMs}`,
      ...(pattern === undefined ? [] : [`--test-name-pattern=${pattern}`]),
      CHILD,
    ];
    const child = spawn(process.execPath, args, { cwd: this.projectDir, env, stdio: ["pipe", "pipe", "pipe"] });
    child.on("error", () => {}); // 启动失败在 run() 里报告
    child.stdin.on("error", () => {}); // 进程已经退出时写入会 EPIPE：结果由 close 事件处理
    return child;
  }
}

function withoutSkipped({ skipped: _skipped, ...outcome }: RecordedOutcome): TestOutcome {
  return outcome;
}
