/**
 * JSON-RPC 2.0 的客户端一头：发请求、按 id 配对回答、回答服务器发来的请求。
 *
 *   待决表    每个发出去的请求一项：id → 怎样兑现、怎样拒绝、它的计时器。回答来了按 id 找到它。
 *   超时      到时还没回答：发 notifications/cancelled 告诉服务器别做了，拒绝这一个请求；连接照旧能用。
 *   进度      带了 onProgress 的请求在 _meta 里给出 progressToken；每来一条 notifications/progress
 *             计时器重新开始，但从发出算起不超过 maxTimeoutMs：一个一直报进度的服务器也停得下来。
 *   取消      调用方的 signal 触发：同样发 notifications/cancelled，拒绝这一个请求。
 *   ping      服务器也能发请求。ping 的回答是空的结果 {}，不是“方法不存在”：回错了，服务器会以为客户端死了。
 *   关闭      close(reason) 一次拒绝所有待决的请求、清掉所有计时器；此后的请求立刻失败。
 */

export const METHOD_NOT_FOUND = -32601;

export type RpcErrorCode = "timeout" | "aborted" | "closed" | "remote";

/** 请求失败的原因：code 给程序分辨，message 给人看。 */
export class RpcError extends Error {
  constructor(
    readonly code: RpcErrorCode,
    message: string,
    /** 服务器回的错误码（code 是 remote 时）。 */
    readonly rpcCode?: number,
  ) {
    super(message);
    this.name = "RpcError";
  }
}

export interface RequestOptions {
  /** 多久没有回答（也没有进度）就放弃。 */
  timeoutMs: number;
  /** 进度最多把期限延到发出后的这么久；省略时等于 timeoutMs（进度不延期）。 */
  maxTimeoutMs?: number;
  signal?: AbortSignal;
  /** 给了它，请求就带上 progressToken，服务器的进度通知交给它。 */
  onProgress?: (params: Record<string, unknown>) => void;
}

export interface RpcPeer {
  /** 把一条消息交给传输（stdio 那一头写成一行）。 */
  send(message: Record<string, unknown>): void;
  /** 服务器发来的通知（没有 id 的消息），progress 除外。 */
  onNotification?(method: string, params: Record<string, unknown>): void;
}

interface Pending {
  method: string;
  resolve(result: unknown): void;
  reject(error: RpcError): void;
  onProgress: ((params: Record<string, unknown>) => void) | undefined;
  /** 进度重新计时用：从发出算起的最后期限。 */
  hardDeadline: number;
  timeoutMs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  cleanup(): void;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export class RpcClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private closedReason: string | undefined;

  constructor(private readonly peer: RpcPeer) {}

  /** 还有几个请求在等回答。 */
  get pendingCount(): number {
    return this.pending.size;
  }

  request(method: string, params: Record<string, unknown>, options: RequestOptions): Promise<unknown> {
    // #region lab 17.1
    if (this.closedReason !== undefined) return Promise.reject(new RpcError("closed", this.closedReason));
    if (options.signal?.aborted) return Promise.reject(new RpcError("aborted", `请求 ${method} 还没发出就被取消了。`));
    const id = this.nextId++;
    const meta = options.onProgress === undefined ? params : { ...params, _meta: { progressToken: id } };
    return new Promise<unknown>((resolve, reject) => {
      const onAbort = () => this.cancel(id, new RpcError("aborted", `请求 ${method} 被调用方取消了。`));
      const entry: Pending = {
        method,
        resolve,
        reject,
        onProgress: options.onProgress,
        hardDeadline: Date.now() + Math.max(options.maxTimeoutMs ?? options.timeoutMs, options.timeoutMs),
        timeoutMs: options.timeoutMs,
        timer: undefined,
        cleanup: () => options.signal?.removeEventListener("abort", onAbort),
      };
      this.pending.set(id, entry);
      this.arm(id, entry, options.timeoutMs);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.peer.send({ jsonrpc: "2.0", id, method, params: meta });
    });
    // #endregion
  }

  /** 不要回答的消息。 */
  notify(method: string, params: Record<string, unknown> = {}): void {
    if (this.closedReason === undefined) this.peer.send({ jsonrpc: "2.0", method, params });
  }

  /** 传输交来的一条消息：回答、服务器的请求、或通知。形状不对的消息忽略。 */
  handle(message: unknown): void {
    // #region lab 17.1
    if (!isRecord(message)) return;
    const params = isRecord(message.params) ? message.params : {};
    if (typeof message.method === "string") {
      if (message.id !== undefined) return this.answer(message.id, message.method);
      if (message.method === "notifications/progress") return this.progress(params);
      return this.peer.onNotification?.(message.method, params);
    }
    if (typeof message.id !== "number") return;
    const entry = this.pending.get(message.id);
    if (entry === undefined) return; // 已经超时或取消的请求迟到的回答
    this.settle(message.id, entry);
    if (isRecord(message.error)) {
      const code = typeof message.error.code === "number" ? message.error.code : undefined;
      entry.reject(new RpcError("remote", `服务器拒绝了 ${entry.method}：${String(message.error.message)}`, code));
    } else {
      entry.resolve(message.result);
    }
    // #endregion
  }

  /** 连接断了：每个待决的请求都以 closed 拒绝，计时器全部清掉。 */
  close(reason: string): void {
    // #region lab 17.1
    this.closedReason ??= reason;
    for (const [id, entry] of [...this.pending]) {
      this.settle(id, entry);
      entry.reject(new RpcError("closed", reason));
    }
    // #endregion
  }

  // #region lab 17.1 辅助
  private arm(id: number, entry: Pending, delay: number): void {
    entry.timer = setTimeout(() => {
      this.cancel(id, new RpcError("timeout", `请求 ${entry.method} 在 ${entry.timeoutMs} ms 内没有回答。`));
    }, delay);
  }

  /** 超时或取消：告诉服务器别做了，只拒绝这一个请求。 */
  private cancel(id: number, error: RpcError): void {
    const entry = this.pending.get(id);
    if (entry === undefined) return;
    this.settle(id, entry);
    this.notify("notifications/cancelled", { requestId: id, reason: error.message });
    entry.reject(error);
  }

  private settle(id: number, entry: Pending): void {
    this.pending.delete(id);
    clearTimeout(entry.timer);
    entry.cleanup();
  }

  private progress(params: Record<string, unknown>): void {
    const id = params.progressToken;
    const entry = typeof id === "number" ? this.pending.get(id) : undefined;
    if (entry === undefined || entry.onProgress === undefined) return;
    clearTimeout(entry.timer);
    this.arm(id as number, entry, Math.min(entry.timeoutMs, entry.hardDeadline - Date.now()));
    entry.onProgress(params);
  }

  private answer(id: unknown, method: string): void {
    if (method === "ping") {
      this.peer.send({ jsonrpc: "2.0", id, result: {} });
    } else {
      this.peer.send({ jsonrpc: "2.0", id, error: { code: METHOD_NOT_FOUND, message: `Method not found: ${method}` } });
    }
  }
  // #endregion
}
