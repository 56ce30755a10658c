/**
 * stdio 传输：MCP 服务器是一个子进程，stdin 收消息，stdout 交消息，stderr 是它给人看的日志。
 *
 *   环境    子进程只拿到一张允许名单上的环境变量（外加配置里写明的）：从不把整个 process.env 交出去。
 *           服务器多半是别人写的程序，PI_COURSE_API_KEY 这样的密钥没有理由到它手里。
 *   stderr  只留最后 STDERR_TAIL_CHARS 个字符：服务器启动失败、中途崩溃时，这段尾巴就是给人看的原因。
 *   进程组  子进程自成一个进程组（detached）：服务器自己再开的子进程也在组里，关的时候一起关。
 *   关闭    先关 stdin（规矩的服务器读到 EOF 就退出）→ 等 graceMs → 给整个进程组 SIGTERM → 再等 graceMs → SIGKILL。
 */

import { spawn, type ChildProcess } from "node:child_process";

import { encodeLine, LineDecoder } from "./lines.js";

export const STDERR_TAIL_CHARS = 4096;
export const DEFAULT_GRACE_MS = 1000;

/** 子进程默认能看到的环境变量：找得到程序、知道家目录与语言，仅此而已。 */
export const ENV_ALLOW_LIST = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "PATHEXT"];

export interface StdioServerOptions {
  command: string;
  args?: readonly string[];
  /** 配置里写明交给这个服务器的环境变量：在允许名单之外另加。 */
  env?: Record<string, string>;
  cwd?: string;
  /** 从哪里挑允许名单上的变量；默认 process.env。 */
  parentEnv?: Record<string, string | undefined>;
  maxLineBytes?: number;
  graceMs?: number;
  onMessage(message: unknown): void;
  /** 解码时遇到的问题（坏行、超长的行）：报告，不断开。 */
  onProblem?(problem: string): void;
  /** 子进程退出了（不论是不是 close() 让它退的）。 */
  onExit?(exit: { code: number | null; signal: NodeJS.Signals | null }): void;
}

/** 允许名单上的变量，加上配置写明的。 */
export function childEnv(parent: Record<string, string | undefined>, extra: Record<string, string> = {}): Record<string, string> {
  // #region lab 17.2
  const env: Record<string, string> = {};
  for (const name of ENV_ALLOW_LIST) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...extra };
  // #endregion
}

/** 一段只留最后 max 个字符的文字。 */
export class TextTail {
  private text = "";

  constructor(readonly max = STDERR_TAIL_CHARS) {}

  push(chunk: string): void {
    // #region lab 17.2
    this.text += chunk;
    if (this.text.length > this.max) this.text = this.text.slice(this.text.length - this.max);
    // #endregion
  }

  toString(): string {
    return this.text;
  }
}

export class StdioTransport {
  readonly stderr = new TextTail();
  /** 子进程退出、管道都关上之后兑现。 */
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;
  private exitedFlag = false;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: StdioServerOptions) {
    const decoder = new LineDecoder(options.maxLineBytes);
    this.child = spawn(options.command, [...(options.args ?? [])], {
      cwd: options.cwd,
      env: childEnv(options.parentEnv ?? process.env, options.env),
      stdio: ["pipe", "pipe", "pipe"],
      detached: process.platform !== "win32",
    });
    this.exited = new Promise((resolve) => {
      this.child.once("close", (code, signal) => {
        this.exitedFlag = true;
        options.onExit?.({ code, signal });
        resolve();
      });
    });
    // 启动失败（找不到程序）也会走到 close，原因记进 stderr 的尾巴。
    this.child.on("error", (error) => this.stderr.push(`启动失败：${error.message}\n`));
    this.child.stdin!.on("error", () => {}); // 子进程先退出时写 stdin 的 EPIPE：退出由 onExit 报告
    this.child.stdout!.setEncoding("utf8");
    this.child.stderr!.setEncoding("utf8");
    this.child.stdout!.on("data", (chunk: string) => {
      const decoded = decoder.push(chunk);
      for (const problem of decoded.problems) options.onProblem?.(problem);
      for (const message of decoded.messages) options.onMessage(message);
    });
    this.child.stderr!.on("data", (chunk: string) => this.stderr.push(chunk));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return !this.exitedFlag;
  }

  send(message: unknown): void {
    if (this.exitedFlag || this.closing !== undefined || !this.child.stdin!.writable) return;
    this.child.stdin!.write(encodeLine(message));
  }

  /** 有序地关：stdin EOF → 宽限 → SIGTERM（整个进程组）→ 宽限 → SIGKILL。再调用拿到同一个 Promise。 */
  close(): Promise<void> {
    // #region lab 17.2
    this.closing ??= this.shutdown();
    return this.closing;
    // #endregion
  }

  // #region lab 17.2 辅助
  private async shutdown(): Promise<void> {
    const grace = this.options.graceMs ?? DEFAULT_GRACE_MS;
    this.child.stdin!.end();
    if (await this.exitWithin(grace)) return;
    this.signalGroup("SIGTERM");
    if (await this.exitWithin(grace)) return;
    this.signalGroup("SIGKILL");
    await this.exited;
  }

  private async exitWithin(ms: number): Promise<boolean> {
    if (this.exitedFlag) return true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const done = await Promise.race([this.exited.then(() => true), waited]);
    clearTimeout(timer);
    return done;
  }

  private signalGroup(name: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      // 负的 pid 指整个进程组：服务器自己开的子进程一起收到。
      process.kill(process.platform === "win32" ? pid : -pid, name);
    } catch {
      // 进程组已经没了
    }
  }
  // #endregion
}
