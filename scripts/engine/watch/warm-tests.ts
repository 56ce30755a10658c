import { runTests, killTestProcess, TEST_TIMEOUT_MS, warmTestProcess, type RunOptions, type TestLauncher, type TestProcess, type TestReport } from "../runner.js";

/**
 * watch 用的预热测试进程：每种运行（整个文件、或某个实践的 --test-name-pattern）
 * 都有一个已经启动好、只等文件名的 node 进程。保存后测试直接开始，
 * 不用先等 node 启动、加载 node:test（在繁忙的两核机器上，这一步比测试本身还慢）。
 * 进程按 runner 的同一份规格启动（testProcessSpec），结果也由 runner 收下、统一挂住的测试：
 * 与 verify 的区别只在进程早启动了一会儿。
 * 用掉一个就在测完后补一个；同一文件的不同运行彼此独立，可以同时进行。
 */
export class WarmTests {
  private readonly idle = new Map<string, TestProcess>();
  /** 要常备进程的运行（prepare 给出的）；重跑挂住之后的测试用的整名过滤是一次性的，不补。 */
  private readonly prepared = new Set<string>();
  private closed = false;

  constructor(private readonly timeoutMs = TEST_TIMEOUT_MS) {}

  /** 为这些运行各备好一个进程（pattern 为 undefined 表示整个文件）。 */
  prepare(patterns: ReadonlyArray<string | undefined>): void {
    for (const pattern of patterns) {
      this.prepared.add(keyOf(pattern));
      this.ensure(pattern);
    }
  }

  /** 与 runner.runTests 相同，只是用备好的进程；只运行一个文件。 */
  run(file: string, options: Pick<RunOptions, "pattern" | "signal" | "onOutcome"> = {}): Promise<TestReport> {
    return runTests([file], { ...options, timeoutMs: this.timeoutMs, launch: this.launch });
  }

  close(): void {
    this.closed = true;
    for (const waiting of this.idle.values()) killTestProcess(waiting.child);
    this.idle.clear();
  }

  private readonly launch: TestLauncher = (_file, options) => {
    const key = keyOf(options.pattern);
    const waiting = options.timeoutMs === this.timeoutMs ? this.idle.get(key) : undefined;
    if (waiting) this.idle.delete(key);
    // 备好的进程可能已经没了（被系统杀掉、启动时崩溃）：那就现在启动一个
    const alive = waiting && waiting.child.exitCode === null && waiting.child.signalCode === null ? waiting : warmTestProcess(options);
    // 下一次保存用的进程：在这次测完之后才启动，不和测试抢 CPU
    alive.child.once("close", () => this.ensure(options.pattern));
    return alive;
  };

  private ensure(pattern: string | undefined): void {
    const key = keyOf(pattern);
    if (this.closed || this.idle.has(key) || !this.prepared.has(key)) return;
    this.idle.set(key, warmTestProcess({ timeoutMs: this.timeoutMs, ...(pattern === undefined ? {} : { pattern }) }));
  }
}

function keyOf(pattern: string | undefined): string {
  return pattern === undefined ? "" : `=${pattern}`;
}
