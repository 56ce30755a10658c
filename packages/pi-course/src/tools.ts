/**
 * 工具契约：Agent 和每一个工具之间只靠下面这几个类型说话。
 *
 *   AgentTool<TArgs>   name、description、parameters（schema.ts 的 Schema<TArgs>）和
 *                      execute(args, context)。args 已经按 schema 检查并收窄过；
 *                      context 带着 toolCallId、AbortSignal 和进度回调 onUpdate。
 *   ToolOutput         工具交回的结果：发给模型的 content 文本块，外加只给程序看的 details。
 *   ToolRegistry       按名字登记工具，拒绝重名；对模型只交出 definitions()（第 15 章起：只交出声明给模型的那些）。
 *   executeToolCall    把一次 ToolCall 变成一条 ToolResultMessage：成功、找不到工具、
 *                      参数不合法、工具抛异常或被取消，全都是一条按 toolCallId 配对的结果，
 *                      它自己从不抛出。
 *
 * 写工具的人只需要：成功就返回 ToolOutput；失败就 throw（或 reject）一个说清原因的 Error。
 * 失败时还想交回结构化信息（例如退出码），就返回 isError: true 的 ToolOutput：抛出会丢掉 details。
 *
 * 第 15 章加上曝光级别：工具登记了，不等于模型看得见它，也不等于谁都能调用它。
 *   声明集   definitions() 交出的、写进请求工具列表的：direct、model-only、已加载的 deferred。
 *   可调用集 按调用方分两种范围：model（模型直接发来的调用）与 script（第 16 章模型写的脚本里的调用）。
 */

import { parse, SchemaError, toJsonSchema, type Schema } from "./schema.js";
import { text, type TextContent, type ToolCall, type ToolDefinition, type ToolResultMessage } from "./types.js";

// ── 契约类型 ────────────────────────────────────────────────────

export interface ToolOutput<TDetails = unknown> {
  /** 模型会读到的文字。 */
  content: TextContent[];
  /** 给程序看的结构化信息（例如 diff、退出码），不会发给模型。 */
  details?: TDetails;
  /** 工具自己判定这次失败了，但 details 仍然有用：结果照样是 isError，details 原样保留。 */
  isError?: boolean;
}

export interface ToolContext {
  /** 这次调用的配对键，与结果里的 toolCallId 相同。 */
  toolCallId: string;
  /** 调用方取消时触发；长时间运行的工具应当监听它并尽快收尾。 */
  signal: AbortSignal;
  /** 汇报阶段性输出（例如命令的前几行）；结果交出之后再调用会被忽略。 */
  onUpdate(partial: ToolOutput): void;
  /**
   * 第 16 章：从这个工具里再调用一个工具（codemode 的脚本）。循环给出它：与模型的调用走同一条路
   * （参数检查、tool_call / tool_result 钩子），范围是 script。没有循环的地方（直接 executeToolCall）没有它。
   */
  callTool?(call: ToolCall, signal: AbortSignal): Promise<ToolResultMessage>;
}

/**
 * 第 15 章：一个工具对谁可见、能从哪里调用（名字沿用上游 pi 的说法）。
 *   direct      声明给模型；模型和脚本都能调用。省略 exposure 就是它。
 *   model-only  声明给模型；只有模型能直接调用，脚本里不行（例如 tool_search 自己）。
 *   codemode    不声明给模型；只能从脚本里调用。
 *   deferred    先不声明；tool_search 加载之后，从下一次请求起声明给模型。脚本随时能调用。
 *   hidden      登记在册，但谁都不能调用。
 */
export type ToolExposure = "direct" | "model-only" | "codemode" | "deferred" | "hidden";

/** 一次调用从哪里来：模型直接发来的，还是模型写的脚本里发出的。 */
export type CallScope = "model" | "script";

/** deferred 工具此刻的两个状态，由第 15 章的 ToolActivation 回答。 */
export interface DeferredState {
  /** 已加载：下一次请求要声明它。 */
  isLoaded(): boolean;
  /** transcript 已经声明了它：模型眼前这次请求里有它，模型可以直接调用。 */
  isDeclared(): boolean;
}

export interface AgentTool<TArgs = unknown> {
  /** 模型用这个名字调用工具，在同一个注册表里必须唯一。 */
  name: string;
  /** 写给模型看：这个工具做什么、什么时候用。 */
  description: string;
  /** 参数约定：执行前据此检查，也据此生成发给 Provider 的 JSON Schema。 */
  parameters: Schema<TArgs>;
  execute(args: TArgs, context: ToolContext): Promise<ToolOutput>;
  /** 第 15 章：省略时是 direct。 */
  exposure?: ToolExposure;
  /** 第 15 章：deferred 工具的状态；没有它的 deferred 工具从不声明给模型。 */
  deferred?: DeferredState;
}

/** 让 TypeScript 从 parameters 推出 execute 的参数类型，写工具时不必手写 TArgs。 */
export function defineTool<TArgs>(tool: AgentTool<TArgs>): AgentTool<TArgs> {
  return tool;
}

/** 失败结果的 details：程序按 kind 分辨失败的种类，不必解析给模型看的文字。 */
export type ToolErrorDetails =
  | { kind: "unknown_tool" }
  | { kind: "invalid_arguments"; path: string }
  | { kind: "execution_failed" }
  | { kind: "aborted" }
  | { kind: "out_of_scope"; exposure: ToolExposure; scope: CallScope };

export interface ExecuteOptions {
  signal: AbortSignal;
  onUpdate?: (partial: ToolOutput) => void;
  /** 结果的时间戳来源；测试传入固定值。 */
  now?: () => number;
  /** 第 15 章：这次调用从哪里来；省略时是 model。 */
  scope?: CallScope;
  /** 第 16 章：交给工具的 context.callTool。 */
  callTool?: (call: ToolCall, signal: AbortSignal) => Promise<ToolResultMessage>;
}

// ── 曝光级别：声明集与可调用集 ──────────────────────────────────

export function exposureOf(tool: AgentTool<any>): ToolExposure {
  return tool.exposure ?? "direct";
}

/** 这个工具要不要写进请求的工具列表。 */
export function isDeclared(tool: AgentTool<any>): boolean {
  // #region lab 15.2
  switch (exposureOf(tool)) {
    case "direct":
    case "model-only":
      return true;
    case "deferred":
      return tool.deferred?.isLoaded() === true;
    case "codemode":
    case "hidden":
      return false;
  }
  // #endregion
}

/**
 * 这个工具能不能在这个范围里被调用。deferred 工具在模型范围里看的是 transcript 有没有声明它，
 * 而不是它加载了没有：模型只能调用它在请求里见过的工具，同一批里刚加载的要等下一次请求。
 */
export function isCallable(tool: AgentTool<any>, scope: CallScope): boolean {
  // #region lab 15.2
  switch (exposureOf(tool)) {
    case "direct":
      return true;
    case "model-only":
      return scope === "model";
    case "codemode":
      return scope === "script";
    case "deferred":
      return scope === "script" || tool.deferred?.isDeclared() === true;
    case "hidden":
      return false;
  }
  // #endregion
}

/**
 * 范围之外的调用交回什么话。这句话是写给模型的，所以是英文，而且要说清下一步该做什么；
 * 能调用时交回 undefined。
 */
export function scopeRefusal(tool: AgentTool<any>, scope: CallScope): string | undefined {
  // #region lab 15.2
  if (isCallable(tool, scope)) return undefined;
  switch (exposureOf(tool)) {
    case "deferred":
      return (
        `Tool ${tool.name} is deferred and was not declared in this request. ` +
        "Call `tool_search` first with words that describe what you need; the tools it loads can be called from the next request on."
      );
    case "codemode":
      return `Tool ${tool.name} can only be called from a codemode script, not as a direct tool call.`;
    case "model-only":
      return `Tool ${tool.name} can only be called directly by the model, not from a script.`;
    default:
      return `Tool ${tool.name} is hidden: it cannot be called here.`;
  }
  // #endregion
}

// ── 注册表 ──────────────────────────────────────────────────────

export class ToolRegistry {
  private readonly tools = new Map<string, AgentTool>();

  constructor(tools: readonly AgentTool<any>[] = []) {
    for (const tool of tools) this.register(tool);
  }

  /** 同名的第二个工具会让模型的调用无法分辨是哪一个，所以登记时就拒绝。 */
  register(tool: AgentTool<any>): void {
    // #region lab 6.2
    if (this.tools.has(tool.name)) {
      throw new Error(`工具名 ${tool.name} 已经登记过：同一个注册表里工具名必须唯一。`);
    }
    this.tools.set(tool.name, tool);
    // #endregion
  }

  get(name: string): AgentTool | undefined {
    // #region lab 6.2
    return this.tools.get(name);
    // #endregion
  }

  get names(): string[] {
    // #region lab 6.2
    return [...this.tools.keys()];
    // #endregion
  }

  /** 发给 Provider 的只有名字、说明和 JSON Schema；execute 留在本地。第 15 章起只交出声明集。 */
  definitions(): ToolDefinition[] {
    // #region lab 15.2 扩展
    return [...this.tools.values()].filter(isDeclared).map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: toJsonSchema(tool.parameters),
    }));
    // #endregion
  }
}

// ── 执行一次调用 ────────────────────────────────────────────────

// #region lab 6.3 辅助
function errorMessageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function resultMessage(
  call: ToolCall,
  output: ToolOutput,
  isError: boolean,
  now: () => number,
): ToolResultMessage {
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: output.content,
    isError,
    timestamp: now(),
  };
  if (output.details !== undefined) message.details = output.details;
  return message;
}

function failure(call: ToolCall, explanation: string, details: ToolErrorDetails, now: () => number): ToolResultMessage {
  return resultMessage(call, { content: [text(explanation)], details }, true, now);
}
// #endregion

/**
 * 执行模型请求的一次工具调用，交回与它配对的 ToolResultMessage。
 * 每一种失败都变成 isError 的结果：模型读到原因，下一轮才能换个做法；这个函数从不抛出。
 */
export async function executeToolCall(
  registry: ToolRegistry,
  call: ToolCall,
  options: ExecuteOptions,
): Promise<ToolResultMessage> {
  // #region lab 6.3
  const now = options.now ?? Date.now;
  const tool = registry.get(call.name);
  if (tool === undefined) {
    const known = registry.names.join("、") || "（无）";
    return failure(call, `没有名为 ${call.name} 的工具。可用的工具：${known}。`, { kind: "unknown_tool" }, now);
  }
  // #endregion
  // #region lab 15.2 扩展
  // 范围之外的调用不检查参数、不执行：工具一行代码都不跑，模型读到的是下一步该怎么做。
  const scope = options.scope ?? "model";
  const refusal = scopeRefusal(tool, scope);
  if (refusal !== undefined) {
    return failure(call, refusal, { kind: "out_of_scope", exposure: exposureOf(tool), scope }, now);
  }
  // #endregion
  // #region lab 6.3

  let args: unknown;
  try {
    args = parse(tool.parameters, call.arguments);
  } catch (error) {
    const path = error instanceof SchemaError ? error.path : "";
    return failure(call, `工具 ${call.name} 的参数不合法：${errorMessageOf(error)}`, { kind: "invalid_arguments", path }, now);
  }

  if (options.signal.aborted) {
    return failure(call, `工具 ${call.name} 还没开始执行，调用就被取消了。`, { kind: "aborted" }, now);
  }

  // 结果交出之后工具再汇报进度，也改不了已经写下的结果：从此忽略。
  let settled = false;
  const context: ToolContext = {
    toolCallId: call.id,
    signal: options.signal,
    onUpdate: (partial) => {
      if (!settled) options.onUpdate?.(partial);
    },
  };
  // #endregion
  // #region lab 16.4 扩展
  if (options.callTool !== undefined) context.callTool = options.callTool;
  // #endregion
  // #region lab 6.3
  try {
    const output = await tool.execute(args, context);
    return resultMessage(call, output, output.isError === true, now);
  } catch (error) {
    return failure(call, `工具 ${call.name} 执行失败：${errorMessageOf(error)}`, { kind: "execution_failed" }, now);
  } finally {
    settled = true;
  }
  // #endregion
}
