/**
 * 在工作区里跑一条 shell 命令：有超时、可取消、输出有上限。
 * 命令会派生出自己的子进程，所以超时和取消终止的是整个进程组，而不只是那个 sh。
 */

import { spawn } from "node:child_process";

import { tailOfBytes } from "./truncate.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface CommandOptions {
  /** 命令的工作目录，也就是工作区根目录。 */
  cwd: string;
  /** 到点仍未结束就终止整个进程组。 */
  timeoutMs: number;
  /** 输出最多保留多少字节（只留尾部）。 */
  maxOutputBytes: number;
  signal?: AbortSignal;
}

/** exited：自己结束；timedOut：我们到点终止；cancelled：调用方取消。三者对模型意味着不同的下一步。 */
export type CommandStatus = "exited" | "timedOut" | "cancelled";

export interface CommandResult {
  status: CommandStatus;
  /** 自己退出时的退出码；被终止或根本没启动时为 null。 */
  exitCode: number | null;
  /** stdout 与 stderr 按到达顺序合在一起，只留尾部。 */
  output: string;
  /** 命令一共写出的字节数。 */
  totalBytes: number;
  truncated: boolean;
  /** false 表示开始前就已取消，没有启动任何进程。 */
  spawned: boolean;
}

// #region lab 8.3 辅助
// ── 有上限的输出收集 ────────────────────────────────────────────

/** 边收边丢：内存里最多是上限再加一块，`yes` 这样的命令也撑不爆它。 */
class OutputTail {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.kept += chunk.length;
    this.total += chunk.length;
    // 去掉最旧的一块之后仍够 maxBytes，这块就再也用不上了。
    let oldest = this.chunks[0];
    while (oldest !== undefined && this.kept - oldest.length >= this.maxBytes) {
      this.chunks.shift();
      this.kept -= oldest.length;
      oldest = this.chunks[0];
    }
  }

  text(): string {
    return tailOfBytes(Buffer.concat(this.chunks), this.maxBytes);
  }
}

// ── 进程 ────────────────────────────────────────────────────────

/** 负 pid 表示整个进程组：sh 和它派生的后台进程一起结束。 */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // 进程组已经全部退出：没有东西可杀。
  }
}

function notStarted(): CommandResult {
  return { status: "cancelled", exitCode: null, output: "", totalBytes: 0, truncated: false, spawned: false };
}
// #endregion

/**
 * 用 /bin/sh 执行命令，等到输出管道全部关闭才交出结果。
 * 只等 sh 退出是不够的：留在后台的孙进程还握着管道，也还在改文件。
 */
export function runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
  // #region lab 8.3
  // 已取消的调用不能留下任何副作用，连进程都不要启动。
  if (options.signal?.aborted) return Promise.resolve(notStarted());
  return new Promise((resolve, reject) => {
    // detached：子进程自成一个进程组，组号就是它的 pid。
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: options.cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = new OutputTail(options.maxOutputBytes);
    let status: CommandStatus = "exited";
    const stop = (reason: CommandStatus) => {
      if (status !== "exited") return;
      status = reason;
      killGroup(child.pid);
    };
    const timer = setTimeout(() => stop("timedOut"), options.timeoutMs);
    const onAbort = () => stop("cancelled");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };

    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    child.once("error", (error) => {
      cleanup();
      reject(error);
    });
    child.once("close", (code) => {
      cleanup();
      const truncated = output.total > options.maxOutputBytes;
      const exitCode = status === "exited" ? code : null;
      resolve({ status, exitCode, output: output.text(), totalBytes: output.total, truncated, spawned: true });
    });
  });
  // #endregion
}
