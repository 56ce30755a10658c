/**
 * 持久会话：第 09 章的 Agent 跑在记录上。
 *
 *   每次请求的消息都从记录现拼（context.ts），只看已提交的条目；
 *   流式回复每隔至少 checkpointMs 毫秒存一个检查点（pi.partial），进程死在半路时，
 *     重新打开会把最后一个检查点记成一条 aborted 回复：界面看得到，模型看不到；
 *   工具调用的意图（带着调用的那条回复）提交之后工具才开始跑；结果随后提交，下一次请求等它提交完才拼；
 *   重新打开时还没有结果的调用：safe 的工具再跑一次，其余的记一条 interrupted 的错误结果。
 *     再跑一次 rm 或者再付一次款不是重试：不知道第一次做到了哪一步，只有声明过可以重跑的工具才重跑。
 */

import type { AgentEvent } from "../agent-loop.js";
import { Agent } from "../agent.js";
import { executeToolCall, ToolRegistry, type AgentTool } from "../tools.js";
import { text, userMessage, type AssistantMessage, type Model, type ToolCall, type ToolResultMessage } from "../types.js";
import { context, rangeOf, systemDraft, type ContextOptions, type ContextView } from "./context.js";
import { contribute, newestEdits, type EntryDraft, type EntryRecord } from "./entries.js";
import type { DurableLog, LogListener } from "./store.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface DurableSessionOptions {
  log: DurableLog;
  model: Model;
  tools?: readonly AgentTool<any>[];
  /** 系统提示词的各段（段名 → 文字）：每次提问之前与模型已经看到的比较，只写变了的段。 */
  system: () => Readonly<Record<string, string>>;
  /** 可以放心再跑一次的工具（只读的那些）；不在这里的，重新打开时不再跑。 */
  safeTools?: readonly string[];
  /** 两个检查点之间至少隔多少毫秒；默认 100。 */
  checkpointMs?: number;
  now?: () => number;
}

/** 重新打开时做了什么。 */
export interface Recovery {
  /** 从检查点记成 aborted 的回复。 */
  aborted: AssistantMessage[];
  /** 再跑了一次的调用（safe 的工具）。 */
  rerun: ToolCall[];
  /** 记成 interrupted 的调用。 */
  interrupted: ToolCall[];
}

export const DEFAULT_CHECKPOINT_MS = 100;

/** 从检查点恢复的回复写进 errorMessage 的原文。 */
export const RECOVERED_PARTIAL = "The process stopped while this reply was streaming; this is the last checkpoint.";

/** 没有重跑的调用得到的结果原文（给模型看，所以是英文）。 */
export function interruptedText(name: string): string {
  return `Tool ${name} was interrupted: the process stopped before it reported a result. It was not run again, because running it twice may not be safe; check its effect before retrying.`;
}

const NOT_RECORDED = "Tool call not run: the session log could not confirm that this call was stored.";

/** 记录里最后一个流式检查点，如果它之后没有一条 assistant 回复（也就是那次流没有收尾）。 */
export function danglingPartial(entries: readonly EntryRecord[]): AssistantMessage | undefined {
  // #region lab 19.5
  let partial: AssistantMessage | undefined;
  for (const entry of entries) {
    if (entry.kind === "pi.partial") partial = (entry.data as { partial: AssistantMessage }).partial;
    else if (entry.model?.some((message) => message.role === "assistant")) partial = undefined;
  }
  return partial;
  // #endregion
}

/** 范围里还没有结果的调用，按记录里的顺序。 */
export function danglingCalls(entries: readonly EntryRecord[]): ToolCall[] {
  // #region lab 19.5
  const edits = newestEdits(entries);
  const messages = rangeOf(entries).flatMap((entry) => contribute(entry, edits.get(entry.id)));
  const answered = new Set(messages.flatMap((message) => (message.role === "toolResult" ? [message.toolCallId] : [])));
  return messages
    .flatMap((message) => (message.role === "assistant" ? message.content : []))
    .filter((block): block is ToolCall => block.type === "toolCall" && !answered.has(block.id));
  // #endregion
}

function interruptedResult(call: ToolCall, timestamp: number): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(interruptedText(call.name))],
    isError: true,
    details: { kind: "interrupted" },
    timestamp,
  };
}

// ── 会话 ────────────────────────────────────────────────────────

export class DurableSession {
  readonly log: DurableLog;
  readonly recovery: Recovery;
  private readonly options: DurableSessionOptions;
  private readonly now: () => number;
  private readonly agent: Agent;
  private lastCheckpoint = Number.NEGATIVE_INFINITY;

  private constructor(options: DurableSessionOptions, recovery: Recovery) {
    this.options = options;
    this.log = options.log;
    this.now = options.now ?? Date.now;
    this.recovery = recovery;
    this.agent = new Agent({
      model: options.model,
      tools: options.tools ?? [],
      now: this.now,
      // 每次请求都从记录拼：只有已提交的条目进得去。
      transformContext: async () => {
        await this.log.settled();
        return [...context(this.log.entries).messages];
      },
      beforeToolCall: async () => this.intentStored(),
    });
    this.agent.subscribe((event) => this.record(event));
  }

  /** 打开一份记录上的会话，先做恢复：检查点记成 aborted，没有结果的调用重跑或记成 interrupted。 */
  static async open(options: DurableSessionOptions): Promise<DurableSession> {
    const now = options.now ?? Date.now;
    const recovery: Recovery = { aborted: [], rerun: [], interrupted: [] };
    // #region lab 19.5
    const partial = danglingPartial(options.log.entries);
    if (partial !== undefined) {
      const aborted: AssistantMessage = { ...partial, stopReason: "aborted", errorMessage: RECOVERED_PARTIAL };
      await options.log.append([{ kind: "message", model: [aborted], data: { recovered: "partial" } }]);
      recovery.aborted.push(aborted);
    }
    const safe = new Set(options.safeTools ?? []);
    const registry = new ToolRegistry(options.tools ?? []);
    for (const call of danglingCalls(options.log.entries)) {
      if (safe.has(call.name)) {
        const result = await executeToolCall(registry, call, { signal: new AbortController().signal, now });
        await options.log.append([{ kind: "message", model: [result], data: { recovered: "rerun" } }]);
        recovery.rerun.push(call);
      } else {
        await options.log.append([{ kind: "message", model: [interruptedResult(call, now())], data: { recovered: "interrupted" } }]);
        recovery.interrupted.push(call);
      }
    }
    // #endregion
    return new DurableSession(options, recovery);
  }

  get entries(): readonly EntryRecord[] {
    return this.log.entries;
  }

  context(options: ContextOptions = {}): ContextView {
    return context(this.log.entries, options);
  }

  /** 订阅已提交的条目：每次提交之后拿到那一批。 */
  subscribe(listener: LogListener): () => void {
    return this.log.subscribe(listener);
  }

  /** 问一句：用户的话（与变了的系统段）作为一批提交之后，Agent 才开始跑。 */
  async prompt(input: string): Promise<void> {
    const timestamp = this.now();
    const drafts: EntryDraft[] = [{ kind: "message", model: [userMessage(input, timestamp)] }];
    const system = systemDraft(this.log.entries, this.options.system(), timestamp);
    if (system !== undefined) drafts.push(system);
    await this.log.append(drafts);
    await this.run(input);
  }

  /** 记录以工具结果结尾（例如恢复之后）：不加新的话，让模型接着回答。 */
  async resume(): Promise<void> {
    const last = this.context().messages.at(-1);
    if (last?.role !== "toolResult") return;
    // 交给 Agent 一条空的系统消息只是为了开始一次运行：它不进记录，请求仍从记录拼出来。
    await this.run([{ role: "system", content: "", timestamp: this.now() }]);
  }

  abort(): void {
    this.agent.abort();
  }

  private async run(input: Parameters<Agent["prompt"]>[0]): Promise<void> {
    this.lastCheckpoint = Number.NEGATIVE_INFINITY;
    await this.agent.prompt(input);
    await this.log.settled();
    if (this.log.poisoned !== undefined) throw this.log.poisoned;
  }

  /** beforeToolCall：带着这个调用的回复提交了，工具才跑；记录停用了就不跑。 */
  private async intentStored(): Promise<{ block: true; reason: string } | undefined> {
    // #region lab 19.5
    await this.log.settled();
    return this.log.poisoned === undefined ? undefined : { block: true, reason: NOT_RECORDED };
    // #endregion
  }

  /** Agent 的事件 → 记录里的条目。用户的话与系统段已经在 prompt() 里提交过，这里不再写。 */
  private record(event: AgentEvent): void {
    // #region lab 19.5
    if (event.type === "message_update") {
      const at = this.now();
      if (at - this.lastCheckpoint < (this.options.checkpointMs ?? DEFAULT_CHECKPOINT_MS)) return;
      this.lastCheckpoint = at;
      this.write({ kind: "pi.partial", data: { partial: event.message } });
    } else if (event.type === "message_end") {
      const message = event.message;
      if (message.role === "assistant" || message.role === "toolResult") this.write({ kind: "message", model: [message] });
    }
    // #endregion
  }

  private write(draft: EntryDraft): void {
    // 提交失败就是会话停用：下一个工具不跑（intentStored），下一次请求拼不出来，prompt() 抛出同一句错误。
    this.log.append([draft]).catch(() => undefined);
  }
}
