/**
 * 一个 MCP 服务器的会话：握手、列工具、调用工具、跟着服务器的变化，服务器崩了就有限次地重启。
 *
 *   握手      本章实现 2025-11-25 版的协议：initialize（带上 protocolVersion、capabilities、clientInfo）→
 *             服务器回答它的版本与能力 → 客户端发 notifications/initialized，此后才发别的请求。
 *             服务器回答的版本不是这一版就断开：说不同版本的两头，消息的形状对不上。
 *   列工具    tools/list 一页一页地取，跟着 nextCursor 走；同一个游标出现第二次就是错误，不是死循环。
 *   变化      notifications/tools/list_changed：重新列一遍，交给 onToolsChanged，由适配器同步注册表。
 *   崩溃      子进程自己退出：所有待决的请求一次拒绝（原因带着 stderr 的尾巴），此刻调用工具立刻失败并说明原因；
 *             然后隔 restartDelayMs、2×、4×…… 重启，最多 maxRestarts 次，重启成功就重新列工具。
 */

import { RpcClient, RpcError } from "./rpc.js";
import { StdioTransport } from "./stdio.js";

export const PROTOCOL_VERSION = "2025-11-25";
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESTARTS = 3;
export const DEFAULT_RESTART_DELAY_MS = 500;
/** 一个服务器最多翻这么多页工具：游标不重复、却永远有下一页的服务器也停得下来。 */
export const MAX_TOOL_PAGES = 100;

/** 服务器列出的一个工具（tools/list 的一项）。 */
export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** tools/call 的结果：内容块的数组，可能带 isError 与 structuredContent。 */
export interface McpCallResult {
  content: Record<string, unknown>[];
  isError?: boolean;
  structuredContent?: unknown;
}

export type McpSessionState =
  | { kind: "starting" }
  | { kind: "ready" }
  | { kind: "down"; reason: string }
  | { kind: "closed" };

export interface McpSessionOptions {
  /** 配置里的服务器名：出现在错误与工具名里。 */
  name: string;
  command: string;
  args?: readonly string[];
  env?: Record<string, string>;
  cwd?: string;
  parentEnv?: Record<string, string | undefined>;
  /** 每个请求多久没有回答就放弃；默认 30 秒。 */
  timeoutMs?: number;
  /** 报着进度的请求最多等多久；默认 timeoutMs 的 4 倍。 */
  maxTimeoutMs?: number;
  maxLineBytes?: number;
  graceMs?: number;
  maxRestarts?: number;
  restartDelayMs?: number;
  onToolsChanged?(tools: readonly McpToolInfo[]): void;
  onState?(state: McpSessionState): void;
  /** 给人看的问题：坏行、超长的行、重启。 */
  onProblem?(problem: string): void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class McpSession {
  state: McpSessionState = { kind: "starting" };
  tools: readonly McpToolInfo[] = [];
  /** 到目前为止重启了几次。 */
  restarts = 0;
  private transport: StdioTransport | undefined;
  private rpc: RpcClient | undefined;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private relisting: Promise<void> | undefined;

  constructor(readonly options: McpSessionOptions) {}

  get timeoutMs(): number {
    return this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** 启动子进程、握手、列工具。失败时子进程已经关掉，错误里有 stderr 的尾巴。 */
  async start(): Promise<void> {
    // #region lab 17.3
    const transport = new StdioTransport({
      command: this.options.command,
      args: this.options.args,
      env: this.options.env,
      cwd: this.options.cwd,
      parentEnv: this.options.parentEnv,
      maxLineBytes: this.options.maxLineBytes,
      graceMs: this.options.graceMs,
      onMessage: (message) => rpc.handle(message),
      onProblem: (problem) => this.options.onProblem?.(`MCP 服务器 ${this.options.name}：${problem}`),
      onExit: (exit) => this.exited(transport, exit),
    });
    const rpc = new RpcClient({
      send: (message) => transport.send(message),
      onNotification: (method) => {
        if (method === "notifications/tools/list_changed") void this.relist();
      },
    });
    this.transport = transport;
    this.rpc = rpc;
    try {
      const init = await rpc.request(
        "initialize",
        { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "tiny-pi", version: "0.1.0" } },
        { timeoutMs: this.timeoutMs },
      );
      const version = isRecord(init) ? init.protocolVersion : undefined;
      if (version !== PROTOCOL_VERSION) {
        throw new Error(`服务器说的协议版本是 ${String(version)}，本客户端只说 ${PROTOCOL_VERSION}。`);
      }
      rpc.notify("notifications/initialized");
      this.tools = await this.listTools();
    } catch (error) {
      await transport.close();
      throw new Error(this.failure(`没能启动：${error instanceof Error ? error.message : String(error)}`, transport));
    }
    this.setState({ kind: "ready" });
    // #endregion
  }

  /** 把所有页的工具列出来。 */
  async listTools(): Promise<McpToolInfo[]> {
    // #region lab 17.3
    const tools: McpToolInfo[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await this.request("tools/list", cursor === undefined ? {} : { cursor });
      if (!isRecord(result) || !Array.isArray(result.tools)) throw new Error(`MCP 服务器 ${this.options.name} 的 tools/list 回答里没有 tools。`);
      tools.push(...(result.tools as McpToolInfo[]));
      if (typeof result.nextCursor !== "string") return tools;
      if (seen.has(result.nextCursor)) {
        throw new Error(`MCP 服务器 ${this.options.name} 的 tools/list 第二次给出游标 ${result.nextCursor}：停止翻页。`);
      }
      seen.add(result.nextCursor);
      cursor = result.nextCursor;
    }
    throw new Error(`MCP 服务器 ${this.options.name} 的工具超过 ${MAX_TOOL_PAGES} 页：停止翻页。`);
    // #endregion
  }

  /** 调用一个工具。服务器不在（崩了、正在重启、已关闭）时立刻失败，说明原因。 */
  async callTool(name: string, args: unknown, options: { signal?: AbortSignal } = {}): Promise<McpCallResult> {
    // #region lab 17.3
    if (this.state.kind !== "ready") throw new Error(`MCP 服务器 ${this.options.name} 现在不可用：${this.unavailableReason()}`);
    const result = await this.request("tools/call", { name, arguments: args ?? {} }, { signal: options.signal, progress: true });
    if (!isRecord(result) || !Array.isArray(result.content)) {
      throw new Error(`MCP 服务器 ${this.options.name} 的 tools/call 回答里没有 content。`);
    }
    return result as unknown as McpCallResult;
    // #endregion
  }

  /** 关掉：不再重启，拒绝待决的请求，按 stdin → SIGTERM → SIGKILL 的顺序关子进程。 */
  async close(): Promise<void> {
    clearTimeout(this.restartTimer);
    this.setState({ kind: "closed" });
    this.rpc?.close(`MCP 服务器 ${this.options.name} 的会话已经关闭。`);
    await this.transport?.close();
  }

  /** 子进程的 pid（测试用它确认进程真的没了）。 */
  get pid(): number | undefined {
    return this.transport?.pid;
  }

  // #region lab 17.3 辅助
  private request(method: string, params: Record<string, unknown>, extra: { signal?: AbortSignal; progress?: boolean } = {}): Promise<unknown> {
    if (this.state.kind === "down" || this.state.kind === "closed" || this.rpc === undefined) {
      return Promise.reject(new Error(`MCP 服务器 ${this.options.name} 现在不可用：${this.unavailableReason()}`));
    }
    return this.rpc.request(method, params, {
      timeoutMs: this.timeoutMs,
      maxTimeoutMs: this.options.maxTimeoutMs ?? 4 * this.timeoutMs,
      signal: extra.signal,
      onProgress: extra.progress ? () => {} : undefined,
    });
  }

  /** list_changed：重新列一遍；正在列的时候又变了，就等这一遍完了再列。 */
  private async relist(): Promise<void> {
    const previous = this.relisting;
    const next = (async () => {
      await previous;
      if (this.state.kind !== "ready") return;
      try {
        this.tools = await this.listTools();
        this.options.onToolsChanged?.(this.tools);
      } catch (error) {
        this.options.onProblem?.(`MCP 服务器 ${this.options.name} 没能重新列出工具：${error instanceof RpcError || error instanceof Error ? error.message : String(error)}`);
      }
    })();
    this.relisting = next;
    await next;
  }

  private exited(transport: StdioTransport, exit: { code: number | null; signal: NodeJS.Signals | null }): void {
    if (transport !== this.transport || this.state.kind === "closed") return;
    const how = exit.signal === null ? `退出码 ${String(exit.code)}` : `信号 ${exit.signal}`;
    const reason = this.failure(`退出了（${how}）。`, transport);
    this.rpc?.close(reason);
    if (this.state.kind === "starting") return; // start() 自己报错
    this.setState({ kind: "down", reason });
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    if (this.restarts >= (this.options.maxRestarts ?? DEFAULT_MAX_RESTARTS)) {
      this.options.onProblem?.(`MCP 服务器 ${this.options.name} 已经重启了 ${this.restarts} 次，不再重启。`);
      return;
    }
    const delay = (this.options.restartDelayMs ?? DEFAULT_RESTART_DELAY_MS) * 2 ** this.restarts;
    this.restarts += 1;
    this.restartTimer = setTimeout(() => {
      this.setState({ kind: "starting" });
      this.start().then(
        () => this.options.onToolsChanged?.(this.tools),
        (error: Error) => {
          if (this.state.kind === "closed") return;
          this.setState({ kind: "down", reason: error.message });
          this.scheduleRestart();
        },
      );
    }, delay);
  }

  // #endregion

  private unavailableReason(): string {
    if (this.state.kind === "down") return this.state.reason;
    if (this.state.kind === "starting") return "它还没有就绪（正在启动或重启）。";
    return "会话已经关闭。";
  }

  /** 关闭之后不再变：迟到的退出、重启都改不了它。 */
  private setState(state: McpSessionState): void {
    if (this.state.kind === "closed") return;
    this.state = state;
    this.options.onState?.(state);
  }

  /** 错误的原因加上 stderr 最后几行：服务器为什么失败，多半写在那里。 */
  private failure(what: string, transport: StdioTransport): string {
    const tail = transport.stderr.toString().trim().split("\n").slice(-5).join("\n");
    return `MCP 服务器 ${this.options.name} ${what}${tail === "" ? "" : `\nstderr 的最后几行：\n${tail}`}`;
  }
}
