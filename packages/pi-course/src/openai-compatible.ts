/**
 * 接上真正的模型：把课程消息翻译成 OpenAI 兼容的 chat completions 请求，
 * 再把流式回复翻译回第 04 章的那套事件。消费者分不出对面是脚本还是网络。
 */

import { AssistantMessageEventStream } from "./event-stream.js";
import { readSseData } from "./sse.js";
import {
  assistantMessage,
  currentSystemPrompt,
  text,
  textOf,
  type AgentContext,
  type AgentMessage,
  type AssistantMessage,
  type DoneReason,
  type ErrorReason,
  type Model,
  type ModelEvent,
  type StreamOptions,
  type ToolCall,
  type ToolDefinition,
  type Usage,
} from "./types.js";

// ── 线上格式：请求体（只写课程用到的字段） ──────────────────────

export interface ChatToolCall {
  id: string;
  type: "function";
  /** 线上的参数是一段 JSON 文本，不是对象。 */
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  // 只有工具调用、没有文字时 content 为 null。
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatTool {
  type: "function";
  function: ToolDefinition;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream: true;
  /** 请服务器在流的末尾多送一块 usage，否则流式回复不报 token 数。 */
  stream_options: { include_usage: true };
  tools?: ChatTool[];
}

// ── 线上格式：流里的 chunk（服务器可能省略任何字段） ────────────

interface ChunkToolCall {
  /** 这一片属于第几个工具调用：片段可以交错到达，只有 index 把它们归队。 */
  index: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface ChunkUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
}

interface ChatChunk {
  choices?: Array<{
    delta?: { content?: string | null; tool_calls?: ChunkToolCall[] };
    finish_reason?: string | null;
  }>;
  usage?: ChunkUsage | null;
}

export interface OpenAiCompatibleOptions {
  /** 例如 https://api.openai.com/v1；请求发往它下面的 /chat/completions。 */
  baseUrl: string;
  /** 只进 Authorization 请求头；本地服务不要 key 时传空串。 */
  apiKey: string;
  model: string;
  /** 换一个 fetch（代理、录制）；省略时用 Node 自带的。 */
  fetch?: typeof fetch;
}

// ── 出站：课程消息 → 请求体（纯函数） ───────────────────────────

// #region lab 5.1 辅助
/** 参数序列化成 JSON 文本；缺席的参数记作空对象，线上不接受 undefined。 */
function toChatToolCall(call: ToolCall): ChatToolCall {
  const args = JSON.stringify(call.arguments ?? {});
  return { id: call.id, type: "function", function: { name: call.name, arguments: args } };
}

function toAssistantMessage(message: AssistantMessage): ChatMessage {
  const words = textOf(message);
  const calls = message.content.filter((block): block is ToolCall => block.type === "toolCall");
  if (calls.length === 0) return { role: "assistant", content: words };
  return { role: "assistant", content: words === "" ? null : words, tool_calls: calls.map(toChatToolCall) };
}

/** system 消息在这里一条也不发：它们已经合成开头那一条，再发就成了两份指令。 */
function toChatMessages(message: AgentMessage): ChatMessage[] {
  switch (message.role) {
    case "system":
      return [];
    case "user":
      return [{ role: "user", content: textOf(message) }];
    case "assistant":
      return [toAssistantMessage(message)];
    case "toolResult":
      return [{ role: "tool", tool_call_id: message.toolCallId, content: textOf(message) }];
  }
}

function toChatTool(tool: ToolDefinition): ChatTool {
  // 逐个字段抄写：ToolDefinition 以后多出来的字段不该被悄悄发给服务器。
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
// #endregion

/** 一次调用的完整请求体。只读 context，不改它。 */
export function toChatRequest(context: AgentContext, model: string): ChatRequest {
  // #region lab 5.1
  const system = currentSystemPrompt(context.messages);
  // 空的 prompt 不值得占一条消息。
  const head: ChatMessage[] = system ? [{ role: "system", content: system }] : [];
  const request: ChatRequest = {
    model,
    messages: [...head, ...context.messages.flatMap(toChatMessages)],
    stream: true,
    stream_options: { include_usage: true },
  };
  const tools = context.tools ?? [];
  if (tools.length > 0) request.tools = tools.map(toChatTool);
  return request;
  // #endregion
}

// ── 入站：chunk → 事件 ──────────────────────────────────────────

/** 组装中的回复。message 是私有草稿，对外只交出它的快照。 */
interface Draft {
  message: AssistantMessage;
  /** 线上的 tool_calls[].index → 草稿里对应的那个 ToolCall。 */
  toolCalls: Map<number, ToolCall>;
  /** 收到过的 finish_reason；一直没收到就是 undefined。 */
  finishReason?: string;
}

/** 和第 04 章一样：partial 一交出去就归消费者，后来的片段改不到它。 */
function snapshot(message: AssistantMessage): AssistantMessage {
  return structuredClone(message);
}

// #region lab 5.3 辅助
/** 文字接在最后一个文字块后面；最后一块是工具调用时另起一块，先后顺序不乱。 */
function appendText(draft: Draft, delta: string): ModelEvent {
  const content = draft.message.content;
  const last = content.at(-1);
  if (last?.type === "text") last.text += delta;
  else content.push(text(delta));
  return { type: "text_delta", contentIndex: content.length - 1, delta, partial: snapshot(draft.message) };
}

/** 同一个 index 的片段属于同一个调用，不管中间夹了多少别人的片段。 */
function appendToolCall(draft: Draft, piece: ChunkToolCall): ModelEvent {
  let call = draft.toolCalls.get(piece.index);
  if (call === undefined) {
    call = { type: "toolCall", id: "", name: "", arguments: {}, rawArguments: "" };
    draft.toolCalls.set(piece.index, call);
    draft.message.content.push(call);
  }
  if (piece.id) call.id = piece.id;
  if (piece.function?.name) call.name = piece.function.name;
  const delta = piece.function?.arguments ?? "";
  call.rawArguments = (call.rawArguments ?? "") + delta;
  const contentIndex = draft.message.content.indexOf(call);
  return { type: "toolcall_delta", contentIndex, delta, partial: snapshot(draft.message) };
}

function usageOf(raw: ChunkUsage): Usage {
  const input = raw.prompt_tokens ?? 0;
  const output = raw.completion_tokens ?? 0;
  return { input, output, totalTokens: raw.total_tokens ?? input + output };
}
// #endregion

/** 一块 chunk 可能同时带文字、工具片段、finish_reason 和 usage，各归各位。 */
function applyChunk(draft: Draft, chunk: ChatChunk): ModelEvent[] {
  // #region lab 5.3
  // 末尾那块 usage 的 choices 是空数组：先收下 usage，再看有没有内容。
  if (chunk.usage) draft.message.usage = usageOf(chunk.usage);
  const choice = chunk.choices?.[0];
  if (choice === undefined) return [];
  if (choice.finish_reason) draft.finishReason = choice.finish_reason;
  const events: ModelEvent[] = [];
  if (choice.delta?.content) events.push(appendText(draft, choice.delta.content));
  for (const piece of choice.delta?.tool_calls ?? []) events.push(appendToolCall(draft, piece));
  return events;
  // #endregion
}

/** 一条 data 解析成 chunk；不是 JSON 对象就抛出，交给唯一的出口。 */
function parseChunk(data: string): ChatChunk {
  // #region lab 5.3
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    parsed = undefined;
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new Error(`收到一块不是 JSON 对象的 chunk：${data}`);
  }
  return parsed as ChatChunk;
  // #endregion
}

// ── 收尾：finish_reason → done，或者说明为什么不能算完成 ─────────

// #region lab 5.3 辅助
/** 只认识这三种；别的值（content_filter 之类）都不能当作正常结束。 */
function doneReasonOf(finishReason: string | undefined): DoneReason | undefined {
  switch (finishReason) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
      return "toolUse";
    default:
      return undefined;
  }
}
// #endregion

/** 没收到或不认识的 finish_reason：说明这次回复为什么不能算正常结束。 */
function unfinishedReason(finishReason: string | undefined): string {
  // #region lab 5.4
  if (finishReason === undefined) return "流已经结束，却没有收到 finish_reason：回复可能被截断了。";
  return `不认识的 finish_reason "${finishReason}"：不知道模型为什么停下，不能当作正常结束。`;
  // #endregion
}

// #region lab 5.3 辅助
/** 参数原文凑齐才解析；解析好的调用取代草稿里那个，不再带 rawArguments。 */
function closeToolCall(draft: Draft, call: ToolCall): ModelEvent {
  const raw = call.rawArguments ?? "";
  let args: unknown;
  try {
    args = raw === "" ? {} : JSON.parse(raw);
  } catch {
    throw new Error(`工具调用 ${call.name}（${call.id}）的参数不是合法 JSON：${raw}`);
  }
  const finished: ToolCall = { type: "toolCall", id: call.id, name: call.name, arguments: args };
  const contentIndex = draft.message.content.indexOf(call);
  draft.message.content[contentIndex] = finished;
  return { type: "toolcall_end", contentIndex, toolCall: structuredClone(finished), partial: snapshot(draft.message) };
}
// #endregion

/** 流读完以后：先逐个收束工具调用，再以 done 结束；原因不明就抛出，交给唯一的出口。 */
function finishEvents(draft: Draft): ModelEvent[] {
  // #region lab 5.3
  const reason = doneReasonOf(draft.finishReason);
  if (reason === undefined) throw new Error(unfinishedReason(draft.finishReason));
  const ends = [...draft.toolCalls.values()].map((call) => closeToolCall(draft, call));
  const message: AssistantMessage = { ...snapshot(draft.message), stopReason: reason };
  return [...ends, { type: "done", reason, message }];
  // #endregion
}

// ── 失败：唯一的出口，也是唯一的脱敏点 ──────────────────────────

const REDACTED = "[已隐去的 API key]";

/** key 为空串时原样返回：空串“出现”在每两个字符之间，替换它只会把文字搅乱。 */
function redact(message: string, secret: string): string {
  // #region lab 5.4
  return secret === "" ? message : message.replaceAll(secret, REDACTED);
  // #endregion
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch 把真正的原因（连接被拒、对端关闭）放在 cause 里，只看 message 会一头雾水。
  const cause = error.cause instanceof Error ? `（${error.cause.message}）` : "";
  return `${error.message}${cause}`;
}

/** 服务器回的错误正文常常原样带着请求头：它也要经过 redact 才能进 errorMessage。 */
async function httpFailure(response: Response): Promise<string> {
  // #region lab 5.4
  const body = await response.text().catch(() => "");
  return `HTTP ${response.status}：${body}`;
  // #endregion
}

function failureEvent(
  partial: AssistantMessage,
  error: unknown,
  signal: AbortSignal | undefined,
  secret: string,
): ModelEvent {
  // #region lab 5.4
  const reason: ErrorReason = signal?.aborted ? "aborted" : "error";
  const errorMessage = reason === "aborted" ? "调用方取消了这次请求" : redact(describeError(error), secret);
  return { type: "error", reason, error: { ...snapshot(partial), stopReason: reason, errorMessage } };
  // #endregion
}

// ── 模型 ────────────────────────────────────────────────────────

export class OpenAiCompatibleModel implements Model {
  readonly provider = "openai-compatible";
  readonly id: string;
  private readonly endpoint: string;
  private readonly send: typeof fetch;
  /** # 私有字段：JSON.stringify 和 console.log 都看不到它。 */
  readonly #apiKey: string;

  constructor(options: OpenAiCompatibleOptions) {
    this.id = options.model;
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.send = options.fetch ?? ((input, init) => fetch(input, init));
    this.#apiKey = options.apiKey;
  }

  /** 从不抛异常：连不上、HTTP 出错、流断了、被取消，都以终态送进流里，result() 总会兑现。 */
  stream(context: AgentContext, options: StreamOptions = {}): AssistantMessageEventStream {
    const output = new AssistantMessageEventStream();
    void this.run(context, output, options.signal);
    return output;
  }

  private async run(
    context: AgentContext,
    output: AssistantMessageEventStream,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const draft: Draft = { message: this.blankMessage(), toolCalls: new Map() };
    try {
      // #region lab 5.3
      const response = await this.post(toChatRequest(context, this.id), signal);
      if (!response.ok) throw new Error(await httpFailure(response));
      if (response.body === null) throw new Error("响应没有正文，读不到事件流。");
      output.push({ type: "start", partial: snapshot(draft.message) });
      for await (const data of readSseData(response.body)) {
        // 取消之后一个事件也不再送出，哪怕它已经在缓冲里了。
        signal?.throwIfAborted();
        if (data === "[DONE]") break;
        for (const event of applyChunk(draft, parseChunk(data))) output.push(event);
      }
      for (const event of finishEvents(draft)) output.push(event);
      // #endregion
    } catch (error) {
      // 所有失败都从这里离开：变成保留 partial 的终态，错误信息也只在这里脱敏一次。
      output.push(failureEvent(draft.message, error, signal, this.#apiKey));
    }
  }

  private post(body: ChatRequest, signal: AbortSignal | undefined): Promise<Response> {
    // #region lab 5.3
    const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
    // key 只进请求头：请求体、URL、错误信息里都不该有它。
    if (this.#apiKey !== "") headers.authorization = `Bearer ${this.#apiKey}`;
    return this.send(this.endpoint, { method: "POST", headers, body: JSON.stringify(body), signal });
    // #endregion
  }

  private blankMessage(): AssistantMessage {
    // 结束之前 stopReason 还没有答案：partial 上先占位 "stop"，只有终态里的值算数。
    return assistantMessage([], "stop", { provider: this.provider, model: this.id, timestamp: Date.now() });
  }
}

// ── 从环境变量接上真实模型 ──────────────────────────────────────

/**
 * 设置了 PI_COURSE_BASE_URL 才联网，否则返回 undefined：脚本模型仍是默认。
 * 本地服务（例如 llama.cpp、Ollama）不要 key，所以 PI_COURSE_API_KEY 可以不设。
 */
export function modelFromEnv(
  env: Readonly<Record<string, string | undefined>> = process.env,
): OpenAiCompatibleModel | undefined {
  // #region lab 5.1
  const baseUrl = env.PI_COURSE_BASE_URL;
  if (!baseUrl) return undefined;
  const model = env.PI_COURSE_MODEL;
  if (!model) throw new Error("设置了 PI_COURSE_BASE_URL，还需要用 PI_COURSE_MODEL 指明模型名。");
  return new OpenAiCompatibleModel({ baseUrl, apiKey: env.PI_COURSE_API_KEY ?? "", model });
  // #endregion
}
