/**
 * Agent 对外可见的状态，和从事件推出状态的纯函数。
 *
 * 状态只由事件推出：同样的事件序列永远得到同样的状态，所以不接模型也能测。
 * 每次推导都交出新对象，旧快照从不被改写：监听器手里的 state 之后也不会变。
 * Agent 把快照交出去之前还会冻住它（frozenSnapshot）：监听器也改不动它。
 */

import type { AgentEndReason, AgentEvent } from "./agent-loop.js";
import type { AgentMessage, AssistantMessage } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

/** idle：可以接新的 prompt；running：一次运行还没结束。 */
export type AgentStatus = "idle" | "running";

export interface AgentState {
  /** 完整的 transcript：system、对话、工具结果，以及应用自己的角色。 */
  readonly messages: readonly AgentMessage[];
  readonly status: AgentStatus;
  /** 模型正在生成的那条 assistant 的最新 partial；不在生成时为 undefined。 */
  readonly streamMessage: AssistantMessage | undefined;
  /** 已经开始、还没交回结果的工具调用 id。 */
  readonly pendingToolCalls: readonly string[];
  /** 上一次运行为什么停下；运行中为 undefined。 */
  readonly stopReason: AgentEndReason | undefined;
  /** 上一次运行的错误说明；没有错误时为 undefined。 */
  readonly error: string | undefined;
}

export function initialAgentState(messages: readonly AgentMessage[] = []): AgentState {
  return {
    messages: [...messages],
    status: "idle",
    streamMessage: undefined,
    pendingToolCalls: [],
    stopReason: undefined,
    error: undefined,
  };
}

/**
 * 冻住一个快照：state、messages 数组和每条消息（连同它的内容块与参数）都不能再改。
 * 交给监听器的对象就是 Agent 下一次请求要用的对象，不冻住，监听器顺手一改就改了历史。
 * streamMessage 不冻：它是模型还在生成的 partial。
 */
export function frozenSnapshot(state: AgentState): AgentState {
  // #region lab 9.2
  for (const message of state.messages) deepFreeze(message);
  Object.freeze(state.messages);
  Object.freeze(state.pendingToolCalls);
  return Object.freeze(state);
  // #endregion
}

/**
 * 冻住一个已经定稿的事件，连同它带着的消息和结果：监听器拿到的对象，有的正是循环接下来要追加、要发出的那一个
 * （tool_execution_end 的 result 随后就是那条 toolResult）。还在长的不冻：assistant 的 partial 和工具的进度。
 */
export function freezeSettled(event: AgentEvent): void {
  // #region lab 9.2
  if (event.type === "message_update" || event.type === "tool_execution_update") return;
  if (event.type === "message_start" && event.message.role === "assistant") return;
  deepFreeze(event);
  // #endregion
}

// #region lab 9.2 辅助
function deepFreeze(value: unknown): void {
  // 已经冻住的消息不再走一遍；字节数组不能冻，也不必冻。
  if (typeof value !== "object" || value === null || Object.isFrozen(value) || ArrayBuffer.isView(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}
// #endregion

// ── 纯函数：事件 → 下一个状态 ───────────────────────────────────

/** 不读时钟、不碰外界、不改入参：只看旧状态和一个事件。 */
export function reduceAgentState(state: AgentState, event: AgentEvent): AgentState {
  // #region lab 9.1
  switch (event.type) {
    case "agent_start":
      return { ...state, status: "running", streamMessage: undefined, pendingToolCalls: [], stopReason: undefined, error: undefined };
    case "message_start":
    case "message_update":
      // 只有 assistant 会边生成边变；别的消息在 message_end 时一次落定。
      if (event.message.role !== "assistant") return state;
      return { ...state, streamMessage: event.message };
    case "message_end": {
      const messages = [...state.messages, event.message];
      if (event.message.role === "assistant") return { ...state, messages, streamMessage: undefined };
      return { ...state, messages };
    }
    case "tool_execution_start":
      return { ...state, pendingToolCalls: [...state.pendingToolCalls, event.toolCallId] };
    case "tool_execution_end":
      return { ...state, pendingToolCalls: state.pendingToolCalls.filter((id) => id !== event.toolCallId) };
    case "agent_end":
      return {
        ...state,
        status: "idle",
        streamMessage: undefined,
        pendingToolCalls: [],
        stopReason: event.reason,
        error: event.errorMessage,
      };
    case "turn_start":
    case "turn_end":
    case "tool_execution_update":
      return state;
  }
  // #endregion
}
