/**
 * 扩展的运行器：一个模块的 default 导出是 `(pi: ExtensionAPI) => void | Promise<void>`（作者读的 API 在
 * extensions/types.ts）。它在加载时登记处理器、工具和命令；之后 Agent 每到一个时刻，ExtensionRunner 就按
 * 登记顺序调用那个事件的处理器。
 *
 * 隔离规则：
 *   处理器按登记顺序运行：先按扩展文件的顺序，同一个扩展里按 on() 的先后。
 *   处理器抛出的异常交给 onError，写明是哪个文件、哪个事件；Agent 照常往下走。
 *     唯一的例外是 tool_call：守卫自己坏了，就当它拦下了这次调用（宁可少做，不可越权）。
 *   处理器拿到的是快照：改它给的对象，改不到 transcript，也改不到下一次请求。
 *   tool_result 的改写要先过形状检查：进 transcript 的东西必须能写进会话文件。
 *   tool_call / tool_result 的处理器和这次运行一起被 abort：一个不结束的处理器拖不住 Agent。
 *   生命周期处理器有时限（第 09 章的 withTimeout，加载扩展也用它）：过了时限就报告它、不再等，prompt() 照常返回。
 *   登记的工具先过检查：形状不对、与已有工具同名的那一项报告后丢掉，别的照常。
 *   context 与 context_with_system 只改这一次请求：它们跑在 transformContext 里，不写进会话。
 */

import { withTimeout } from "./agent.js";
import { ABORTED, untilAborted, withOverride } from "./agent-loop.js";
import type { CustomMessageInput } from "./messages.js";
import type {
  ContextEvent,
  ContextWithSystemEvent,
  ExtensionAPI,
  ExtensionContext,
  ExtensionEventType,
  ExtensionFactory,
  ExtensionHandler,
  LifecycleEvent,
  RegisteredCommand,
  ToolCallEvent,
  ToolCallEventResult,
  ToolResultEvent,
  ToolResultEventResult,
} from "./extensions/types.js";
import type { AgentTool } from "./tools.js";
import { currentSystemMessage, type AgentMessage, type TextContent } from "./types.js";

/** 作者读的类型在 extensions/types.ts；运行器的调用方从这里一并拿到它们。 */
export type * from "./extensions/types.js";

// ── 运行器的类型 ────────────────────────────────────────────────

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
  event: ExtensionEventType | "load" | "command" | "register_tool";
  error: string;
}

export interface ExtensionRunnerOptions {
  cwd?: string;
  /** 一个生命周期处理器最多等多久，默认 DEFAULT_HANDLER_TIMEOUT_MS。 */
  handlerTimeoutMs?: number;
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

// ── 纯函数：登记与改写的形状 ────────────────────────────────────

/** 一项工具登记哪里不对；没问题交回 undefined。扩展是别人写的 JavaScript，类型标注挡不住 registerTool(null)。 */
export function malformedTool(tool: unknown): string | undefined {
  // #region lab 12.4
  if (typeof tool !== "object" || tool === null) return `登记的工具形状不对：拿到的是 ${tool === null ? "null" : typeof tool}，不是工具对象`;
  const { name, description, parameters, execute } = tool as Partial<Record<keyof AgentTool, unknown>>;
  if (typeof name !== "string" || name === "") return "登记的工具形状不对：name 必须是非空字符串";
  if (typeof description !== "string") return `登记的工具形状不对：${name} 的 description 必须是字符串`;
  if (typeof parameters !== "object" || parameters === null) return `登记的工具形状不对：${name} 没有 parameters`;
  if (typeof execute !== "function") return `登记的工具形状不对：${name} 的 execute 不是函数`;
  return undefined;
  // #endregion
}

/**
 * tool_result 的改写哪里不对；没问题交回 undefined。改写后的结果要进 transcript、写进会话文件、发给模型：
 * content 必须是文本块数组，details 必须能写成 JSON，isError 必须是布尔值。
 */
export function invalidRewrite(result: unknown): string | undefined {
  // #region lab 12.4
  if (typeof result !== "object" || result === null || Array.isArray(result)) return "交回的不是对象";
  const { content, details, isError } = result as Record<string, unknown>;
  const isTextBlock = (block: unknown) =>
    typeof block === "object" && block !== null && (block as TextContent).type === "text" && typeof (block as TextContent).text === "string";
  if (content !== undefined && !(Array.isArray(content) && content.every(isTextBlock))) return "content 必须是文本块数组（{ type: \"text\", text }）";
  if (isError !== undefined && typeof isError !== "boolean") return "isError 必须是布尔值";
  if (details !== undefined && !writableAsJson(details)) return "details 必须能写成 JSON（BigInt、函数、循环引用都不行）";
  return undefined;
  // #endregion
}

// #region lab 12.4 辅助
function writableAsJson(value: unknown): boolean {
  try {
    return JSON.stringify(value) !== undefined;
  } catch {
    return false;
  }
}
// #endregion

// ── 运行器 ──────────────────────────────────────────────────────

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function defaultOnError(error: ExtensionError): void {
  console.error(`扩展 ${error.extensionPath} 在 ${error.event} 里出错（已跳过，Agent 继续）：${error.error}`);
}

/** 写给模型看的：这次调用没有执行，因为运行在检查它时被中止了。 */
export const ABORTED_BEFORE_CHECK = "The run was aborted while an extension was checking this tool call; the tool did not run.";

/** 没有传 signal 的调用（测试、直接调用运行器）：一个永不取消的 signal，处理器照常等到它结束。 */
const NEVER_ABORTED = new AbortController().signal;

/** 生命周期处理器默认最多等 5 秒：prompt() 在返回之前等这些事件送达，一个不结束的处理器不能让它永远不返回。 */
export const DEFAULT_HANDLER_TIMEOUT_MS = 5_000;

export class ExtensionRunner {
  readonly extensions: readonly Extension[];
  private readonly ctx: ExtensionContext;
  private readonly onError: (error: ExtensionError) => void;
  private readonly handlerTimeoutMs: number;

  constructor(extensions: readonly Extension[], options: ExtensionRunnerOptions = {}) {
    this.extensions = extensions;
    this.ctx = { cwd: options.cwd ?? process.cwd() };
    this.onError = options.onError ?? defaultOnError;
    this.handlerTimeoutMs = options.handlerTimeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS;
  }

  /**
   * 会话的工具集：自己的工具在前，扩展登记的随后（按扩展顺序）。形状不对的登记、与已有工具同名的登记
   * 各报告一次（写明扩展文件），从扩展里拿掉：先登记的留下，自己的工具谁也顶替不了。
   */
  toolSet(own: readonly AgentTool<any>[]): AgentTool<any>[] {
    // #region lab 12.4
    const tools = [...own];
    const names = new Set(own.map((tool) => tool.name));
    for (const extension of this.extensions) {
      extension.tools = extension.tools.filter((tool) => {
        const problem = malformedTool(tool) ?? (names.has(tool.name) ? `工具名 ${tool.name} 已经有了：先登记的留下，这一项不进工具集` : undefined);
        if (problem !== undefined) {
          this.onError({ extensionPath: extension.path, event: "register_tool", error: problem });
          return false;
        }
        names.add(tool.name);
        tools.push(tool);
        return true;
      });
    }
    return tools;
    // #endregion
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

  /**
   * 生命周期事件：只通知，不收结果；一个处理器抛出或过了时限，报告之后后面的照样运行。每个处理器拿一份快照。
   * 时限：会话的 prompt() 要等这些事件送达才返回，一个永不结束的 agent_end 处理器不能让它永远等下去。
   */
  async emit(event: LifecycleEvent): Promise<void> {
    // #region lab 12.4
    const tooSlow = `${event.type} 的处理器 ${this.handlerTimeoutMs} ms 内没有结束：不再等它，后面的处理器和事件照常送达`;
    for (const [extension, handler] of this.handlersOf(event.type)) {
      try {
        // 深拷贝：turn_end 给的 message 就是 transcript 里那一条，改了它就改了下一次请求。
        await withTimeout(Promise.resolve(handler(structuredClone(event) as never, this.ctx)), this.handlerTimeoutMs, tooSlow);
      } catch (error) {
        this.report(extension, event.type, error);
      }
    }
    // #endregion
  }

  /**
   * 第一个说 block 的处理器拦下调用，后面的不再问；抛出的处理器也算拦下。
   * 运行被 abort 时不再等处理器：当作拦下（工具没执行），这次运行随即以 aborted 收场。
   */
  async emitToolCall(event: ToolCallEvent, signal: AbortSignal = NEVER_ABORTED): Promise<ToolCallEventResult | undefined> {
    // #region lab 12.4
    for (const [extension, handler] of this.handlersOf("tool_call")) {
      try {
        const result = await untilAborted(handler(structuredClone(event), this.ctx), signal);
        if (result === ABORTED) return { block: true, reason: ABORTED_BEFORE_CHECK };
        if (result?.block === true) return result;
      } catch (error) {
        this.report(extension, "tool_call", error);
        return { block: true, reason: `扩展 ${extension.path} 检查这次调用时出错，调用没有执行：${errorText(error)}` };
      }
    }
    return undefined;
    // #endregion
  }

  /**
   * 处理器依次改写：每个处理器看到的是前一个改过的结果（一份快照）；什么都没改就交回 undefined。
   * 形状不对的改写报告后不用，保留之前的结果；运行被 abort 时不再等处理器，交回已有的改写。
   */
  async emitToolResult(event: ToolResultEvent, signal: AbortSignal = NEVER_ABORTED): Promise<ToolResultEventResult | undefined> {
    // #region lab 12.4
    let current = event;
    let changed = false;
    for (const [extension, handler] of this.handlersOf("tool_result")) {
      try {
        const result = await untilAborted(handler(structuredClone(current), this.ctx), signal);
        if (result === ABORTED) break;
        if (result === undefined) continue;
        const problem = invalidRewrite(result);
        if (problem !== undefined) {
          this.report(extension, "tool_result", new Error(`改写不合规，保留原结果：${problem}`));
          continue;
        }
        current = withOverride(current, result);
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
