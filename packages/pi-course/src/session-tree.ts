/**
 * 会话树：只追加的条目，加上一个 leaf 指针。
 *
 *   每个新条目都挂在当前 leaf 下面，然后 leaf 移到它身上。
 *   branch(id) 只移动 leaf：下一个条目挂在 id 下面，旧的那一支原封不动地留在文件里。
 *   从根走到 leaf 的那条路径，就是“这一次对话”；模型看到的上下文从这条路径构建。
 *
 * 写入一条接一条地交给存储，顺序与追加的顺序相同：父条目总是先于子条目落盘。
 * 存不下的条目当场拒绝，不进树也不进队列；一次写入失败之后，树不再接受新的条目。
 */

import { randomUUID } from "node:crypto";

import { interactionBoundaries, type ContextItem } from "./compaction.js";
import { createBranchSummaryMessage, createCompactionSummaryMessage, createCustomMessage } from "./messages.js";
import {
  assertStorable,
  SessionStoreError,
  type BranchSummaryEntry,
  type CompactionEntry,
  type CustomEntry,
  type CustomMessageEntry,
  type LabelEntry,
  type SessionEntry,
  type SessionMessageEntry,
} from "./session-entries.js";
import type { SessionStore, TornLine } from "./session-store.js";
import { currentSystemMessage, text, type AgentMessage, type TextContent, type ToolCall, type ToolResultMessage } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface SessionTreeOptions {
  /** 条目的时刻；测试传入固定值。 */
  now?: () => number;
  /** 新条目的 id；省略时取随机的 8 位十六进制。测试可以传一个计数器。 */
  newId?: () => string;
}

/** 新条目里由调用方给出的那部分：公共字段由树来填。 */
type EntryBody<E extends SessionEntry> = E extends SessionEntry ? Omit<E, "id" | "parentId" | "timestamp"> : never;

function randomId(): string {
  return randomUUID().slice(0, 8);
}

// ── 纯函数：条目 → 上下文 ───────────────────────────────────────

/**
 * 一个条目在模型上下文里变成什么。按 type 穷尽：以后加了新的条目种类而这里没处理，tsc 报错。
 * custom 与 label 只属于应用和界面，什么也不贡献。
 */
export function entryToMessages(entry: SessionEntry): AgentMessage[] {
  // #region lab 10.3
  switch (entry.type) {
    case "message":
      return [entry.message];
    case "custom_message":
      return [createCustomMessage(entry.customType, entry.content, entry.display, entry.details, Date.parse(entry.timestamp))];
    // #endregion
    // #region lab 11.2 扩展
    case "branch_summary":
      return [createBranchSummaryMessage(entry.summary, entry.fromId, Date.parse(entry.timestamp))];
    case "compaction": // 它决定的是整段历史的开头，由 contextItems 处理
    // #endregion
    // #region lab 10.3
    case "custom":
    case "label":
      return [];
    default: {
      const unhandled: never = entry;
      throw new Error(`没有处理的条目种类：${JSON.stringify(unhandled)}`);
    }
  }
  // #endregion
}

/** 会话写不进去了：说出第一次失败的原因，之后的一切都拒绝。AgentSession 也用它。 */
export function unwritable(cause: unknown): SessionStoreError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new SessionStoreError("unwritable", `会话的上一次写入失败了（${reason}）：记录已经不完整，这个会话不再接受新的内容。排除问题之后重新打开会话。`, { cause });
}

/** 补给没有结果的调用：告诉模型这次调用没有下文（写给模型看，所以是英文）。 */
export const UNAVAILABLE_RESULT = "Tool result unavailable: the session ended before this call completed.";

function unavailableResult(call: ToolCall, timestamp: number): ToolResultMessage {
  return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text(UNAVAILABLE_RESULT)], isError: true, timestamp };
}

/**
 * 让每个工具调用恰好有一个结果，Provider 才肯收这份上下文。进程死在工具运行时（或结果那一行没写成），
 * 路径上就留下没有结果的调用：紧跟在 assistant 后面的结果照原样排，缺的各补一条 isError 结果；
 * 找不到调用（或来晚了）的结果丢掉。补上的结果不写进文件：它每次都从同一条路径推出来，时间戳取那条 assistant 的。
 */
export function pairToolCalls(messages: readonly AgentMessage[]): AgentMessage[] {
  // #region lab 10.3
  const paired: AgentMessage[] = [];
  let waiting: ToolCall[] = [];
  let askedAt = 0;
  const settle = () => {
    for (const call of waiting) paired.push(unavailableResult(call, askedAt));
    waiting = [];
  };
  for (const message of messages) {
    if (message.role === "toolResult") {
      const call = waiting.find((candidate) => candidate.id === message.toolCallId);
      if (call === undefined) continue;
      waiting = waiting.filter((candidate) => candidate !== call);
      paired.push(message);
      continue;
    }
    settle();
    paired.push(message);
    if (message.role === "assistant") {
      waiting = message.content.filter((block): block is ToolCall => block.type === "toolCall");
      askedAt = message.timestamp;
    }
  }
  settle();
  return paired;
  // #endregion
}

/**
 * 根到叶的路径 → 这次请求之前的上下文，每项记着来自哪个条目（压缩要靠它写 firstKeptEntryId）。
 * 路径上最后一个压缩条目说了算：firstKeptEntryId 之前的部分换成“system 重放 + 一条 compactionSummary”，
 * 保留的条目与压缩之后的条目照常贡献。
 */
export function contextItems(path: readonly SessionEntry[]): ContextItem[] {
  // #region lab 11.2
  const itemsOf = (entry: SessionEntry): ContextItem[] => entryToMessages(entry).map((message) => ({ entryId: entry.id, message }));
  const at = path.findLastIndex((entry) => entry.type === "compaction");
  const compaction = path[at];
  if (compaction === undefined || compaction.type !== "compaction") return path.flatMap(itemsOf);
  const keptFrom = path.findIndex((entry) => entry.id === compaction.firstKeptEntryId);
  if (keptFrom < 0 || keptFrom > at) {
    throw new Error(`压缩条目 ${compaction.id} 的 firstKeptEntryId ${compaction.firstKeptEntryId} 不在它之前的路径上。`);
  }
  // 被替换的部分里的 system 不能跟着消失：指令靠重放得到，重放的结果放在最前面。
  const replay = currentSystemMessage(path.slice(0, keptFrom).flatMap(entryToMessages));
  const head: ContextItem[] = replay === undefined ? [] : [{ entryId: compaction.id, message: replay }];
  const summary = createCompactionSummaryMessage(compaction.summary, compaction.tokensBefore, Date.parse(compaction.timestamp));
  return [...head, { entryId: compaction.id, message: summary }, ...path.slice(keptFrom, at).flatMap(itemsOf), ...path.slice(at + 1).flatMap(itemsOf)];
  // #endregion
}

/**
 * 压缩条目写下之前先检查切点：一写进文件，以后每次打开都要从这里构建上下文。
 * firstKeptEntryId 必须在当前路径上（否则构建时找不到它），而且在路径构建出的上下文里
 * 开启一段交互（否则保留的部分以一条工具结果开头，它的调用却被摘要掉了）。
 */
export function checkCompactionCut(path: readonly SessionEntry[], firstKeptEntryId: string): void {
  if (!path.some((entry) => entry.id === firstKeptEntryId)) {
    throw new Error(`不能压缩：firstKeptEntryId ${firstKeptEntryId} 不在当前路径上，压缩只能保留当前路径上的条目。`);
  }
  const items = contextItems(path);
  const at = items.findIndex((item) => item.entryId === firstKeptEntryId);
  if (!interactionBoundaries(items.map((item) => item.message)).includes(at)) {
    throw new Error(`不能压缩：firstKeptEntryId ${firstKeptEntryId} 不是一段交互的开头，从它保留会把工具调用和它的结果分到切点两边。`);
  }
}

// ── 会话树 ──────────────────────────────────────────────────────

export class SessionTree {
  /** 打开时发现并忽略的残行（只在 JSONL 文件上可能出现）。 */
  readonly torn: TornLine | undefined;
  private readonly store: SessionStore;
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly entries: SessionEntry[];
  private readonly byId = new Map<string, SessionEntry>();
  private readonly labels = new Map<string, string>();
  private leafId: string | null = null;
  /** 排队中的写入：每一条都接在前一条后面。 */
  private writes: Promise<void> = Promise.resolve();
  /** 第一次写入失败的原因；有了它，树不再接受新的条目。 */
  private failure: unknown;

  /** 从存储里读回全部条目（读不回来就抛出，不会得到一棵少了几条的树）。leaf 落在最后一条上。 */
  static async open(store: SessionStore, options: SessionTreeOptions = {}): Promise<SessionTree> {
    const loaded = await store.load();
    return new SessionTree(store, loaded.entries, loaded.torn, options);
  }

  private constructor(store: SessionStore, entries: SessionEntry[], torn: TornLine | undefined, options: SessionTreeOptions) {
    this.store = store;
    this.torn = torn;
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomId;
    this.entries = [];
    for (const entry of entries) this.remember(entry);
  }

  // ── 读 ──

  getLeafId(): string | null {
    return this.leafId;
  }

  getEntry(id: string): SessionEntry | undefined {
    return this.byId.get(id);
  }

  /** 全部条目，按写下的顺序（所有分支都在里面）。 */
  getEntries(): readonly SessionEntry[] {
    return [...this.entries];
  }

  getLabel(id: string): string | undefined {
    return this.labels.get(id);
  }

  /** 从根到 fromId（默认是 leaf）的路径，根在前。 */
  getBranch(fromId: string | null = this.leafId): SessionEntry[] {
    // #region lab 10.3
    const path: SessionEntry[] = [];
    let current = fromId === null ? undefined : this.byId.get(fromId);
    while (current !== undefined) {
      path.push(current);
      current = current.parentId === null ? undefined : this.byId.get(current.parentId);
    }
    return path.reverse();
    // #endregion
  }

  /** 模型此刻该看到的对话：沿当前路径，把每个条目换成它贡献的消息，每个工具调用都配上结果。 */
  buildSessionContext(): AgentMessage[] {
    // #region lab 11.2 扩展
    // 第 11 章起经过 contextItems：压缩条目会换掉它之前的历史；每个工具调用照样配上结果。
    return pairToolCalls(contextItems(this.getBranch()).map((item) => item.message));
    // #endregion
  }

  // ── 改 leaf ──

  /** 从一个较早的条目分叉：只移动 leaf，什么也不删。下一个条目挂在它下面。 */
  branch(entryId: string): void {
    // #region lab 10.3
    if (!this.byId.has(entryId)) throw new Error(`会话里没有 id 为 ${entryId} 的条目，不能从它分叉。`);
    this.leafId = entryId;
    // #endregion
  }

  // ── 追加 ──

  appendMessage(message: AgentMessage): SessionMessageEntry {
    return this.append<SessionMessageEntry>({ type: "message", message });
  }

  appendCustomEntry<T>(customType: string, data?: T): CustomEntry<T> {
    const body: EntryBody<CustomEntry> = { type: "custom", customType };
    if (data !== undefined) body.data = data;
    return this.append<CustomEntry>(body) as CustomEntry<T>;
  }

  appendCustomMessageEntry<T>(customType: string, content: string | TextContent[], display: boolean, details?: T): CustomMessageEntry<T> {
    const body: EntryBody<CustomMessageEntry> = { type: "custom_message", customType, content, display };
    if (details !== undefined) body.details = details;
    return this.append<CustomMessageEntry>(body) as CustomMessageEntry<T>;
  }

  /**
   * 压缩：记下摘要和从哪里开始原样保留。之前的条目一条不删。
   * 字段按读回时的规矩先查一遍，切点不对也拒绝：写得进去的，以后都读得回来。
   */
  appendCompaction(summary: string, firstKeptEntryId: string, tokensBefore: number): CompactionEntry {
    if (summary === "") throw new Error("不能压缩：摘要是空的，会话里不能写一份空摘要。");
    if (!Number.isSafeInteger(tokensBefore) || tokensBefore < 0) throw new Error(`不能压缩：tokensBefore 应当是非负整数，这里是 ${tokensBefore}。`);
    if (!this.byId.has(firstKeptEntryId)) throw new Error(`会话里没有 id 为 ${firstKeptEntryId} 的条目，不能从它开始保留。`);
    checkCompactionCut(this.getBranch(), firstKeptEntryId);
    return this.append<CompactionEntry>({ type: "compaction", summary, firstKeptEntryId, tokensBefore });
  }

  /** 像 branch(fromId) 一样移动 leaf，再把被离开那条分支的摘要挂在 fromId 下面。空摘要不写，leaf 也不动。 */
  branchWithSummary(fromId: string, summary: string): BranchSummaryEntry {
    if (summary === "") throw new Error("不能写分支摘要：摘要是空的，会话里不能写一份空摘要。");
    this.branch(fromId);
    return this.append<BranchSummaryEntry>({ type: "branch_summary", fromId, summary });
  }

  /** 给 targetId 贴上（或用 undefined 撤掉）书签。书签本身也是一个条目，挂在 leaf 下面。 */
  appendLabelChange(targetId: string, label: string | undefined): LabelEntry {
    if (!this.byId.has(targetId)) throw new Error(`会话里没有 id 为 ${targetId} 的条目，不能给它贴书签。`);
    return this.append<LabelEntry>({ type: "label", targetId, label });
  }

  /** 等排队中的写入全部落盘；有一次写入失败，就以那次的错误 reject。 */
  async flush(): Promise<void> {
    await this.writes;
  }

  /** 等排队中的写入走完；有一次失败过，就抛出 unwritable（带着那次的原因）。 */
  async assertWritable(): Promise<void> {
    await this.writes.catch(() => {});
    this.refuseIfFailed();
  }

  /**
   * 新条目：填上公共字段，先进内存里的索引（调用方立刻就能读到），再排进写入队列。
   * 存不下的条目当场抛出 unstorable，树和队列都不动；写入失败过的树抛出 unwritable。
   */
  private append<E extends SessionEntry>(body: EntryBody<E>): E {
    // #region lab 10.3
    this.refuseIfFailed();
    const entry = {
      ...body,
      id: this.uniqueId(),
      parentId: this.leafId,
      timestamp: new Date(this.now()).toISOString(),
    } as unknown as E;
    // 先查能不能存：一个 BigInt 若在队列里才失败，链条从此 rejected，后面的条目就都悄悄丢了。
    assertStorable(entry, `${entry.type} 条目`);
    this.remember(entry);
    // 接在前一次写入后面：父条目一定先落盘。前一次失败了，这一次就不再写（链条一直是 rejected）。
    const write = this.writes.then(() => this.store.append(entry));
    // 失败留给 flush() 报告；这里记下原因，之后的追加当场拒绝。
    write.catch((error: unknown) => {
      this.failure ??= error;
    });
    this.writes = write;
    return entry;
    // #endregion
  }

  /** 写入失败过的树不再接受任何东西：记录已经缺了一段，再往上接只会让缺口藏得更深。 */
  private refuseIfFailed(): void {
    // #region lab 10.3
    if (this.failure === undefined) return;
    throw unwritable(this.failure);
    // #endregion
  }

  // #region lab 10.3 辅助
  private uniqueId(): string {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const id = this.newId();
      if (!this.byId.has(id)) return id;
    }
    return randomUUID();
  }
  // #endregion

  /** 把一个条目记进索引，leaf 跟到它身上；书签条目同时更新书签表。 */
  private remember(entry: SessionEntry): void {
    // #region lab 10.3
    this.entries.push(entry);
    this.byId.set(entry.id, entry);
    this.leafId = entry.id;
    if (entry.type === "label") {
      if (entry.label === undefined || entry.label === "") this.labels.delete(entry.targetId);
      else this.labels.set(entry.targetId, entry.label);
    }
    // #endregion
  }
}
