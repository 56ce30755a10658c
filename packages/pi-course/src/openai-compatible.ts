/**
 * 接上真正的模型：把课程消息翻译成 OpenAI 兼容的 chat completions 请求，
 * 再把流式回复翻译回第 04 章的那套事件。消费者分不出对面是脚本还是网络。
 */

import { AssistantMessageEventStream } from "./event-stream.js";
import { readSseData, SseLimitError, type SseLimits } from "./sse.js";
import {
  assistantMessage,
  currentSystemPrompt,
  currentTools,
  text,
  textOf,
  type AgentContext,
  type AgentMessage,
  type AssistantContent,
  type AssistantMessage,
  type DoneReason,
  type ErrorReason,
  type Message,
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
  /** 请服务器最多生成这么多 token；省略时由服务器自己定，有的服务器根本不设上限。 */
  max_tokens?: number;
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
  /** 等响应头、等下一块字节，最多等这么多毫秒；默认 120 秒。 */
  idleTimeoutMs?: number;
  /** SSE 一行、一个事件的字符上限；省略的项用 sse.ts 里的默认值。 */
  sseLimits?: Partial<SseLimits>;
  /** 每次回答最多多少 token，作为 max_tokens 发给服务器；默认 8192。 */
  maxTokens?: number;
  /** 一次回复的响应体最多收多少字节；默认 maxTokens × 512。 */
  maxResponseBytes?: number;
}

const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** 一次回答默认最多 8192 个 token：够写一个大文件，又不让一次失控的回答没完没了。 */
const DEFAULT_MAX_TOKENS = 8_192;
/**
 * 响应体的字节上限跟着 max_tokens 走：一块 chunk 至少带一个 token，连同 JSON 与 SSE 的包装也就两三百字节，
 * 每个 token 给 512 字节宽裕一倍。服务器不理 max_tokens 时，是这个上限让读取停下。
 */
const BYTES_PER_TOKEN = 512;

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
// #endregion
// #region lab 9.4 扩展
function toChatMessages(message: Message): ChatMessage[] {
  switch (message.role) {
    case "system":
      return [];
    case "user":
      return [{ role: "user", content: textOf(message) }];
    case "assistant":
      return [toAssistantMessage(message)];
    case "toolResult":
      return [{ role: "tool", tool_call_id: message.toolCallId, content: textOf(message) }];
    default:
      return unknownRole(message);
  }
}
// #endregion
// #region lab 5.1 辅助

function toChatTool(tool: ToolDefinition): ChatTool {
  // 逐个字段抄写：ToolDefinition 以后多出来的字段不该被悄悄发给服务器。
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
// #endregion

/**
 * 类型上走不到这里；运行时走到了，说明应用自己的角色绕过了 convertToLlm。
 * 宁可整个请求失败，也不把一条服务器看不懂的消息发出去。
 */
function unknownRole(message: never): never {
  // #region lab 9.4
  const role = (message as { role?: unknown }).role;
  throw new Error(
    `消息角色 ${String(role)} 不是模型认识的角色（system / user / assistant / toolResult）：` +
      "请在 convertToLlm 里把它转换成模型认识的消息，或者丢掉它。",
  );
  // #endregion
}

/** transcript 用 toolsAdded / toolsRemoved 声明过工具时，以它重放出的工具集为准。 */
function declaresTools(messages: readonly Message[]): boolean {
  // #region lab 9.5
  return messages.some(
    (message) =>
      message.role === "system" && (message.toolsAdded !== undefined || message.toolsRemoved !== undefined),
  );
  // #endregion
}

/** 一次调用的完整请求体。只读 context，不改它。 */
export function toChatRequest(context: AgentContext, model: string, maxTokens?: number): ChatRequest {
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
  if (maxTokens !== undefined) request.max_tokens = maxTokens;
  // #endregion
  // #region lab 9.5 扩展
  const tools = declaresTools(context.messages) ? currentTools(context.messages) : (context.tools ?? []);
  // #endregion
  // #region lab 5.1
  if (tools.length > 0) request.tools = tools.map(toChatTool);
  return request;
  // #endregion
}

// ── 入站：chunk → 事件 ──────────────────────────────────────────

/** 组装中的回复。message 是私有草稿，对外只交出它的快照。 */
interface Draft {
  message: AssistantMessage;
  /** 线上的 tool_calls[].index → 那个调用在 content 里的下标。 */
  toolCalls: Map<number, number>;
  /** 收到过的 finish_reason；一直没收到就是 undefined。 */
  finishReason?: string;
}

/**
 * 和第 04 章一样：partial 一交出去就归消费者，后来的片段改不到它。
 * 但这里不深拷贝：草稿里的块一经放入就冻结，要改就换上新块，所以快照只需一个新数组。
 * 深拷贝的话，两万个片段会留下两万份越来越长的全文，只等 result() 的消费者也得替它们付内存。
 */
function snapshot(message: AssistantMessage): AssistantMessage {
  return { ...message, content: [...message.content] };
}

/** 终态里的消息交给调用方长期保存，可以随意修改：这一次才深拷贝，也就拷这一次。 */
function finalCopy(message: AssistantMessage): AssistantMessage {
  return structuredClone(message);
}

// #region lab 5.3 辅助
/** 放进草稿的块都冻结：既然快照共用它们，谁也不能原地改。 */
function place(draft: Draft, contentIndex: number, block: AssistantContent): void {
  draft.message.content[contentIndex] = Object.freeze(block);
}

/** 文字接在最后一个文字块后面；最后一块是工具调用时另起一块，先后顺序不乱。 */
function appendText(draft: Draft, delta: string): ModelEvent {
  const content = draft.message.content;
  const last = content.at(-1);
  if (last?.type === "text") place(draft, content.length - 1, text(last.text + delta));
  else place(draft, content.length, text(delta));
  return { type: "text_delta", contentIndex: content.length - 1, delta, partial: snapshot(draft.message) };
}

/** 同一个 index 的片段属于同一个调用，不管中间夹了多少别人的片段。 */
function appendToolCall(draft: Draft, piece: ChunkToolCall): ModelEvent {
  const content = draft.message.content;
  let contentIndex = draft.toolCalls.get(piece.index);
  if (contentIndex === undefined) {
    contentIndex = content.length;
    draft.toolCalls.set(piece.index, contentIndex);
    place(draft, contentIndex, { type: "toolCall", id: "", name: "", arguments: {}, rawArguments: "" });
  }
  const call = content[contentIndex] as ToolCall;
  const delta = piece.function?.arguments ?? "";
  place(draft, contentIndex, {
    ...call,
    id: piece.id || call.id,
    name: piece.function?.name || call.name,
    rawArguments: (call.rawArguments ?? "") + delta,
  });
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

/** 一条 data 解析成 chunk；不是 JSON 对象、或者形状不对，就抛出，交给唯一的出口。 */
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
  const problem = chunkProblem(parsed as Record<string, unknown>);
  if (problem !== undefined) throw new Error(`收到一块形状不对的 chunk（${problem}）：${data}`);
  return parsed as ChatChunk;
  // #endregion
}

// ── 检查 chunk：ChatChunk 只是我们的愿望，线上来的是 unknown ────────

// #region lab 5.5 辅助
/** 字段可以缺席或为 null；只要出现了值，就必须是约定的类型。 */
function optional(value: unknown, type: "string" | "number" | "object"): boolean {
  return value === undefined || value === null || typeof value === type;
}

function fieldsOf(value: unknown): Record<string, unknown> {
  return (value ?? {}) as Record<string, unknown>;
}

function toolPieceProblem(piece: unknown): string | undefined {
  if (typeof piece !== "object" || piece === null) return "tool_calls 里有一项不是对象";
  const { index, id, function: fn } = fieldsOf(piece);
  if (!Number.isInteger(index) || (index as number) < 0) return "tool_calls[].index 不是非负整数";
  if (!optional(id, "string")) return "tool_calls[].id 不是字符串";
  if (!optional(fn, "object")) return "tool_calls[].function 不是对象";
  const { name, arguments: args } = fieldsOf(fn);
  if (!optional(name, "string")) return "tool_calls[].function.name 不是字符串";
  if (!optional(args, "string")) return "tool_calls[].function.arguments 不是字符串";
  return undefined;
}
// #endregion

/**
 * 返回 chunk 的第一处毛病，没有毛病返回 undefined。不查的话，
 * 数字会被当成文字拼进回答，对象会变成 "[object Object]"，坏掉的片段会悄悄丢失。
 */
function chunkProblem(chunk: Record<string, unknown>): string | undefined {
  // #region lab 5.5
  if (!optional(chunk.usage, "object")) return "usage 不是对象";
  const usage = fieldsOf(chunk.usage);
  for (const name of ["prompt_tokens", "completion_tokens", "total_tokens"]) {
    if (!optional(usage[name], "number")) return `usage.${name} 不是数字`;
  }
  if (chunk.choices === undefined || chunk.choices === null) return undefined;
  if (!Array.isArray(chunk.choices)) return "choices 不是数组";
  if (chunk.choices.length === 0) return undefined;
  const choice: unknown = chunk.choices[0];
  if (typeof choice !== "object" || choice === null) return "choices[0] 不是对象";
  const { delta, finish_reason } = fieldsOf(choice);
  if (!optional(finish_reason, "string")) return "finish_reason 不是字符串";
  if (!optional(delta, "object")) return "delta 不是对象";
  const { content, tool_calls } = fieldsOf(delta);
  if (!optional(content, "string")) return "delta.content 不是字符串";
  if (tool_calls === undefined || tool_calls === null) return undefined;
  if (!Array.isArray(tool_calls)) return "delta.tool_calls 不是数组";
  return tool_calls.map(toolPieceProblem).find((problem) => problem !== undefined);
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
function closeToolCall(draft: Draft, contentIndex: number): ModelEvent {
  const call = draft.message.content[contentIndex] as ToolCall;
  const raw = call.rawArguments ?? "";
  let args: unknown;
  try {
    args = raw === "" ? {} : JSON.parse(raw);
  } catch {
    throw new Error(`工具调用 ${call.name}（${call.id}）的参数不是合法 JSON：${raw}`);
  }
  const finished: ToolCall = { type: "toolCall", id: call.id, name: call.name, arguments: args };
  place(draft, contentIndex, finished);
  return { type: "toolcall_end", contentIndex, toolCall: structuredClone(finished), partial: snapshot(draft.message) };
}
// #endregion

/** 流读完以后：先逐个收束工具调用，再以 done 结束；原因不明就抛出，交给唯一的出口。 */
function finishEvents(draft: Draft): ModelEvent[] {
  // #region lab 5.3
  const reason = doneReasonOf(draft.finishReason);
  if (reason === undefined) throw new Error(unfinishedReason(draft.finishReason));
  const ends = [...draft.toolCalls.values()].map((contentIndex) => closeToolCall(draft, contentIndex));
  const message: AssistantMessage = { ...finalCopy(draft.message), stopReason: reason };
  return [...ends, { type: "done", reason, message }];
  // #endregion
}

// ── 失败：唯一的出口，也是唯一的脱敏点 ──────────────────────────

const REDACTED = "[已隐去的 API key]";

/** errorMessage 最多留这么多字符：够看清原因，又不会把一整页 HTML 塞进 transcript。 */
const MAX_ERROR_CHARS = 2_000;
/** HTTP 错误正文最多读这么多字节，其余的不下载。 */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/**
 * key 可能以几种样子回到我们手里：原样、URL 编码（服务器回显请求地址时），
 * 以及写在 base URL 里的 user:password@（fetch 报错时会带出整个地址）。
 * 空串不算：空串“出现”在每两个字符之间，替换它只会把文字搅乱。
 */
function secretsOf(apiKey: string, baseUrl: string): string[] {
  // #region lab 5.5
  const forms = [apiKey, encodeURIComponent(apiKey)];
  if (URL.canParse(baseUrl)) {
    const { username, password } = new URL(baseUrl);
    for (const part of [username, password]) forms.push(part, decodedOrSame(part));
  }
  // 长的先换：短的那个可能正是长的一部分。
  return [...new Set(forms)].filter((form) => form !== "").sort((a, b) => b.length - a.length);
  // #endregion
}

// #region lab 5.5 辅助
/** 地址里的 % 不一定组成合法的转义：解不开就按原样算。 */
function decodedOrSame(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
// #endregion

function redact(message: string, secrets: readonly string[]): string {
  // #region lab 5.4
  return secrets.reduce((clean, secret) => clean.replaceAll(secret, REDACTED), message);
  // #endregion
}

/** 先脱敏再截断：反过来的话，截断处留下的半个 key 就躲过了替换。 */
function clip(message: string): string {
  // #region lab 5.5
  if (message.length <= MAX_ERROR_CHARS) return message;
  return `${message.slice(0, MAX_ERROR_CHARS)}……（共 ${message.length} 个字符，后面的已截去）`;
  // #endregion
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch 把真正的原因（连接被拒、对端关闭）放在 cause 里，只看 message 会一头雾水。
  const cause = error.cause instanceof Error ? `（${error.cause.message}）` : "";
  return `${error.message}${cause}`;
}

/**
 * 服务器回的错误正文常常原样带着请求头：它也要经过 redact 才能进 errorMessage。
 * 正文可能是几 MB 的 HTML 页面：只读开头一段，剩下的连接直接放弃。
 */
async function httpFailure(response: Response): Promise<string> {
  // #region lab 5.4
  const body = await readAtMost(response, MAX_ERROR_BODY_BYTES).catch(() => "");
  return `HTTP ${response.status}：${body}`;
  // #endregion
}

async function readAtMost(response: Response, maxBytes: number): Promise<string> {
  // #region lab 5.5
  if (response.body === null) return "";
  const pieces: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  while (size < maxBytes) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value);
    size += value.byteLength;
  }
  await reader.cancel();
  return new TextDecoder().decode(Buffer.concat(pieces).subarray(0, maxBytes));
  // #endregion
}

function failureEvent(
  partial: AssistantMessage,
  error: unknown,
  signal: AbortSignal | undefined,
  secrets: readonly string[],
): ModelEvent {
  // #region lab 5.4
  const reason: ErrorReason = signal?.aborted ? "aborted" : "error";
  const errorMessage = reason === "aborted" ? "调用方取消了这次请求" : clip(redact(describeError(error), secrets));
  return { type: "error", reason, error: { ...finalCopy(partial), stopReason: reason, errorMessage } };
  // #endregion
}

// ── 看门狗：对面一声不吭时，不能无限地等下去 ────────────────────

/**
 * 每收到一点东西就 kick() 一次；超过 ms 毫秒没有 kick，就中止请求。
 * 调用方的 signal 管“我不想要了”，看门狗管“对面卡住了”：没有它，一个不回话的服务器能让调用永远挂着。
 */
class IdleWatchdog {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly ms: number) {
    this.kick();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  kick(): void {
    // #region lab 5.5
    clearTimeout(this.timer);
    const silence = new Error(`已经 ${this.ms} 毫秒没有收到服务器的任何数据，放弃这次请求。`);
    this.timer = setTimeout(() => this.controller.abort(silence), this.ms);
    // #endregion
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

/**
 * 把响应体原样转交，一共超过 maxBytes 字节就抛出 SseLimitError。
 * 看门狗只管“隔多久来一块”：每 200 毫秒来一个字节的服务器永远不会惹它叫，只有总量的上限能让读取停下。
 */
async function* capped(body: AsyncIterable<Uint8Array>, maxBytes: number): AsyncGenerator<Uint8Array> {
  // #region lab 5.5
  let total = 0;
  for await (const bytes of body) {
    total += bytes.byteLength;
    if (total > maxBytes) {
      throw new SseLimitError(`回复一共超过了 ${maxBytes} 字节，模型像是停不下来了，不再读下去。`);
    }
    yield bytes;
  }
  // #endregion
}

/** 把响应体原样转交，每转交一块就告诉看门狗“还活着”。 */
async function* watched(body: AsyncIterable<Uint8Array>, watchdog: IdleWatchdog): AsyncGenerator<Uint8Array> {
  for await (const bytes of body) {
    watchdog.kick();
    yield bytes;
  }
}

// ── 模型 ────────────────────────────────────────────────────────

export class OpenAiCompatibleModel implements Model {
  readonly provider = "openai-compatible";
  readonly id: string;
  private readonly endpoint: string;
  private readonly send: typeof fetch;
  private readonly idleTimeoutMs: number;
  private readonly sseLimits: Partial<SseLimits>;
  private readonly maxTokens: number;
  private readonly maxResponseBytes: number;
  /** # 私有字段：JSON.stringify 和 console.log 都看不到它。 */
  readonly #apiKey: string;
  /** key 可能被回显成的每一种样子，错误信息离开之前逐个涂掉。 */
  readonly #secrets: readonly string[];

  constructor(options: OpenAiCompatibleOptions) {
    this.id = options.model;
    this.endpoint = `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.send = options.fetch ?? ((input, init) => fetch(input, init));
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.sseLimits = options.sseLimits ?? {};
    this.maxTokens = options.maxTokens ?? DEFAULT_MAX_TOKENS;
    this.maxResponseBytes = options.maxResponseBytes ?? this.maxTokens * BYTES_PER_TOKEN;
    this.#apiKey = options.apiKey;
    this.#secrets = secretsOf(options.apiKey, options.baseUrl);
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
    const watchdog = new IdleWatchdog(this.idleTimeoutMs);
    try {
      // #region lab 5.3
      // 两个 signal 任一触发都中止 fetch：调用方取消，或者看门狗等不下去了。
      const stop = signal ? AbortSignal.any([signal, watchdog.signal]) : watchdog.signal;
      const response = await this.post(toChatRequest(context, this.id, this.maxTokens), stop);
      watchdog.kick();
      if (!response.ok) throw new Error(await httpFailure(response));
      if (response.body === null) throw new Error("响应没有正文，读不到事件流。");
      output.push({ type: "start", partial: snapshot(draft.message) });
      const body = capped(watched(response.body, watchdog), this.maxResponseBytes);
      for await (const data of readSseData(body, this.sseLimits)) {
        // 取消之后一个事件也不再送出，哪怕它已经在缓冲里了。
        signal?.throwIfAborted();
        if (data === "[DONE]") break;
        for (const event of applyChunk(draft, parseChunk(data))) output.push(event);
      }
      for (const event of finishEvents(draft)) output.push(event);
      // #endregion
    } catch (error) {
      // 所有失败都从这里离开：变成保留 partial 的终态，错误信息也只在这里脱敏一次。
      output.push(failureEvent(draft.message, error, signal, this.#secrets));
    } finally {
      watchdog.stop();
    }
  }

  private post(body: ChatRequest, signal: AbortSignal): Promise<Response> {
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
