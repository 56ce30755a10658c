/**
 * 不联网的模型：按顺序重放写好的 turn，但交出的是和真实 Provider 一样的事件流。
 * Agent 循环、演示和测试因此可以离线运行，而且每次运行的事件都逐字相同。
 */

import { AssistantMessageEventStream } from "./event-stream.js";
import {
  assistantMessage,
  text,
  type AgentContext,
  type AssistantContent,
  type AssistantMessage,
  type DoneReason,
  type Model,
  type ModelEvent,
  type StreamOptions,
  type ToolCall,
  type Usage,
} from "./types.js";

// ── 脚本 ────────────────────────────────────────────────────────

/** 一次正常结束的回复：content 按播放顺序排列，stopReason 由 done 事件带出。 */
export interface ReplyTurn {
  kind: "reply";
  content: AssistantContent[];
  stopReason: DoneReason;
  /** 省略时记为全 0；脚本没有真实的 token 可数。 */
  usage?: Usage;
}

/** 一次失败的调用：先播出 partialText（如果有），再以 errorMessage 结束。 */
export interface ErrorTurn {
  kind: "error";
  errorMessage: string;
  partialText?: string;
}

/** 一次 stream() 调用要播放的内容。 */
export type ScriptedTurn = ReplyTurn | ErrorTurn;

export interface ScriptedModelOptions {
  /** 写进每条 AssistantMessage 的 model 字段。 */
  id?: string;
  /** 时钟。测试传入固定值，timestamp 才能逐字比较。 */
  now?: () => number;
}

// ── 事件计划：把一个 turn 展开成事件序列（不碰时间，也不碰流） ───

/** partial 一交出去就归消费者所有：每个事件拿自己的深拷贝，后面的事件改不到它。 */
function snapshot(message: AssistantMessage): AssistantMessage {
  return structuredClone(message);
}

function failedEvent(partial: AssistantMessage, errorMessage: string): ModelEvent {
  const error: AssistantMessage = { ...snapshot(partial), stopReason: "error", errorMessage };
  return { type: "error", reason: "error", error };
}

function abortedEvent(partial: AssistantMessage): ModelEvent {
  const error: AssistantMessage = {
    ...snapshot(partial),
    stopReason: "aborted",
    errorMessage: "调用方取消了这次请求",
  };
  return { type: "error", reason: "aborted", error };
}

/**
 * 一个 tool call 分两步出现：先是参数原文（arguments 仍为空），原文完整后才解析。
 * draft 是这次规划私有的草稿，对外只交出它的快照。
 */
function toolCallEvents(call: ToolCall, contentIndex: number, draft: AssistantMessage): ModelEvent[] {
  const raw = JSON.stringify(call.arguments ?? {});
  draft.content.push({ type: "toolCall", id: call.id, name: call.name, arguments: {}, rawArguments: raw });
  const delta: ModelEvent = { type: "toolcall_delta", contentIndex, delta: raw, partial: snapshot(draft) };

  // 解析结果取代原文：最终消息里的 tool call 不再需要 rawArguments。
  const finished: ToolCall = { type: "toolCall", id: call.id, name: call.name, arguments: JSON.parse(raw) };
  draft.content[contentIndex] = finished;
  const end: ModelEvent = {
    type: "toolcall_end",
    contentIndex,
    toolCall: structuredClone(finished),
    partial: snapshot(draft),
  };
  return [delta, end];
}

/** start 加上每个 content block 的增量事件；返回事件和播完之后的草稿。 */
function contentEvents(
  content: readonly AssistantContent[],
  blank: AssistantMessage,
): { events: ModelEvent[]; draft: AssistantMessage } {
  const draft: AssistantMessage = { ...blank, content: [] };
  const events: ModelEvent[] = [{ type: "start", partial: snapshot(draft) }];
  for (const [contentIndex, block] of content.entries()) {
    if (block.type === "text") {
      draft.content.push(text(block.text));
      events.push({ type: "text_delta", contentIndex, delta: block.text, partial: snapshot(draft) });
    } else {
      events.push(...toolCallEvents(block, contentIndex, draft));
    }
  }
  return { events, draft };
}

function replyEvents(turn: ReplyTurn, blank: AssistantMessage): ModelEvent[] {
  const { events, draft } = contentEvents(turn.content, blank);
  const message: AssistantMessage = {
    ...snapshot(draft),
    usage: { ...(turn.usage ?? draft.usage) },
    stopReason: turn.stopReason,
  };
  return [...events, { type: "done", reason: turn.stopReason, message }];
}

function errorTurnEvents(turn: ErrorTurn, blank: AssistantMessage): ModelEvent[] {
  const before = turn.partialText === undefined ? [] : [text(turn.partialText)];
  const { events, draft } = contentEvents(before, blank);
  return [...events, failedEvent(draft, turn.errorMessage)];
}

// ── 检查脚本：类型管得到源码，管不到从 JSON 读进来的 turn ─────────

const DONE_REASONS: readonly unknown[] = ["stop", "length", "toolUse"];

function blockProblem(block: unknown, at: number): string | undefined {
  const { type, text: words, id, name } = (block ?? {}) as Record<string, unknown>;
  if (type === "text" && typeof words === "string") return undefined;
  if (type === "toolCall" && typeof id === "string" && typeof name === "string") return undefined;
  return `content[${at}] 既不是带 text 的文字块，也不是带 id 和 name 的工具调用`;
}

/**
 * 返回这个 turn 的第一处毛病，没有毛病返回 undefined。
 * 不先检查的话，不认识的 kind 规划不出任何事件，流永远等不到终态。
 */
function turnProblem(turn: unknown): string | undefined {
  if (typeof turn !== "object" || turn === null) return "turn 不是一个对象";
  const fields = turn as Record<string, unknown>;
  if (fields.kind === "error") {
    if (typeof fields.errorMessage !== "string") return "error turn 的 errorMessage 不是字符串";
    if (fields.partialText !== undefined && typeof fields.partialText !== "string") return "partialText 不是字符串";
    return undefined;
  }
  if (fields.kind !== "reply") return `kind 只能是 "reply" 或 "error"，这里是 ${JSON.stringify(fields.kind)}`;
  if (!DONE_REASONS.includes(fields.stopReason)) {
    return `reply turn 的 stopReason 只能是 stop、length 或 toolUse，这里是 ${JSON.stringify(fields.stopReason)}`;
  }
  if (!Array.isArray(fields.content)) return "reply turn 的 content 不是数组";
  return fields.content.map(blockProblem).find((problem) => problem !== undefined);
}

/** 一个 turn 的完整事件序列，最后一个一定是 done 或 error。 */
function planTurn(turn: ScriptedTurn, blank: AssistantMessage): ModelEvent[] {
  switch (turn.kind) {
    case "reply":
      return replyEvents(turn, blank);
    case "error":
      return errorTurnEvents(turn, blank);
  }
}

/** 让出到事件循环的下一轮：调用方的微任务（读事件、按取消）先跑完。 */
function yieldToCaller(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

// ── 模型 ────────────────────────────────────────────────────────

export class ScriptedModel implements Model {
  readonly provider = "scripted";
  readonly id: string;
  private readonly turns: readonly ScriptedTurn[];
  private readonly now: () => number;
  private readonly recorded: AgentContext[] = [];
  private played = 0;

  constructor(turns: readonly ScriptedTurn[], options: ScriptedModelOptions = {}) {
    this.turns = turns;
    this.id = options.id ?? "scripted-v1";
    this.now = options.now ?? Date.now;
  }

  /** 每次 stream() 收到的 context，按调用顺序保存调用那一刻的深拷贝。 */
  get requests(): readonly AgentContext[] {
    return this.recorded;
  }

  /** 从不抛异常：任何失败都以 error 终态送进流里，result() 总会兑现。 */
  stream(context: AgentContext, options: StreamOptions = {}): AssistantMessageEventStream {
    // 调用方之后还会往同一个 messages 数组追加消息；记录必须停在调用这一刻。
    this.recorded.push(structuredClone(context));
    const output = new AssistantMessageEventStream();
    const blank = this.blankMessage();
    // 开始前就已取消的请求没有送到模型：不消耗 turn，留给下一次调用。
    const plan = options.signal?.aborted ? [] : this.planNextCall(blank);
    void this.play(output, plan, blank, options.signal);
    return output;
  }

  private blankMessage(): AssistantMessage {
    // 生成结束前 stopReason 还没有答案：partial 上先占位 "stop"，只有终态消息里的值算数。
    return assistantMessage([], "stop", { provider: this.provider, model: this.id, timestamp: this.now() });
  }

  private planNextCall(blank: AssistantMessage): ModelEvent[] {
    const call = this.recorded.length;
    const turn = this.turns[this.played];
    if (turn === undefined) {
      const count = this.turns.length;
      return [failedEvent(blank, `脚本没有更多 turn 了：这是第 ${call} 次调用 stream()，脚本只准备了 ${count} 个 turn。`)];
    }
    this.played += 1;
    const problem = turnProblem(turn);
    if (problem !== undefined) return [failedEvent(blank, `脚本第 ${this.played} 个 turn 写错了：${problem}`)];
    try {
      return planTurn(turn, blank);
    } catch (error) {
      // 例如参数里有无法序列化的值：坏脚本也只能变成 error 终态，不能让 stream() 抛出。
      return [failedEvent(blank, `脚本第 ${this.played} 个 turn 无法播放：${String(error)}`)];
    }
  }

  private async play(
    output: AssistantMessageEventStream,
    plan: readonly ModelEvent[],
    blank: AssistantMessage,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    // 先让出一次：stream() 已经返回，调用方来得及挂上消费者。
    await yieldToCaller();
    let latest = blank;
    for (const event of plan) {
      if (signal?.aborted) break;
      output.push(event);
      if (event.type === "done" || event.type === "error") return;
      latest = event.partial;
      // 每个事件之后再让一次：调用方处理完它（也许顺手取消）才轮到下一个。
      await yieldToCaller();
    }
    // 没有播到终态就停下，只能是因为取消：已经送出的内容留在 aborted 消息里。
    output.push(abortedEvent(latest));
  }
}
