/**
 * 工具契约：Agent 和每一个工具之间只靠下面这几个类型说话。
 *
 *   AgentTool<TArgs>   name、description、parameters（schema.ts 的 Schema<TArgs>）和
 *                      execute(args, context)。args 已经按 schema 检查并收窄过；
 *                      context 带着 toolCallId、AbortSignal 和进度回调 onUpdate。
 *   ToolOutput         工具交回的结果：发给模型的 content 文本块，外加只给程序看的 details。
 *   ToolRegistry       按名字登记工具，拒绝重名；对模型只交出 definitions()。
 *   executeToolCall    把一次 ToolCall 变成一条 ToolResultMessage：成功、找不到工具、
 *                      参数不合法、工具抛异常或被取消，全都是一条按 toolCallId 配对的结果，
 *                      它自己从不抛出。
 *
 * 写工具的人只需要：成功就返回 ToolOutput；失败就 throw（或 reject）一个说清原因的 Error。
 * 失败时还想交回结构化信息（例如退出码），就返回 isError: true 的 ToolOutput：抛出会丢掉 details。
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
}

export interface AgentTool<TArgs = unknown> {
  /** 模型用这个名字调用工具，在同一个注册表里必须唯一。 */
  name: string;
  /** 写给模型看：这个工具做什么、什么时候用。 */
  description: string;
  /** 参数约定：执行前据此检查，也据此生成发给 Provider 的 JSON Schema。 */
  parameters: Schema<TArgs>;
  execute(args: TArgs, context: ToolContext): Promise<ToolOutput>;
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
  | { kind: "aborted" };

export interface ExecuteOptions {
  signal: AbortSignal;
  onUpdate?: (partial: ToolOutput) => void;
  /** 结果的时间戳来源；测试传入固定值。 */
  now?: () => number;
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

  /** 发给 Provider 的只有名字、说明和 JSON Schema；execute 留在本地。 */
  definitions(): ToolDefinition[] {
    // #region lab 6.2
    return [...this.tools.values()].map((tool) => ({
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
