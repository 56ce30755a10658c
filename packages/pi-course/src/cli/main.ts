/**
 * tiny-pi 的入口：参数 → 运行时 → 模式 → 关闭 → 退出码。
 * 它是一个普通的函数：stdin、stdout、stderr、环境变量、工作目录、信号都从 io 传进来，
 * 所以测试在同一个进程里调用它，不用起子进程；bin/tiny-pi.js 只是把真实的 process 交给它。
 *
 * 退出码：0 成功；1 运行失败（模型出错、被中止、会话目录不能写……）；2 用法错误；
 * 130 打印模式里连按两次 Ctrl-C（不等收尾，立刻离开）。
 */

import type { Model } from "../types.js";
import { createRuntime, untrustedWarning, type ApprovalSettings, type Runtime } from "../runtime.js";
import { parseCliArgs, USAGE, UsageError } from "./args.js";
import { InteractiveMode } from "./interactive-mode.js";
import { Output } from "./output.js";
import { runPrintMode } from "./print-mode.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface Signals {
  on(event: "SIGINT", listener: () => void): unknown;
  off(event: "SIGINT", listener: () => void): unknown;
}

export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Record<string, string | undefined>;
  cwd: string;
  /** 打印模式的 Ctrl-C 从这里来（交互模式由 readline 接住）；默认 process。 */
  signals?: Signals;
  /** 测试与评测注入的模型；省略时由 createRuntime 决定。 */
  model?: Model;
  now?: () => number;
}

export const FORCED_EXIT = 130;

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
  const base = { cwd: io.cwd, env: io.env, onWarning, approval, trust: { once: args.trust }, ...(io.model ? { model: io.model } : {}), ...(io.now ? { now: io.now } : {}) };
  try {
    runtime = await createRuntime({ ...base, session: args.session });
  } catch (error) {
    err.write(`tiny-pi：${messageOf(error)}\n`);
    return 1;
  }

  let code: number;
  if (args.mode === "interactive") {
    const mode = new InteractiveMode(runtime, {
      input: io.stdin,
      output: out,
      terminal: io.stdin.isTTY === true,
      reopen: (sessionFile) => createRuntime({ ...base, session: sessionFile }),
    });
    repl = mode;
    code = await mode.run(args.messages);
    runtime = mode.current;
  } else {
    if (args.yolo) onWarning("批准闸门关着（--yolo）：工具调用不经询问直接运行。");
    // 打印模式不能问：没信任的项目照样跑，只是不加载项目扩展，并且说清楚。
    if (runtime.projectTrust.state !== "trusted") onWarning(untrustedWarning(runtime.projectTrust));
    const forced = interruptTwice(io.signals ?? process, () => {
      runtime.session.agent.abort();
      err.write("\ntiny-pi：已中止这次运行；再按一次 Ctrl-C 立即离开。\n");
    });
    code = await Promise.race([runPrintMode(runtime, args.mode, args.messages, out, err), forced.promise]);
    forced.stop();
    if (code === FORCED_EXIT) {
      // 不等收尾：已经写下的行都带着换行符，第 10 章的会话文件最多留下一段没写完的残行。
      void runtime.dispose().catch(() => {});
      return code;
    }
  }
  try {
    await runtime.dispose();
  } catch (error) {
    err.write(`tiny-pi：${messageOf(error)}\n`);
    return code === 0 ? 1 : code;
  }
  return code;
  // #endregion
}

/** 打印模式的 Ctrl-C：第一次调用 onFirst（中止运行），第二次兑现 FORCED_EXIT。 */
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
  signals.on("SIGINT", listener);
  return { promise, stop: () => signals.off("SIGINT", listener) };
  // #endregion
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
