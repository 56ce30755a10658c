/**
 * 课程的消息 IR：Agent 自己定义、可以保存和重放的 transcript 形状。
 * Provider 请求体和终端文字都从这里转换出来，但不取代这里的原始对象。
 */

// ── content block ───────────────────────────────────────────────

export interface TextContent {
  type: "text";
  text: string;
}

export interface ToolCall {
  type: "toolCall";
  /** 配对键：工具结果用同一个值写进 toolCallId。 */
  id: string;
  name: string;
  /** 模型给出的结构化参数；通过 schema 检查之前只是“模型说过的话”。 */
  arguments: unknown;
  /** Provider 送来的原始参数字符串，参数被截断时靠它诊断。 */
  rawArguments?: string;
}

export type AssistantContent = TextContent | ToolCall;

// ── 四种消息 ────────────────────────────────────────────────────

export interface Usage {
  input: number;
  output: number;
  totalTokens: number;
}

/**
 * 模型这次为什么停下；每个值对应 Agent 不同的下一步。
 * deferred（第 19 章）：Provider 收下了请求，却把回复推迟到以后再给；这一条不是回答，只是“以后再说”。
 */
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted" | "deferred";

export interface SystemMessage {
  role: "system";
  /** 第一条是基础 prompt；之后每条都是追加的说明，允许为空串。 */
  content: string;
  /** 具名段落：后来的 system message 按名字覆盖，null 表示删掉该段。 */
  sections?: Record<string, string | null>;
  /** 从这条起可以用的工具；与已有工具同名时以这里的定义为准。 */
  toolsAdded?: ToolDefinition[];
  /** 从这条起不再可用的工具，只按名字指认。 */
  toolsRemoved?: ToolReference[];
  timestamp: number;
}

export interface UserMessage {
  role: "user";
  /** 用户只能说话，不能调用工具，所以这里只有文本块。 */
  content: TextContent[];
  timestamp: number;
}

export interface AssistantMessage {
  role: "assistant";
  /** 文字与工具调用按模型产生的先后排列，保存时不能重排。 */
  content: AssistantContent[];
  /** 哪个 Provider 的哪个模型说的：重放和计费都要靠它。 */
  provider: string;
  model: string;
  usage: Usage;
  stopReason: StopReason;
  /** 只在 error / aborted 时携带，说明失败原因。 */
  errorMessage?: string;
  /** 生成结束的时刻。 */
  timestamp: number;
}

export interface ToolResultMessage<TDetails = unknown> {
  role: "toolResult";
  /** 与 ToolCall.id 相同：把结果配回它回答的那次请求。 */
  toolCallId: string;
  /** 方便人读；真正的配对键是 toolCallId。 */
  toolName: string;
  content: TextContent[];
  /** 工具失败也是一条结果：模型要看到错误，才能换个办法。 */
  isError: boolean;
  /** 给程序看的结构化附加信息，不会发给模型。 */
  details?: TDetails;
  timestamp: number;
}

/** 模型认识的四种消息：请求里只能出现它们。先看 role，才能读该角色独有的字段。 */
export type Message =
  | SystemMessage // Agent 的指令与工具集
  | UserMessage // 用户的请求
  | AssistantMessage // 模型的说明与工具请求
  | ToolResultMessage; // 环境执行工具后的结果

/**
 * 应用自己的消息角色，靠声明合并登记（键名随意，值是带 role 的消息类型）：
 *
 *   declare module "./types.js" {
 *     interface CustomAgentMessages { auditNote: AuditNote }
 *   }
 *
 * 课程本身不登记任何角色，所以默认它是空的，AgentMessage 就等于 Message。
 */
export interface CustomAgentMessages {}

/** transcript 里的每一项：模型认识的四种，加上应用登记的角色。发给模型之前要先转换。 */
export type AgentMessage = Message | CustomAgentMessages[keyof CustomAgentMessages];

/** 一份 JSON Schema。课程不在类型里展开它的结构：它要原样交给模型和校验器。 */
export type JsonSchema = { [key: string]: unknown };

/** 向模型声明一个可以调用的工具：名字、何时该用它、参数长什么样。 */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** 撤下一个工具只需要名字：定义早已写在前面的 system message 里。 */
export interface ToolReference {
  name: string;
}

/** 一次模型调用看到的输入：转换后的消息，按发生顺序，指令也在其中。 */
export interface AgentContext {
  /** 只有模型认识的角色：应用自己的角色必须先经过 convertToLlm。 */
  messages: Message[];
  /** 这次调用向模型声明的工具；省略或为空表示模型只能说话。 */
  tools?: ToolDefinition[];
}

// ── 模型事件 ────────────────────────────────────────────────────

/** 正常结束的几种原因，由 done 事件携带（deferred 也是：Provider 没有出错，只是推迟了回复）。 */
export type DoneReason = Extract<StopReason, "stop" | "length" | "toolUse" | "deferred">;
/** 失败结束的两种原因，由 error 事件携带。 */
export type ErrorReason = Extract<StopReason, "error" | "aborted">;

/**
 * 生成过程中可以观察到的状态。partial 是同一条 assistant message 的后继快照；
 * done 与 error 是两条终态路径，都交出最终要保存的那条消息。
 */
export type ModelEvent =
  // 生成开始：partial 还没有任何 content。
  | { type: "start"; partial: AssistantMessage }
  // contentIndex 指向 partial.content 里正在增长的那个槽位。
  | { type: "text_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  // 参数片段先进 rawArguments，此时 arguments 还不可信。
  | { type: "toolcall_delta"; contentIndex: number; delta: string; partial: AssistantMessage }
  // 片段凑齐，槽位收束成结构化的 ToolCall（能否执行由第 06 章判断）。
  | { type: "toolcall_end"; contentIndex: number; toolCall: ToolCall; partial: AssistantMessage }
  // 两条终态路径：都交出最终要保存的那条消息。
  | { type: "done"; reason: DoneReason; message: AssistantMessage }
  | { type: "error"; reason: ErrorReason; error: AssistantMessage };

/** 模型返回的流：可以逐个读事件，也可以只等最终消息。 */
export interface ModelStream extends AsyncIterable<ModelEvent> {
  result(): Promise<AssistantMessage>;
}

export interface StreamOptions {
  /** 调用方取消本次生成；模型必须以 aborted 终态收尾，而不是抛异常。 */
  signal?: AbortSignal;
}

export interface Model {
  readonly provider: string;
  readonly id: string;
  stream(context: AgentContext, options?: StreamOptions): ModelStream;
}

// ── 构造函数 ────────────────────────────────────────────────────

/** 最常用的默认值集中在这几个构造函数里，调用方不必重复写对象字面量。 */
export function text(value: string): TextContent {
  const block: TextContent = { type: "text", text: value };
  return block;
}

export function userMessage(value: string, timestamp = Date.now()): UserMessage {
  return { role: "user", content: [text(value)], timestamp };
}

/** 测试可以用 overrides 固定 provider、model、usage、errorMessage 或时间。 */
export type AssistantOverrides = Partial<
  Omit<AssistantMessage, "role" | "content" | "stopReason">
>;

export function assistantMessage(
  content: AssistantContent[],
  stopReason: StopReason = "stop",
  overrides: AssistantOverrides = {},
): AssistantMessage {
  const defaults: AssistantMessage = {
    role: "assistant",
    content,
    provider: "scripted",
    model: "scripted-v1",
    usage: { input: 0, output: 0, totalTokens: 0 },
    stopReason,
    timestamp: Date.now(),
  };
  return { ...defaults, ...overrides };
}

// ── system 重放 ─────────────────────────────────────────────────

function isSystemMessage(message: AgentMessage): message is SystemMessage {
  return message.role === "system";
}

/**
 * 按顺序重放每条 system message 的工具差量，得到此刻可用的工具集。
 * 同一条消息里先撤下、再加入：这样一条消息就能表达“换掉某个工具的定义”。
 */
export function currentTools(messages: readonly AgentMessage[]): ToolDefinition[] {
  // #region lab 9.5
  const tools = new Map<string, ToolDefinition>();
  for (const system of messages.filter(isSystemMessage)) {
    for (const removed of system.toolsRemoved ?? []) tools.delete(removed.name);
    for (const added of system.toolsAdded ?? []) {
      // 先删再加：重新声明的工具排到末尾，顺序和“最后一次声明”一致。
      tools.delete(added.name);
      tools.set(added.name, added);
    }
  }
  return [...tools.values()];
  // #endregion
}

/**
 * 把 transcript 里的 system message 依出现顺序合并成此刻生效的一条。
 * 只读：改指令靠追加新消息，已经写下的消息一条都不动。别的角色一律跳过。
 */
export function currentSystemMessage(
  messages: readonly AgentMessage[],
): SystemMessage | undefined {
  const systems = messages.filter(isSystemMessage);
  const first = systems[0];
  if (first === undefined) return undefined;

  const notes: string[] = [];
  const sections = new Map<string, string>();
  for (const system of systems) {
    if (system.content !== "") notes.push(system.content);
    for (const [name, body] of Object.entries(system.sections ?? {})) {
      if (body === null) sections.delete(name);
      else sections.set(name, body);
    }
  }

  const merged: SystemMessage = {
    role: "system",
    content: notes.join("\n\n"),
    timestamp: first.timestamp,
  };
  // 段落删光以后不留一个空对象，重放结果和“从没写过段落”看起来一样。
  if (sections.size > 0) merged.sections = Object.fromEntries(sections);
  // 工具集同理：重放出的是“此刻的全集”，放在 toolsAdded 里，一个都没有就不写。
  const tools = currentTools(systems);
  if (tools.length > 0) merged.toolsAdded = tools;
  return merged;
}

/** 模型真正读到的文字：先 content，再按顺序接上各段落，空串与 null 不占位置。 */
export function systemMessageText(message: SystemMessage): string {
  const sectionBodies = Object.values(message.sections ?? {});
  return [message.content, ...sectionBodies]
    .filter((part): part is string => typeof part === "string" && part !== "")
    .join("\n\n");
}

export function currentSystemPrompt(
  messages: readonly AgentMessage[],
): string | undefined {
  const current = currentSystemMessage(messages);
  return current === undefined ? undefined : systemMessageText(current);
}

// ── 文本投影 ────────────────────────────────────────────────────

/**
 * 只取文字的有损视图，供终端显示、搜索和摘要使用。
 * 工具调用被略过，但原消息的 content 保持完整。
 */
export function textOf(message: Message): string {
  // system 消息没有 content 数组，它的文字就是渲染后的 prompt。
  if (message.role === "system") return systemMessageText(message);
  const texts: string[] = [];
  for (const block of message.content) {
    if (block.type === "text") texts.push(block.text);
  }
  return texts.join("\n");
}
