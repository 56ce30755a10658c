/**
 * 扩展：一个模块的 default 导出是 `(pi: ExtensionAPI) => void | Promise<void>`。它在加载时登记处理器、
 * 工具和命令；之后 Agent 每到一个时刻，ExtensionRunner 就按登记顺序调用那个事件的处理器。
 *
 * 三条隔离规则：
 *   处理器按登记顺序运行：先按扩展文件的顺序，同一个扩展里按 on() 的先后。
 *   处理器抛出的异常交给 onError，写明是哪个文件、哪个事件；Agent 照常往下走。
 *     唯一的例外是 tool_call：守卫自己坏了，就当它拦下了这次调用（宁可少做，不可越权）。
 *   context 与 context_with_system 只改这一次请求：它们跑在 transformContext 里，不写进会话。
 */

import type { CustomMessageInput } from "./agent-session.js";
import type { AgentTool } from "./tools.js";
import {
  currentSystemMessage,
  type AgentMessage,
  type AssistantMessage,
  type TextContent,
  type ToolResultMessage,
} from "./types.js";

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

export interface ToolCallEventResult {
  block?: boolean;
  /** 拦下时成为那条工具结果的文字：模型读到它，才知道为什么没执行。 */
  reason?: string;
}
export interface ToolResultEventResult {
  content?: TextContent[];
  details?: unknown;
  isError?: boolean;
}
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

/** 会话交给扩展的动作；绑定之前调用它们会得到一句说明。 */
export interface ExtensionActions {
  sendMessage<T>(input: CustomMessageInput<T>): void;
  appendEntry<T>(customType: string, data?: T): void;
  /** 扩展在加载之后又登记了工具：会话据此换一套工具。 */
  toolsChanged(): void;
}

/** 一个加载好的扩展：它的文件、它登记的处理器、工具和命令。 */
export interface Extension {
  path: string;
  handlers: Map<ExtensionEventType, ExtensionHandler<any>[]>;
  tools: AgentTool<any>[];
  commands: Map<string, RegisteredCommand>;
  actions: ExtensionActions;
}

/** 一次出错：哪个文件、哪个事件（加载时是 "load"）、说了什么。 */
export interface ExtensionError {
  extensionPath: string;
  event: ExtensionEventType | "load" | "command";
  error: string;
}

export interface ExtensionRunnerOptions {
  cwd?: string;
  /** 默认打印到 stderr。 */
  onError?: (error: ExtensionError) => void;
}

/**
 * 上游 pi 的原句（逐字相同，日志和上游的测试都按它匹配）：处理器把开头的 system 消息弄丢了。
 * 照样报出，照样用处理器的输出。分成几段只是为了每行不太长。
 */
export const REMOVED_LEADING_SYSTEM_MESSAGE = [
  "Handler removed the leading system message;",
  "the request has no prompt or initial tool declarations.",
  "Keep it at index 0 or replace a dropped prefix with",
  "getCurrentSystemMessage().",
].join(" ");

// ── 扩展与它的 API ──────────────────────────────────────────────

const UNBOUND: ExtensionActions = {
  sendMessage() {
    throw new Error("扩展还没有绑定到会话：加载时只能登记，sendMessage 要等会话开始之后再调用。");
  },
  appendEntry() {
    throw new Error("扩展还没有绑定到会话：加载时只能登记，appendEntry 要等会话开始之后再调用。");
  },
  toolsChanged() {},
};

export function createExtension(extensionPath: string): Extension {
  return { path: extensionPath, handlers: new Map(), tools: [], commands: new Map(), actions: UNBOUND };
}

/** 交给扩展的 pi 对象：登记的东西记在 extension 上，动作转给会话（绑定之后）。 */
export function createExtensionAPI(extension: Extension): ExtensionAPI {
  // #region lab 12.4
  return {
    on(event, handler) {
      const list = extension.handlers.get(event) ?? [];
      list.push(handler);
      extension.handlers.set(event, list);
    },
    registerTool(tool) {
      extension.tools.push(tool);
      extension.actions.toolsChanged();
    },
    registerCommand(name, command) {
      extension.commands.set(name, command);
    },
    sendMessage: (input) => extension.actions.sendMessage(input),
    appendEntry: (customType, data) => extension.actions.appendEntry(customType, data),
  };
  // #endregion
}

/** 不经文件，直接用一个工厂函数做出扩展（测试和内置扩展用）；工厂抛出就原样抛出，由调用方报告。 */
export async function extensionFromFactory(extensionPath: string, factory: ExtensionFactory): Promise<Extension> {
  const extension = createExtension(extensionPath);
  await factory(createExtensionAPI(extension));
  return extension;
}

// ── 纯函数：context 的两种视图 ──────────────────────────────────

function withoutSystem(messages: readonly AgentMessage[]): AgentMessage[] {
  return messages.filter((message) => message.role !== "system");
}

// ── 运行器 ──────────────────────────────────────────────────────

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function defaultOnError(error: ExtensionError): void {
  console.error(`扩展 ${error.extensionPath} 在 ${error.event} 里出错（已跳过，Agent 继续）：${error.error}`);
}

export class ExtensionRunner {
  readonly extensions: readonly Extension[];
  private readonly ctx: ExtensionContext;
  private readonly onError: (error: ExtensionError) => void;

  constructor(extensions: readonly Extension[], options: ExtensionRunnerOptions = {}) {
    this.extensions = extensions;
    this.ctx = { cwd: options.cwd ?? process.cwd() };
    this.onError = options.onError ?? defaultOnError;
  }

  /** 全部扩展登记的工具，按扩展顺序。 */
  get tools(): AgentTool<any>[] {
    return this.extensions.flatMap((extension) => extension.tools);
  }

  /** 同名命令以先加载的扩展为准。 */
  getCommand(name: string): RegisteredCommand | undefined {
    for (const extension of this.extensions) {
      const command = extension.commands.get(name);
      if (command !== undefined) return command;
    }
    return undefined;
  }

  bindActions(actions: ExtensionActions): void {
    for (const extension of this.extensions) extension.actions = actions;
  }

  hasHandlers(type: ExtensionEventType): boolean {
    return this.extensions.some((extension) => (extension.handlers.get(type)?.length ?? 0) > 0);
  }

  /** 按登记顺序交出 [扩展, 处理器]：先按扩展的顺序，同一个扩展里按 on() 的先后。 */
  private *handlersOf<K extends ExtensionEventType>(type: K): Generator<[Extension, ExtensionHandler<K>]> {
    for (const extension of this.extensions) {
      for (const handler of extension.handlers.get(type) ?? []) yield [extension, handler];
    }
  }

  private report(extension: Extension, event: ExtensionEventType, error: unknown): void {
    this.onError({ extensionPath: extension.path, event, error: errorText(error) });
  }

  /** 生命周期事件：只通知，不收结果；一个处理器抛出，后面的照样运行。 */
  async emit(event: LifecycleEvent): Promise<void> {
    // #region lab 12.4
    for (const [extension, handler] of this.handlersOf(event.type)) {
      try {
        await handler(event as never, this.ctx);
      } catch (error) {
        this.report(extension, event.type, error);
      }
    }
    // #endregion
  }

  /** 第一个说 block 的处理器拦下调用，后面的不再问；抛出的处理器也算拦下。 */
  async emitToolCall(event: ToolCallEvent): Promise<ToolCallEventResult | undefined> {
    // #region lab 12.4
    for (const [extension, handler] of this.handlersOf("tool_call")) {
      try {
        const result = await handler(event, this.ctx);
        if (result?.block === true) return result;
      } catch (error) {
        this.report(extension, "tool_call", error);
        return { block: true, reason: `扩展 ${extension.path} 检查这次调用时出错，调用没有执行：${errorText(error)}` };
      }
    }
    return undefined;
    // #endregion
  }

  /** 处理器依次改写：每个处理器看到的是前一个改过的结果；什么都没改就交回 undefined。 */
  async emitToolResult(event: ToolResultEvent): Promise<ToolResultEventResult | undefined> {
    // #region lab 12.4
    const current: ToolResultEvent = { ...event };
    let changed = false;
    for (const [extension, handler] of this.handlersOf("tool_result")) {
      try {
        const result = await handler({ ...current }, this.ctx);
        if (result === undefined) continue;
        if (result.content !== undefined) current.content = result.content;
        if (result.details !== undefined) current.details = result.details;
        if (result.isError !== undefined) current.isError = result.isError;
        changed = true;
      } catch (error) {
        this.report(extension, "tool_result", error);
      }
    }
    return changed ? { content: current.content, details: current.details, isError: current.isError } : undefined;
    // #endregion
  }

  /**
   * context：处理器只看到对话（没有 system），可以交回新列表，也可以就地改 event.messages。
   * 变了的话，把重放出的 system 头放回最前面：prompt 与工具声明不归这个事件管，也就丢不掉。
   */
  async emitContext(messages: AgentMessage[]): Promise<AgentMessage[]> {
    if (!this.hasHandlers("context")) return messages;
    // #region lab 12.5
    const original = withoutSystem(messages);
    let visible = original;
    for (const [extension, handler] of this.handlersOf("context")) {
      try {
        // 每个处理器拿一份深拷贝：它就地改的是副本，transcript 里的消息对象一个都碰不到。
        const event: ContextEvent = { type: "context", messages: structuredClone(visible) };
        const result = await handler(event, this.ctx);
        visible = result?.messages ?? event.messages;
      } catch (error) {
        this.report(extension, "context", error);
      }
    }
    if (JSON.stringify(visible) === JSON.stringify(original)) return messages;
    const head = currentSystemMessage(messages);
    return head === undefined ? visible : [head, ...visible];
    // #endregion
  }

  /**
   * context_with_system：处理器看到完整的 transcript，交回的就是请求。开头的 system 被拿掉时
   * 报出上游的那句话，但输出照样生效：这是提醒，不是拦截。
   */
  async emitContextWithSystem(messages: AgentMessage[]): Promise<AgentMessage[]> {
    if (!this.hasHandlers("context_with_system")) return messages;
    // #region lab 12.5
    let current = messages;
    for (const [extension, handler] of this.handlersOf("context_with_system")) {
      try {
        const event: ContextWithSystemEvent = { type: "context_with_system", messages: structuredClone(current) };
        const result = await handler(event, this.ctx);
        const next = result?.messages ?? event.messages;
        if (current[0]?.role === "system" && next[0]?.role !== "system") {
          this.onError({ extensionPath: extension.path, event: "context_with_system", error: REMOVED_LEADING_SYSTEM_MESSAGE });
        }
        current = next;
      } catch (error) {
        this.report(extension, "context_with_system", error);
      }
    }
    return current;
    // #endregion
  }

  /** 运行 `/name` 命令：没有这个命令交回 false（会话接着找提示模板）；命令抛出照样报告，照样算处理过。 */
  async runCommand(name: string, args: string): Promise<boolean> {
    // #region lab 12.6
    for (const extension of this.extensions) {
      const command = extension.commands.get(name);
      if (command === undefined) continue;
      try {
        await command.handler(args, this.ctx);
      } catch (error) {
        this.onError({ extensionPath: extension.path, event: "command", error: `/${name}：${errorText(error)}` });
      }
      return true;
    }
    return false;
    // #endregion
  }

  /** 接到 Agent 的 transformContext 上：先 context，再 context_with_system。 */
  transformContext = async (messages: AgentMessage[]): Promise<AgentMessage[]> => {
    return this.emitContextWithSystem(await this.emitContext(messages));
  };
}
