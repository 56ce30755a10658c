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
 */

import type { Schema } from "./schema.js";
import type { TextContent, ToolCall, ToolDefinition, ToolResultMessage } from "./types.js";

// ── 契约类型 ────────────────────────────────────────────────────

export interface ToolOutput<TDetails = unknown> {
  /** 模型会读到的文字。 */
  content: TextContent[];
  /** 给程序看的结构化信息（例如 diff、退出码），不会发给模型。 */
  details?: TDetails;
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
    throw new Error("Lab 6.2 尚未实现");
  }

  get(name: string): AgentTool | undefined {
    throw new Error("Lab 6.2 尚未实现");
  }

  get names(): string[] {
    throw new Error("Lab 6.2 尚未实现");
  }

  /** 发给 Provider 的只有名字、说明和 JSON Schema；execute 留在本地。 */
  definitions(): ToolDefinition[] {
    throw new Error("Lab 6.2 尚未实现");
  }
}

// ── 执行一次调用 ────────────────────────────────────────────────

/**
 * 执行模型请求的一次工具调用，交回与它配对的 ToolResultMessage。
 * 每一种失败都变成 isError 的结果：模型读到原因，下一轮才能换个做法；这个函数从不抛出。
 */
export async function executeToolCall(
  registry: ToolRegistry,
  call: ToolCall,
  options: ExecuteOptions,
): Promise<ToolResultMessage> {
  throw new Error("Lab 6.3 尚未实现");
}
