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

/** 一次调用的完整请求体。只读 context，不改它。 */
export function toChatRequest(context: AgentContext, model: string): ChatRequest {
  throw new Error("Lab 5.1 尚未实现");
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

/** 一块 chunk 可能同时带文字、工具片段、finish_reason 和 usage，各归各位。 */
function applyChunk(draft: Draft, chunk: ChatChunk): ModelEvent[] {
  throw new Error("Lab 5.3 尚未实现");
}

/** 一条 data 解析成 chunk；不是 JSON 对象就抛出，交给唯一的出口。 */
function parseChunk(data: string): ChatChunk {
  throw new Error("Lab 5.3 尚未实现");
}

// ── 收尾：finish_reason → done，或者说明为什么不能算完成 ─────────

/** 流读完以后：先逐个收束工具调用，再以 done 结束；原因不明就抛出，交给唯一的出口。 */
function finishEvents(draft: Draft): ModelEvent[] {
  throw new Error("Lab 5.3 尚未实现");
}

/** 没收到或不认识的 finish_reason：说明这次回复为什么不能算正常结束。 */
function unfinishedReason(finishReason: string | undefined): string {
  throw new Error("Lab 5.4 尚未实现");
}

// ── 失败：唯一的出口，也是唯一的脱敏点 ──────────────────────────

const REDACTED = "[已隐去的 API key]";

/** 把文字里出现的 key 换成占位符。 */
function redact(message: string, secret: string): string {
  throw new Error("Lab 5.4 尚未实现");
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch 把真正的原因（连接被拒、对端关闭）放在 cause 里，只看 message 会一头雾水。
  const cause = error.cause instanceof Error ? `（${error.cause.message}）` : "";
  return `${error.message}${cause}`;
}

/** 服务器回的错误正文常常原样带着请求头：它也要经过 redact 才能进 errorMessage。 */
async function httpFailure(response: Response): Promise<string> {
  throw new Error("Lab 5.4 尚未实现");
}

function failureEvent(
  partial: AssistantMessage,
  error: unknown,
  signal: AbortSignal | undefined,
  secret: string,
): ModelEvent {
  // 临时版本，只会报 error。实践 5.4 改写它：被取消时是 aborted；errorMessage 先经过 redact。
  return { type: "error", reason: "error", error: { ...snapshot(partial), stopReason: "error", errorMessage: describeError(error) } };
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
      // 发请求、检查状态、推 start、逐条读 SSE data、收尾：任何一步出错都直接 throw。
      throw new Error("Lab 5.3 尚未实现");
    } catch (error) {
      // 所有失败都从这里离开：变成保留 partial 的终态，错误信息也只在这里脱敏一次。
      output.push(failureEvent(draft.message, error, signal, this.#apiKey));
    }
  }

  private post(body: ChatRequest, signal: AbortSignal | undefined): Promise<Response> {
    throw new Error("Lab 5.3 尚未实现");
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
  throw new Error("Lab 5.1 尚未实现");
}
