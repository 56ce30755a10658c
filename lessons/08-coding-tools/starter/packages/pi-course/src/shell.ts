/**
 * 在工作区里跑一条 shell 命令：有超时、可取消、输出有上限。
 * 命令会派生出自己的子进程，所以超时和取消终止的是整个进程组，而不只是那个 sh。
 */

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

/** 用 /bin/sh 执行命令，等到输出管道全部关闭才交出结果。 */
export function runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
  throw new Error("Lab 8.3 尚未实现");
}
