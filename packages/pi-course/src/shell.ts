/**
 * 在工作区里跑一条 shell 命令：有超时、可取消、输出有上限，环境里没有凭据。
 * 命令会派生出自己的子进程，所以超时和取消终止的是整个进程组，而不只是那个 sh。
 * 结果在有限的时间里交出：sh 退出后管道只再等一小会儿，组里剩下的进程一律结束。
 */

import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";

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
  /** SIGTERM 之后等多久仍未退出就 SIGKILL；默认 1000 毫秒。 */
  killGraceMs?: number;
  /** sh 退出之后，等别的进程松开输出管道的最长时间；默认 200 毫秒。 */
  drainMs?: number;
  /** 从哪份环境里挑出命令继承的变量；默认 process.env。挑的规则见 commandEnvironment()。 */
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_KILL_GRACE_MS = 1_000;
const DEFAULT_DRAIN_MS = 200;

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
// ── 环境：命令继承哪些变量 ──────────────────────────────────────

/** 名字里带着这些词的变量多半装着凭据：模型的 key、各种 token、密码、私钥。 */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/i;
/** 套件自己的变量一个也不给：PI_COURSE_BASE_URL 里也可能写着 user:password@。 */
const KIT_PREFIX = "PI_COURSE_";

function withheldFromCommand(name: string): boolean {
  return name.toUpperCase().startsWith(KIT_PREFIX) || SECRET_NAME.test(name);
}

/**
 * 命令继承父进程的环境，只去掉像凭据的变量。命令的输出会原样回到模型、写进会话文件，
 * 一句 `env` 就能把 key 送进下一次请求；而 PATH、HOME、LANG 之类的变量命令离不开，照常交给它。
 */
export function commandEnvironment(parent: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(parent).filter(([name]) => !withheldFromCommand(name)));
}

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

/** 负 pid 表示整个进程组：sh 和它派生的后台进程一起收到信号。 */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // 进程组已经全部退出：没有东西可杀。
  }
}

/** 先礼后兵：SIGTERM 给命令收尾的机会，过了宽限期还在就 SIGKILL。返回取消升级的函数。 */
function terminateGroup(pid: number | undefined, graceMs: number): () => void {
  signalGroup(pid, "SIGTERM");
  const escalation = setTimeout(() => signalGroup(pid, "SIGKILL"), graceMs);
  return () => clearTimeout(escalation);
}

/**
 * sh 已经退出：管道最多再等 drainMs，然后由我们关掉。
 * 用 setsid 逃出进程组的孙进程可以一直握着管道；只等 close 的话，它活多久调用就卡多久。
 */
function drainPipes(child: ChildProcessByStdio<null, Readable, Readable>, drainMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.stdout.destroy();
      child.stderr.destroy();
      resolve();
    }, drainMs);
    child.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function notStarted(): CommandResult {
  return { status: "cancelled", exitCode: null, output: "", totalBytes: 0, truncated: false, spawned: false };
}
// #endregion

/**
 * 用 /bin/sh 执行命令。等的是 sh 自己的 exit，再给管道一个很短的排空窗口；
 * 交出结果之前，进程组里还活着的进程（例如 `sleep 9 >/dev/null &`）全部 SIGKILL：
 * 调用结束之后，它启动的东西不能还在后台改文件。
 */
export function runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
  // #region lab 8.3
  // 已取消的调用不能留下任何副作用，连进程都不要启动。
  if (options.signal?.aborted) return Promise.resolve(notStarted());
  const graceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  return new Promise((resolve, reject) => {
    // detached：子进程自成一个进程组，组号就是它的 pid。
    // cwd 只是起点：sh 可以 cd 出去、读绝对路径，边界要靠外层的沙箱。
    const child = spawn("/bin/sh", ["-c", command], {
      cwd: options.cwd,
      env: commandEnvironment(options.env ?? process.env),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = new OutputTail(options.maxOutputBytes);
    let status: CommandStatus = "exited";
    let cancelEscalation = () => {};
    const stop = (reason: CommandStatus) => {
      if (status !== "exited") return;
      status = reason;
      cancelEscalation = terminateGroup(child.pid, graceMs);
    };
    const timer = setTimeout(() => stop("timedOut"), options.timeoutMs);
    const onAbort = () => stop("cancelled");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    // sh 一退出，超时和取消就不再有意义：结局已经定了。
    const stopWatching = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };

    child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
    child.once("error", (error) => {
      stopWatching();
      cancelEscalation();
      reject(error);
    });
    child.once("exit", (code) => {
      stopWatching();
      const exitCode = status === "exited" ? code : null;
      void drainPipes(child, options.drainMs ?? DEFAULT_DRAIN_MS).then(() => {
        // 组里剩下的进程没有人再等它们的输出了：交出结果之前全部结束。
        signalGroup(child.pid, "SIGKILL");
        cancelEscalation();
        const truncated = output.total > options.maxOutputBytes;
        resolve({ status, exitCode, output: output.text(), totalBytes: output.total, truncated, spawned: true });
      });
    });
  });
  // #endregion
}
