/**
 * codemode 工具：模型交来一段 JavaScript，在沙箱里跑完，结果（与 console 的输出）回到模型。
 *
 * 脚本里的 tools.<name>(args) 走的是与模型的调用同一条路：循环交给工具的 context.callTool
 * 做参数检查、过第 12 章的 tool_call / tool_result 钩子，范围是 script（第 15 章）。
 * 嵌套调用的 id 是 <父调用的 id>/<序号>；它们不进 transcript，只记在结果的 details 里（有上限）。
 * 每一种失败（script、timeout、aborted、sandbox）都是一条 isError 的结果，details 里写着种类。
 */

import { s, toJsonSchema } from "../schema.js";
import { isCallable, type AgentTool, type ToolOutput } from "../tools.js";
import { text, textOf, type ToolDefinition } from "../types.js";
import { replyJson } from "./bridge.js";
import { codemodeDescription } from "./declarations.js";
import { runSandboxed, type SandboxFailureKind, type SandboxLimits, type SandboxResult } from "./sandbox.js";

export const CODEMODE_NAME = "codemode";
/** 交给模型（也写进会话文件）的文字最多这么多字符，多出的截掉并写明截掉了多少。 */
export const MAX_OUTPUT_CHARS = 8_000;
/** details 里最多记这么多个嵌套调用；总数与参数字节数照样全算。 */
export const MAX_RECORDED_CALLS = 20;

export interface NestedCallRecord {
  id: string;
  name: string;
  argumentBytes: number;
  /** 调用还没回来（这次运行先结束了）时没有这一项。 */
  isError?: boolean;
}

export interface CodemodeDetails {
  kind: "codemode";
  outcome: "ok" | SandboxFailureKind;
  calls: NestedCallRecord[];
  callCount: number;
  argumentBytes: number;
  /** 文字截掉了多少个字符（没截就是 0）。 */
  truncatedChars: number;
}

export interface CodemodeOptions {
  /** 会话此刻的全部工具：脚本能调用其中 script 范围可调用的那些，说明也按它们生成。 */
  tools: () => readonly AgentTool<any>[];
  limits?: Partial<SandboxLimits>;
  maxOutputChars?: number;
}

/** 脚本能调用的工具的定义：第 15 章 script 范围的可调用集（codemode 自己是 model-only，不在其中）。 */
export function scriptDefinitions(tools: readonly AgentTool<any>[]): ToolDefinition[] {
  return tools
    .filter((tool) => isCallable(tool, "script"))
    .map((tool) => ({ name: tool.name, description: tool.description, parameters: toJsonSchema(tool.parameters) }));
}

/** 超过上限就截断，末尾写明截掉了多少：模型知道它没看全。 */
export function capOutput(value: string, max: number): { text: string; cut: number } {
  // #region lab 16.4
  if (value.length <= max) return { text: value, cut: 0 };
  const cut = value.length - max;
  return { text: `${value.slice(0, max)}\n[… ${cut} more characters truncated]`, cut };
  // #endregion
}

/** 一次运行写给模型的文字：结果或失败，再附上 console 的输出。 */
export function outputText(result: SandboxResult): string {
  // #region lab 16.4
  const lines = [result.ok ? `Result: ${result.value}` : `Script failed (${result.kind}): ${result.message}`];
  if (result.logs.length > 0) {
    lines.push("Console:", ...result.logs.map((log) => (log.level === "log" ? log.line : `[${log.level}] ${log.line}`)));
  }
  return lines.join("\n");
  // #endregion
}

export function codemodeTool(options: CodemodeOptions): AgentTool<{ code: string }> {
  return {
    name: CODEMODE_NAME,
    exposure: "model-only",
    // 每次取说明都按此刻的工具重新生成：可调用的工具变了，下一次请求的说明跟着变。
    get description() {
      return codemodeDescription(scriptDefinitions(options.tools()));
    },
    parameters: s.object({ code: s.string("JavaScript: the body of an async function. `return` the result.") }),
    async execute({ code }, context): Promise<ToolOutput> {
      // #region lab 16.4
      const calls: NestedCallRecord[] = [];
      let callCount = 0;
      let argumentBytes = 0;
      const callTool = async (name: string, argsJson: string, signal: AbortSignal): Promise<string> => {
        const id = `${context.toolCallId}/${++callCount}`;
        const bytes = Buffer.byteLength(argsJson);
        argumentBytes += bytes;
        const record: NestedCallRecord = { id, name, argumentBytes: bytes };
        if (calls.length < MAX_RECORDED_CALLS) calls.push(record);
        if (context.callTool === undefined) return replyJson({ ok: false, error: "This host cannot run tool calls from a script." });
        const result = await context.callTool({ type: "toolCall", id, name, arguments: JSON.parse(argsJson) }, signal);
        record.isError = result.isError;
        return replyJson(result.isError ? { ok: false, error: textOf(result) } : { ok: true, value: textOf(result) });
      };
      const result = await runSandboxed(code, { limits: options.limits, callTool, signal: context.signal });
      const output = capOutput(outputText(result), options.maxOutputChars ?? MAX_OUTPUT_CHARS);
      const details: CodemodeDetails = {
        kind: "codemode",
        outcome: result.ok ? "ok" : result.kind,
        calls,
        callCount,
        argumentBytes,
        truncatedChars: output.cut,
      };
      return { content: [text(output.text)], details, isError: !result.ok };
      // #endregion
    },
  };
}
