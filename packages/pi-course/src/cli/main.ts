/**
 * tiny-pi 的入口：参数 → 运行时 → 模式 → 关闭 → 退出码。
 * 它是一个普通的函数：stdin、stdout、stderr、环境变量、工作目录、信号都从 io 传进来，
 * 所以测试在同一个进程里调用它，不用起子进程；bin/tiny-pi.js 只是把真实的 process 交给它。
 *
 * 退出码：0 成功；1 运行失败（模型出错、被中止、会话目录不能写……）；2 用法错误；
 * 130 强制离开：打印模式里连按两次 Ctrl-C（或 SIGTERM、SIGHUP），交互模式里收尾超时（不等了，立刻离开）。
 */

import type { Model } from "../types.js";
import { runDurableMode } from "../durable/durable-mode.js";
import { createRuntime, untrustedWarning, type ApprovalSettings, type Runtime, type RuntimeOptions } from "../runtime.js";
import { parseCliArgs, USAGE, UsageError } from "./args.js";
import { InteractiveMode } from "./interactive-mode.js";
import { Output } from "./output.js";
import { runPrintMode } from "./print-mode.js";
import { killChildProcessGroups } from "./process-groups.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 要人离开的三个信号：Ctrl-C、`kill`（SIGTERM）、终端关掉（SIGHUP）。不监听的话，Node 直接退出，工具的进程组留在后面。 */
export type StopSignal = "SIGINT" | "SIGTERM" | "SIGHUP";
export const STOP_SIGNALS: readonly StopSignal[] = ["SIGINT", "SIGTERM", "SIGHUP"];

export interface Signals {
  on(event: StopSignal, listener: () => void): unknown;
  off(event: StopSignal, listener: () => void): unknown;
}

export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Ctrl-C、SIGTERM、SIGHUP 从这里来（终端里的 Ctrl-C 在交互模式里由 readline 接住）；默认 process。 */
  signals?: Signals;
  /** 交互模式离开后，收尾最多等多久（毫秒），默认 DISPOSE_GRACE_MS。 */
  disposeGraceMs?: number;
  /** 测试与评测注入的模型；省略时由 createRuntime 决定。 */
  model?: Model;
  now?: () => number;
  /** 会话文件的存储；省略时由 createRuntime 决定（测试换上写满或卡住的存储）。 */
  openStore?: RuntimeOptions["openStore"];
}

export const FORCED_EXIT = 130;
export const DISPOSE_GRACE_MS = 3_000;

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ── 入口 ────────────────────────────────────────────────────────

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  // #region lab 13.3
  const out = new Output(io.stdout);
  const err = new Output(io.stderr);
  let args;
  try {
    args = parseCliArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err.write(`tiny-pi：${error.message}\n`);
    return error.exitCode;
  }
  if (args.help) {
    out.write(`${USAGE}\n`);
    return 0;
  }
  // #endregion
  // #region lab 19.5 扩展
  // 第 19 章：--durable 不经 createRuntime，跑在持久会话上。
  if (args.durable === true) return runDurableMode(args.messages, io);
  // #endregion
  // #region lab 13.3
  let runtime: Runtime;
  const onWarning = (message: string) => void err.write(`tiny-pi：警告：${message}\n`);
  // 交互模式由 REPL 来问（它要等运行时建好才有，所以这里先留一个转接）；打印与 JSON 模式不能问。
  let repl: InteractiveMode | undefined;
  const approval: ApprovalSettings = {
    allow: args.allow,
    off: args.yolo,
    ask: args.mode === "interactive" ? async (request) => (repl === undefined ? "no" : repl.askApproval(request)) : undefined,
    notify: args.mode === "interactive" ? (message) => void out.write(`${message}\n`) : onWarning,
  };
  // #endregion
  // #region lab 16.4 扩展
  // 第 16 章：tiny-pi 命令总是给会话一个 codemode。
  const base = { cwd: io.cwd, env: io.env, onWarning, approval, trust: { once: args.trust }, codemode: true, model: io.model, now: io.now, openStore: io.openStore };
  // #endregion
  // #region lab 13.3
  try {
    runtime = await createRuntime({ ...base, session: args.session });
  } catch (error) {
    err.write(`tiny-pi：${messageOf(error)}\n`);
    return 1;
  }

  const signals = io.signals ?? process;
  let code: number;
  if (args.mode === "interactive") {
    const mode = new InteractiveMode(runtime, {
      input: io.stdin,
      output: out,
      terminal: io.stdin.isTTY === true,
      reopen: (sessionFile) => createRuntime({ ...base, session: sessionFile }),
    });
    repl = mode;
    // 不经终端来的信号：SIGINT 当作一次 Ctrl-C；SIGTERM、SIGHUP 是“现在就走”。
    const stopListening = listenForStop(signals, (signal) => (signal === "SIGINT" ? mode.interrupt() : mode.terminate()));
    try {
      code = await mode.run(args.messages);
    } finally {
      stopListening();
    }
    runtime = mode.current;
    if (!(await disposedWithin(runtime, io.disposeGraceMs ?? DISPOSE_GRACE_MS))) {
      // 收尾卡住了（一个不结束的钩子、一次不返回的写入）：人已经要走，不再等。
      killChildProcessGroups();
      err.write(`tiny-pi：收尾超过 ${io.disposeGraceMs ?? DISPOSE_GRACE_MS} 毫秒没有完成，不再等待；会话文件最多少了最后几行。\n`);
      return FORCED_EXIT;
    }
  } else {
    if (args.yolo) onWarning("批准闸门关着（--yolo）：工具调用不经询问直接运行。");
    // 打印模式不能问：没信任的项目照样跑，只是不加载项目扩展，并且说清楚。
    if (runtime.projectTrust.state !== "trusted") onWarning(untrustedWarning(runtime.projectTrust));
    const forced = interruptTwice(signals, () => {
      runtime.session.agent.abort();
      err.write("\ntiny-pi：已中止这次运行；再按一次 Ctrl-C 立即离开。\n");
    });
    code = await Promise.race([runPrintMode(runtime, args.mode, args.messages, out, err), forced.promise]);
    forced.stop();
    if (code === FORCED_EXIT) {
      // 不等收尾：已经写下的行都带着换行符，第 10 章的会话文件最多留下一段没写完的残行。
      // 工具的进程组却不能留下：现在就同步 SIGKILL，紧接着进程就退出了。
      killChildProcessGroups();
      void runtime.dispose().catch(() => {});
      return code;
    }
  }
  try {
    await runtime.dispose();
  } catch (error) {
    // 运行已经失败、说过一句话了：关闭时的失败多半是同一个（例如同一次写不进会话文件），不再重复。
    if (code !== 0) return code;
    err.write(`tiny-pi：${messageOf(error)}\n`);
    return 1;
  }
  return code;
  // #endregion
}

/** 打印模式的 Ctrl-C（SIGTERM、SIGHUP 一样）：第一次调用 onFirst（中止运行），第二次兑现 FORCED_EXIT。 */
function interruptTwice(signals: Signals, onFirst: () => void): { promise: Promise<number>; stop(): void } {
  // #region lab 13.4
  let count = 0;
  let resolve: (code: number) => void = () => {};
  const promise = new Promise<number>((done) => (resolve = done));
  const listener = () => {
    count += 1;
    if (count === 1) onFirst();
    else resolve(FORCED_EXIT);
  };
  return { promise, stop: listenForStop(signals, listener) };
  // #endregion
}

/** 三个信号都交给 listener；交回摘掉监听的函数。 */
function listenForStop(signals: Signals, listener: (signal: StopSignal) => void): () => void {
  const bound = STOP_SIGNALS.map((signal) => [signal, () => listener(signal)] as const);
  for (const [signal, handler] of bound) signals.on(signal, handler);
  return () => {
    for (const [signal, handler] of bound) signals.off(signal, handler);
  };
}

/** 关闭运行时，最多等 ms 毫秒：按时关完（关闭出错也算关完，由调用方报告）交回 true，到点还没关完交回 false。 */
async function disposedWithin(runtime: Runtime, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const closed = runtime.dispose().then(
    () => true as const,
    () => true as const,
  );
  try {
    return await Promise.race([closed, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** bin/tiny-pi.js 用的真实 io。`npm run tiny-pi` 把工作目录换成了项目根，INIT_CWD 才是敲命令的地方。 */
export function processIo(): CliIo {
  const viaNpmRun = process.env.npm_lifecycle_event === "tiny-pi" && process.env.INIT_CWD;
  return {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: viaNpmRun ? (process.env.INIT_CWD as string) : process.cwd(),
  };
}
