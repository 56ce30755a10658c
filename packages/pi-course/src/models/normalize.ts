/**
 * 历史归一化：每次请求都可能换一个物理模型，而 transcript 里的消息是别的模型说的。
 * 别的 Provider 签下的东西（思考的签名、它自己格式的 id）对目标模型毫无意义，有的 Provider 还会因此拒绝整个请求。
 *
 * 请求发出之前，只在这次请求的副本上：
 *   - 别的 provider/model 说的 assistant 去掉绑定在 Provider 上的字段（signature、rawArguments）；
 *   - 不合目标 id 语法（[A-Za-z0-9_-]{1,64}）的工具调用 id 换成合法的 id（"|" 之后 Provider 自己的那段去掉），
 *     配对的工具结果换成同一个。
 * 目标模型自己说的消息原样留下：同一个模型续写自己的历史，一个字节也不该变。
 */

import { createHash } from "node:crypto";

import type { AssistantMessage, Message, ToolCall } from "../types.js";

declare module "../types.js" {
  interface AssistantMessage {
    /** 思考内容的签名：只有签下它的那个 Provider 的那个模型能验证。 */
    signature?: string;
  }
}

/** 目标模型接受的工具调用 id。 */
export const TOOL_CALL_ID = /^[A-Za-z0-9_-]{1,64}$/;

export interface NormalizeTarget {
  provider: string;
  id: string;
}

/** 把一个 id 写成目标的语法。同一个 id 永远得到同一个结果，所以调用与结果各自换、换完照样配对。 */
export function targetToolCallId(id: string): string {
  // #region lab 18.3
  if (TOOL_CALL_ID.test(id)) return id;
  // "|" 之后是 Provider 自己的条目 id（有的 Provider 把调用 id 与条目 id 连在一起）：别人用不上，整段去掉。
  // 只换掉非法字符会撞车（a:b 与 a_b）：接上原 id 的一段散列。
  const readable = id.split("|")[0]!.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 55);
  const hash = createHash("sha256").update(id).digest("hex").slice(0, 8);
  return `${readable}_${hash}`;
  // #endregion
}

function sameModel(message: AssistantMessage, target: NormalizeTarget): boolean {
  return message.provider === target.provider && message.model === target.id;
}

function normalizedCall(call: ToolCall, foreign: boolean): ToolCall {
  const id = targetToolCallId(call.id);
  if (!foreign && id === call.id) return call;
  const copy: ToolCall = { type: "toolCall", id, name: call.name, arguments: call.arguments };
  if (!foreign && call.rawArguments !== undefined) copy.rawArguments = call.rawArguments;
  return copy;
}

/** 交回这次请求用的副本；输入的数组和消息一个也不改。 */
export function normalizeForTarget(messages: readonly Message[], target: NormalizeTarget): Message[] {
  // #region lab 18.3
  return messages.map((message): Message => {
    if (message.role === "toolResult") {
      const id = targetToolCallId(message.toolCallId);
      return id === message.toolCallId ? message : { ...message, toolCallId: id };
    }
    if (message.role !== "assistant") return message;
    const foreign = !sameModel(message, target);
    const content = message.content.map((block) => (block.type === "toolCall" ? normalizedCall(block, foreign) : block));
    const changed = content.some((block, index) => block !== message.content[index]);
    if (!foreign && !changed) return message;
    const copy: AssistantMessage = { ...message, content };
    if (foreign) delete copy.signature;
    return copy;
  });
  // #endregion
}
