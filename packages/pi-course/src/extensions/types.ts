/**
 * 扩展作者读的 API：事件、处理器能交回什么、`pi` 对象上的方法。运行器怎样调用它们在 ../extensions.ts。
 *
 * 一个扩展模块的 default 导出是 ExtensionFactory：加载时拿到 `pi`，用它登记处理器、工具和命令。
 * 处理器拿到的事件是快照：想改结果，交回一个值，而不是改事件本身。
 */

import type { AfterToolCallResult, BeforeToolCallResult } from "../agent-loop.js";
import type { CustomMessageInput } from "../messages.js";
import type { AgentTool } from "../tools.js";
import type { AgentMessage, AssistantMessage, TextContent, ToolResultMessage } from "../types.js";

// ── 事件 ────────────────────────────────────────────────────────

export interface SessionStartEvent {
  type: "session_start";
}
export interface AgentStartEvent {
  type: "agent_start";
}
export interface AgentEndEvent {
  type: "agent_end";
  messages: AgentMessage[];
}
export interface TurnStartEvent {
  type: "turn_start";
  step: number;
}
export interface TurnEndEvent {
  type: "turn_end";
  message: AssistantMessage;
  toolResults: ToolResultMessage[];
}
/** 工具执行之前：处理器可以拦下它。 */
export interface ToolCallEvent {
  type: "tool_call";
  toolCallId: string;
  toolName: string;
  input: unknown;
}
/** 工具执行之后、结果进 transcript 之前：处理器可以改写它。 */
export interface ToolResultEvent {
  type: "tool_result";
  toolCallId: string;
  toolName: string;
  input: unknown;
  content: TextContent[];
  details: unknown;
  isError: boolean;
}
/** 这一次请求的对话部分：system 消息已经拿掉，处理完会放回去。 */
export interface ContextEvent {
  type: "context";
  messages: AgentMessage[];
}
/** 这一次请求的完整 transcript，包括 system：处理器交回什么，请求就是什么。 */
export interface ContextWithSystemEvent {
  type: "context_with_system";
  messages: AgentMessage[];
}

/**
 * tool_call / tool_result 处理器交回的，就是第 07 章循环的两个钩子交回的（扩展正是接在那两个钩子上）：
 * 拦下时 reason 成为那条工具结果的文字，模型读到它才知道为什么没执行；改写时交回的字段逐个替换。
 */
export type ToolCallEventResult = BeforeToolCallResult;
export type ToolResultEventResult = AfterToolCallResult;
export interface ContextEventResult {
  messages?: AgentMessage[];
}

/** 每个事件的形状，和它的处理器可以交回什么。 */
export interface ExtensionEventMap {
  session_start: { event: SessionStartEvent; result: void };
  agent_start: { event: AgentStartEvent; result: void };
  agent_end: { event: AgentEndEvent; result: void };
  turn_start: { event: TurnStartEvent; result: void };
  turn_end: { event: TurnEndEvent; result: void };
  tool_call: { event: ToolCallEvent; result: ToolCallEventResult | void };
  tool_result: { event: ToolResultEvent; result: ToolResultEventResult | void };
  context: { event: ContextEvent; result: ContextEventResult | void };
  context_with_system: { event: ContextWithSystemEvent; result: ContextEventResult | void };
}

export type ExtensionEventType = keyof ExtensionEventMap;
export type LifecycleEvent = SessionStartEvent | AgentStartEvent | AgentEndEvent | TurnStartEvent | TurnEndEvent;

export interface ExtensionContext {
  cwd: string;
}

export type ExtensionHandler<K extends ExtensionEventType> = (
  event: ExtensionEventMap[K]["event"],
  ctx: ExtensionContext,
) => ExtensionEventMap[K]["result"] | Promise<ExtensionEventMap[K]["result"]>;

export interface RegisteredCommand {
  description?: string;
  handler(args: string, ctx: ExtensionContext): void | Promise<void>;
}

/** 扩展能做的全部事情。形状照上游 pi 的 ExtensionAPI，只留本章用到的几个。 */
export interface ExtensionAPI {
  on<K extends ExtensionEventType>(event: K, handler: ExtensionHandler<K>): void;
  registerTool(tool: AgentTool<any>): void;
  registerCommand(name: string, command: RegisteredCommand): void;
  sendMessage<T>(input: CustomMessageInput<T>): void;
  appendEntry<T>(customType: string, data?: T): void;
}

export type ExtensionFactory = (pi: ExtensionAPI) => void | Promise<void>;
