/**
 * Agent 循环：问模型 → 执行它请求的工具 → 把结果追加进 transcript → 再问，
 * 直到模型说完、出错、被取消，或用完步数。
 *
 * 循环只追加两种消息：模型说的 assistant，和工具的 toolResult。它不写 system 消息，
 * 也不改调用方传入的数组；新消息作为结果交回，由调用方决定怎样保存。
 *
 * 每次调用模型之前，transcript 依次过两道闸：先 transformContext（可选：裁剪、注入），
 * 再 convertToLlm（把应用自己的角色变成模型认识的消息）。两道闸的输出只给这一次请求用，
 * 从不写回 transcript。
 *
 * 每个 turn 的 stopReason 决定下一步：
 *   toolUse 且有工具调用   执行全部调用（并发），结果按源顺序追加，再问模型
 *   stop 且没有工具调用    正常结束
 *   length / error / aborted   不执行任何工具；已出现的调用各配一条 isError 结果，结束
 *   stop 却带着工具调用    协议错误：同样不执行、配上错误结果，以 protocol_error 结束
 *   toolUse 却没有工具调用  协议错误：没有可配对的东西，不再问模型，以 protocol_error 结束
 */

import { sameDefinition } from "./canonical-json.js";
import { executeToolCall, type ExecuteOptions, type ToolOutput, type ToolRegistry } from "./tools.js";
import {
  currentTools,
  text,
  type AgentMessage,
  type AssistantMessage,
  type Message,
  type Model,
  type ModelEvent,
  type StopReason,
  type SystemMessage,
  type TextContent,
  type ToolCall,
  type ToolDefinition,
  type ToolResultMessage,
} from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 循环为什么停下：模型的结束原因之外，还有协议错误和步数用完。 */
export type AgentEndReason = Exclude<StopReason, "toolUse"> | "protocol_error" | "max_steps";

export type AgentEvent =
  | { type: "agent_start" }
  // step 从 1 开始数，等于这是第几次调用模型。
  | { type: "turn_start"; step: number }
  | { type: "message_start"; message: AgentMessage }
  // 只有 assistant 会增长：message 是这一刻的 partial，event 是模型送来的原始事件。
  | { type: "message_update"; message: AssistantMessage; event: ModelEvent }
  | { type: "message_end"; message: AgentMessage }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: unknown }
  | { type: "tool_execution_update"; toolCallId: string; toolName: string; partial: ToolOutput }
  | { type: "tool_execution_end"; toolCallId: string; toolName: string; result: ToolResultMessage; isError: boolean }
  | { type: "turn_end"; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: "agent_end"; messages: AgentMessage[]; reason: AgentEndReason; errorMessage?: string };

/** 闸一：在 transcript 的副本上裁剪或注入，结果仍是 AgentMessage，可以含应用自己的角色。 */
export type TransformContext = (
  messages: AgentMessage[],
  signal: AbortSignal,
) => AgentMessage[] | Promise<AgentMessage[]>;

/** 闸二：通往模型的唯一出口，交出的只能是模型认识的四种消息。 */
export type ConvertToLlm = (messages: AgentMessage[]) => Message[] | Promise<Message[]>;

/** 工具执行之前看一眼的钩子（上游同名）：交回 block 就不执行，reason 成为那条结果的文字。 */
export interface BeforeToolCallContext {
  assistantMessage: AssistantMessage;
  toolCall: ToolCall;
  /** 模型给出的参数（还没有按 schema 检查：检查在 executeToolCall 里）。 */
  args: unknown;
}
export interface BeforeToolCallResult {
  block?: boolean;
  reason?: string;
}
export type BeforeToolCall = (context: BeforeToolCallContext, signal: AbortSignal) => Promise<BeforeToolCallResult | undefined>;

/** 工具执行之后、结果进 transcript 之前的钩子：交回的字段逐个替换，没交回的保持原样。 */
export interface AfterToolCallContext extends BeforeToolCallContext {
  result: ToolResultMessage;
  isError: boolean;
}
export interface AfterToolCallResult {
  content?: TextContent[];
  details?: unknown;
  isError?: boolean;
}
export type AfterToolCall = (context: AfterToolCallContext, signal: AbortSignal) => Promise<AfterToolCallResult | undefined>;

/**
 * 一次改写只盖住它写出的字段：content、details、isError 各自可选，没写的保持原样。
 * afterToolCall 钩子与扩展的 tool_result 处理器守的是同一条规则，所以只写在这里。
 */
export function withOverride<T extends { content: TextContent[]; details?: unknown; isError: boolean }>(base: T, override: AfterToolCallResult): T {
  // 副本与 base 同型：下面只换掉同名、同类型的字段
  const merged: T = { ...base };
  if (override.content !== undefined) merged.content = override.content;
  if (override.details !== undefined) merged.details = override.details;
  if (override.isError !== undefined) merged.isError = override.isError;
  return merged;
}

/** 钩子抛出（或 reject）时交给它：调用照样有结果，这里只负责让人知道。 */
export type HookErrorHandler = (error: unknown, hook: "beforeToolCall" | "afterToolCall", toolCall: ToolCall) => void;

export interface AgentLoopOptions {
  model: Model;
  /** 到目前为止的 transcript（通常以新的 user 消息结尾）；循环只读不改。 */
  messages: readonly AgentMessage[];
  tools: ToolRegistry;
  signal?: AbortSignal;
  /** 每次调用模型之前先经过它；省略时原样通过。 */
  transformContext?: TransformContext;
  /** 紧接着 transformContext；省略时用 defaultConvertToLlm。 */
  convertToLlm?: ConvertToLlm;
  beforeToolCall?: BeforeToolCall;
  afterToolCall?: AfterToolCall;
  /** 钩子抛出的异常交给它；默认打印到 stderr。 */
  onHookError?: HookErrorHandler;
  /** 最多调用模型几次，默认 20：模型反复请求工具时，循环也会停下。 */
  maxSteps?: number;
  onEvent?: (event: AgentEvent) => void;
  /** 循环自己写的 toolResult 用它取时间戳；测试传入固定值。 */
  now?: () => number;
}

export interface AgentRunResult {
  /** 这次运行新追加的消息，按发生顺序：assistant 与 toolResult 交替。 */
  messages: AgentMessage[];
  reason: AgentEndReason;
  /** reason 为 error 或 protocol_error 时说明原因。 */
  errorMessage?: string;
}

/** 一个 turn 结束后的决定：执行这些调用并继续，或者带着没执行的调用结束。 */
export type TurnPlan =
  | { kind: "execute"; calls: ToolCall[] }
  | { kind: "finish"; unexecuted: ToolCall[]; end: AgentEnd };

/** 循环停下时交出的说明（不含消息本身）。 */
export type AgentEnd = Omit<AgentRunResult, "messages">;

/** 没有执行的调用，结果的 details：程序据此知道它为什么没跑。 */
export interface NotExecutedDetails {
  kind: "not_executed";
  stopReason: StopReason;
}

const DEFAULT_MAX_STEPS = 20;

const TOOL_USE_WITHOUT_CALLS = "模型以 toolUse 结束，却没有请求任何工具。";
const STOP_WITH_CALLS = "模型以 stop 结束，却请求了工具。";

// ── 纯函数：读 turn，做决定 ─────────────────────────────────────

export function toolCallsOf(message: AssistantMessage): ToolCall[] {
  return message.content.filter((block): block is ToolCall => block.type === "toolCall");
}

/** 根据 stopReason 和工具调用决定下一步；规则见文件开头的表。 */
export function planTurn(message: AssistantMessage): TurnPlan {
  const calls = toolCallsOf(message);
  // #region lab 7.3
  switch (message.stopReason) {
    case "toolUse":
      if (calls.length > 0) return { kind: "execute", calls };
      return finish([], "protocol_error", TOOL_USE_WITHOUT_CALLS);
    case "stop":
      if (calls.length === 0) return finish([], "stop");
      return finish(calls, "protocol_error", STOP_WITH_CALLS);
    case "length":
    // #endregion
    // #region lab 19.1 扩展
    case "deferred":
    // #endregion
    // #region lab 7.3
    case "aborted":
      return finish(calls, message.stopReason);
    case "error":
      return finish(calls, "error", message.errorMessage ?? "模型调用失败。");
  }
  // #endregion
}

function finish(unexecuted: ToolCall[], reason: AgentEndReason, errorMessage?: string): TurnPlan {
  const end: AgentEnd = errorMessage === undefined ? { reason } : { reason, errorMessage };
  return { kind: "finish", unexecuted, end };
}

/** 没执行的原因，按那个 turn 的 stopReason 查。 */
const WHY_NOT_EXECUTED: Record<StopReason, string> = {
  toolUse: "循环没有执行它",
  stop: "模型以 stop 结束，不该再请求工具",
  length: "模型输出被截断（length），参数可能不完整",
  error: "模型这次生成出错（error）",
  aborted: "这次生成被取消了（aborted）",
  deferred: "Provider 把这次回复推迟了（deferred）",
};

/** 没有执行的调用也要有一条结果：transcript 里每个 tool call 都必须配对，Provider 才肯接下一次请求。 */
export function notExecutedResult(call: ToolCall, stopReason: StopReason, timestamp: number): ToolResultMessage {
  // #region lab 7.3
  const details: NotExecutedDetails = { kind: "not_executed", stopReason };
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [text(`工具 ${call.name} 没有执行：${WHY_NOT_EXECUTED[stopReason]}。`)],
    isError: true,
    details,
    timestamp,
  };
  // #endregion
}

// ── 两道闸：transcript → 这一次请求的 context ──────────────────

// #region lab 9.4 辅助
/** 请求里只能出现这四种角色；应用登记的角色一个也不在其中。 */
const LLM_ROLES: ReadonlySet<string> = new Set<Message["role"]>(["system", "user", "assistant", "toolResult"]);

function isLlmMessage(message: AgentMessage): message is Message {
  return LLM_ROLES.has(message.role);
}

/** 取消赢了赛跑时交回的记号。 */
export const ABORTED = Symbol("aborted");

/**
 * 闸是应用写的代码，可能永远不返回：与 signal 赛跑，取消一到就不再等它。
 * 输掉赛跑的那一方之后再 reject 也无妨：then 已经接住了它。
 * 导出它：第 12 章的扩展处理器也是应用写的代码，同一条规则不再写第二遍。
 */
export function untilAborted<T>(work: T | PromiseLike<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(work)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}
// #endregion

/** 模型认识的角色原样留下，别的（应用自己登记的角色）一声不响地丢掉。 */
export function defaultConvertToLlm(messages: AgentMessage[]): Message[] {
  // #region lab 9.4
  return messages.filter(isLlmMessage);
  // #endregion
}

/**
 * 这一次请求的消息。顺序固定：先 transform，再 convert。两道闸都拿副本，transcript 本身一个字节也不变。
 * 每道闸都与 signal 赛跑：闸还没交回就被取消时交回 undefined，循环以 aborted 结束。
 */
export async function buildLlmMessages(
  transcript: readonly AgentMessage[],
  options: Pick<AgentLoopOptions, "transformContext" | "convertToLlm">,
  signal: AbortSignal,
): Promise<Message[] | undefined> {
  // #region lab 9.4
  let messages: AgentMessage[] = [...transcript];
  if (options.transformContext !== undefined) {
    const transformed = await untilAborted(options.transformContext(messages, signal), signal);
    if (transformed === ABORTED) return undefined;
    messages = transformed;
  }
  const convert = options.convertToLlm ?? defaultConvertToLlm;
  const llmMessages = await untilAborted(convert([...messages]), signal);
  if (llmMessages === ABORTED) return undefined;
  return llmMessages;
  // #endregion
}

// ── 模型这一半：把模型流变成消息事件 ────────────────────────────

type Emit = (event: AgentEvent) => void;

/** 调用一次模型：把它的事件转成 message_start / update / end，交回最终的 assistant。 */
// #region lab 9.4 扩展
async function streamAssistant(messages: Message[], options: AgentLoopOptions, emit: Emit): Promise<AssistantMessage> {
// #endregion
  // #region lab 7.1
  const context = { messages, tools: options.tools.definitions() };
  const stream = options.model.stream(context, options.signal ? { signal: options.signal } : {});
  let started = false;
  for await (const event of stream) {
    if (event.type === "start") {
      started = true;
      emit({ type: "message_start", message: event.partial });
    } else if (event.type !== "done" && event.type !== "error") {
      emit({ type: "message_update", message: event.partial, event });
    }
  }
  const message = await stream.result();
  // 有的流一上来就是 error 终态（例如请求前已取消）：message_start 照样补上，事件才成对。
  if (!started) emit({ type: "message_start", message });
  emit({ type: "message_end", message });
  return message;
  // #endregion
}

// ── 工具这一半：并发执行，按源顺序交回 ──────────────────────────

// #region lab 12.4 辅助
const BLOCKED_BY_DEFAULT = "这次工具调用被拦下了。";
const HOOK_ABORTED = "Tool call not run: the run was aborted before the beforeToolCall hook decided.";

function hookFailedText(error: unknown): string {
  const reason = error instanceof Error ? error.message : String(error);
  return `Tool call blocked: the beforeToolCall hook failed (${reason}), so the tool was not run.`;
}

/** 问一次钩子的三种结局：给出了决定、抛出了异常，或者运行在它决定之前被取消了。 */
type HookOutcome<T> = { kind: "decided"; value: T } | { kind: "failed"; error: unknown } | { kind: "aborted" };

/** 钩子是应用写的代码：同步抛出、reject、永不返回，都变成一个结局，而不是一个没有结果的调用。 */
async function askHook<T>(ask: () => Promise<T>, signal: AbortSignal): Promise<HookOutcome<T>> {
  try {
    const value = await untilAborted(ask(), signal);
    return value === ABORTED ? { kind: "aborted" } : { kind: "decided", value };
  } catch (error) {
    return { kind: "failed", error };
  }
}

/** 拦下时模型读到的原因；放行交回 undefined。没给出决定（抛出、被取消）都算拦下：宁可不跑，不可越权。 */
function blockReason(outcome: HookOutcome<BeforeToolCallResult | undefined>): string | undefined {
  switch (outcome.kind) {
    case "decided":
      return outcome.value?.block === true ? (outcome.value.reason ?? BLOCKED_BY_DEFAULT) : undefined;
    case "failed":
      return hookFailedText(outcome.error);
    case "aborted":
      return HOOK_ABORTED;
  }
}

/** beforeToolCall 说 block（或没能说话）：不执行，写一条 isError 的结果，reason 就是模型读到的原因。 */
async function blockedResult(
  hook: BeforeToolCall,
  context: BeforeToolCallContext,
  signal: AbortSignal,
  now: () => number,
  report: HookErrorHandler,
): Promise<ToolResultMessage | undefined> {
  const outcome = await askHook(() => hook(context, signal), signal);
  if (outcome.kind === "failed") report(outcome.error, "beforeToolCall", context.toolCall);
  const reason = blockReason(outcome);
  if (reason === undefined) return undefined;
  const { toolCall } = context;
  return {
    role: "toolResult",
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    content: [text(reason)],
    isError: true,
    details: { kind: "blocked" },
    timestamp: now(),
  };
}

/** afterToolCall 交回的字段逐个替换；配对键和时间戳不归它改。它抛出或被取消时，原来的结果原样留下。 */
async function rewrittenResult(
  hook: AfterToolCall,
  context: AfterToolCallContext,
  signal: AbortSignal,
  report: HookErrorHandler,
): Promise<ToolResultMessage> {
  const outcome = await askHook(() => hook(context, signal), signal);
  if (outcome.kind === "failed") report(outcome.error, "afterToolCall", context.toolCall);
  if (outcome.kind !== "decided" || outcome.value === undefined) return context.result;
  return withOverride(context.result, outcome.value);
}

function defaultHookError(error: unknown, hook: string, toolCall: ToolCall): void {
  console.error(`工具钩子 ${hook} 处理 ${toolCall.name}（${toolCall.id}）时抛出了异常（这次调用照样有结果）：`, error);
}
// #endregion

/** 执行一次调用，前后各过一道钩子（有的话）。 */
async function executeWithHooks(
  call: ToolCall,
  assistantMessage: AssistantMessage,
  options: AgentLoopOptions,
  execute: ExecuteOptions,
): Promise<ToolResultMessage> {
  // 第 16 章：工具里再调用的工具（codemode 的脚本）走同一条路：同样的钩子、同样的参数检查，范围换成 script。
  const clock = execute.now;
  execute = { ...execute, callTool: (nested, signal) => executeWithHooks(nested, assistantMessage, options, { signal, now: clock, scope: "script" }) };
  if (options.beforeToolCall === undefined && options.afterToolCall === undefined) {
    return executeToolCall(options.tools, call, execute);
  }
  // #region lab 12.4
  const now = execute.now ?? Date.now;
  const report = options.onHookError ?? defaultHookError;
  const base = { assistantMessage, toolCall: call, args: call.arguments };
  if (options.beforeToolCall !== undefined) {
    const blocked = await blockedResult(options.beforeToolCall, base, execute.signal, now, report);
    if (blocked !== undefined) return blocked;
  }
  const result = await executeToolCall(options.tools, call, execute);
  if (options.afterToolCall === undefined) return result;
  return rewrittenResult(options.afterToolCall, { ...base, result, isError: result.isError }, execute.signal, report);
  // #endregion
}

/** 同一 turn 的调用同时开始；executeToolCall 从不抛出，所以 Promise.all 一定等到每一条结果。 */
async function executeToolBatch(
  // #region lab 12.4 扩展
  assistantMessage: AssistantMessage,
  // #endregion
  calls: readonly ToolCall[],
  options: AgentLoopOptions,
  signal: AbortSignal,
  emit: Emit,
): Promise<ToolResultMessage[]> {
  // #region lab 7.2
  const now = options.now ?? Date.now;
  const results: ToolResultMessage[] = [];
  const runOne = async (call: ToolCall, index: number) => {
    const ids = { toolCallId: call.id, toolName: call.name };
    emit({ type: "tool_execution_start", ...ids, args: call.arguments });
    const onUpdate = (partial: ToolOutput) => emit({ type: "tool_execution_update", ...ids, partial });
  // #endregion
    // #region lab 12.4 扩展
    const result = await executeWithHooks(call, assistantMessage, options, { signal, onUpdate, now });
    // #endregion
  // #region lab 7.2
    emit({ type: "tool_execution_end", ...ids, result, isError: result.isError });
    // 按下标放回：模型读到的结果顺序与它提出请求的顺序一致，与谁先完成无关。
    results[index] = result;
  };
  await Promise.all(calls.map(runOne));
  return results;
  // #endregion
}

// ── 批次之间的声明补丁（第 15 章） ──────────────────────────────

// #region lab 15.5 辅助
function declaresTools(transcript: readonly AgentMessage[]): boolean {
  return transcript.some(
    (message) => message.role === "system" && (message.toolsAdded !== undefined || message.toolsRemoved !== undefined),
  );
}

/**
 * transcript 声明的工具集与注册表此刻的声明集不同时，交回一条把它补齐的 system 补丁；相同就是 undefined。
 * 比较与第 09 章的 toolChange 是同一条规则（名字相同、sameDefinition 相同才算没变）。
 * 从没声明过工具的 transcript 不写补丁：那时 Provider 每次请求直接带注册表的定义。
 */
function declarationPatch(
  transcript: readonly AgentMessage[],
  wanted: readonly ToolDefinition[],
  timestamp: number,
): SystemMessage | undefined {
  if (!declaresTools(transcript)) return undefined;
  const declared = currentTools(transcript);
  const before = new Map(declared.map((tool) => [tool.name, tool]));
  const after = new Set(wanted.map((tool) => tool.name));
  const added = wanted.filter((tool) => {
    const old = before.get(tool.name);
    return old === undefined || !sameDefinition(old, tool);
  });
  const removed = declared.filter((tool) => !after.has(tool.name)).map((tool) => ({ name: tool.name }));
  if (added.length === 0 && removed.length === 0) return undefined;
  const patch: SystemMessage = { role: "system", content: "", timestamp };
  if (added.length > 0) patch.toolsAdded = added;
  if (removed.length > 0) patch.toolsRemoved = removed;
  return patch;
}
// #endregion

// ── 循环 ────────────────────────────────────────────────────────

/** 下一次调用模型之前的检查：已取消，或步数用完，就不再发起。 */
function stopBeforeCall(step: number, options: AgentLoopOptions): AgentEndReason | undefined {
  // #region lab 7.4
  if (options.signal?.aborted) return "aborted";
  if (step > (options.maxSteps ?? DEFAULT_MAX_STEPS)) return "max_steps";
  // #endregion
  return undefined;
}

/** 一个接一个地跑 turn，新消息追加进 added；返回停下的原因。 */
async function runTurns(options: AgentLoopOptions, added: AgentMessage[], emit: Emit): Promise<AgentEnd> {
  // #region lab 7.1
  const signal = options.signal ?? new AbortController().signal;
  const now = options.now ?? Date.now;
  for (let step = 1; ; step += 1) {
    const blocked = stopBeforeCall(step, options);
    if (blocked !== undefined) return { reason: blocked };

    emit({ type: "turn_start", step });
    // #endregion
    // #region lab 9.4 扩展
    const llmMessages = await buildLlmMessages([...options.messages, ...added], options, signal);
    // 闸还没交回就被取消：不调用模型，和 stopBeforeCall 一样以 aborted 结束。
    if (llmMessages === undefined) return { reason: "aborted" };
    const message = await streamAssistant(llmMessages, options, emit);
    // #endregion
    // #region lab 7.1
    added.push(message);

    const plan = planTurn(message);
    const toolResults =
      plan.kind === "execute"
  // #endregion
        // #region lab 12.4 扩展
        ? await executeToolBatch(message, plan.calls, options, signal, emit)
        // #endregion
  // #region lab 7.1
        : plan.unexecuted.map((call) => notExecutedResult(call, message.stopReason, now()));
    for (const result of toolResults) {
      emit({ type: "message_start", message: result });
      emit({ type: "message_end", message: result });
      added.push(result);
    }
    emit({ type: "turn_end", message, toolResults });
    if (plan.kind === "finish") return plan.end;
    // #endregion
    // #region lab 15.5 扩展
    // 这一批工具改了声明集（tool_search 加载、上限卸载）：下一次请求之前写一条 system 补丁。
    const patch = declarationPatch([...options.messages, ...added], options.tools.definitions(), now());
    if (patch !== undefined) {
      emit({ type: "message_start", message: patch });
      emit({ type: "message_end", message: patch });
      added.push(patch);
    }
    // #endregion
    // #region lab 7.1
  }
  // #endregion
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentRunResult> {
  // #region lab 7.1
  const emit: Emit = options.onEvent ?? (() => {});
  const added: AgentMessage[] = [];
  emit({ type: "agent_start" });
  const end = await runTurns(options, added, emit);
  emit({ type: "agent_end", messages: added, ...end });
  return { messages: added, ...end };
  // #endregion
}
