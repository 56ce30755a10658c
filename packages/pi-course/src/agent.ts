/**
 * 有状态的 Agent：拥有 transcript，一次只跑一个第 07 章的循环，把循环的事件推成状态，再告诉订阅者。
 *
 * 三条所有权规则：
 *   指令和工具集不另存一份：需要时把 transcript 中的 system 消息按顺序叠加一遍求出来；
 *     要改，只能在末尾添一条新的 system 消息，写下的前缀永远原样。
 *   状态只由事件推出（reduceAgentState），先更新状态，再通知订阅者。
 *   一次运行结束以后，它漏出来的迟到事件一律不算数。
 *
 * 订阅者拿到的是冻住的快照，事件排队送达：监听器在回调里开的下一次运行，
 * 它的事件排在这一个事件送完之后；交回 Promise 的监听器最多等 LISTENER_TIME_LIMIT_MS。
 */

import {
  runAgentLoop,
  type AfterToolCall,
  type AgentEvent,
  type BeforeToolCall,
  type ConvertToLlm,
  type HookErrorHandler,
  type TransformContext,
} from "./agent-loop.js";
import { freezeSettled, frozenSnapshot, initialAgentState, reduceAgentState, type AgentState } from "./agent-state.js";
import { sameDefinition } from "./canonical-json.js";
import { ToolRegistry, type AgentTool } from "./tools.js";
import {
  currentSystemPrompt,
  currentTools,
  userMessage,
  type AgentMessage,
  type Model,
  type SystemMessage,
  type ToolDefinition,
  type ToolReference,
} from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface AgentOptions {
  model: Model;
  /** 成为 transcript 的第一条 system message；与 messages 二选一。 */
  systemPrompt?: string;
  tools?: readonly AgentTool<any>[];
  /** 续接一份已有的 transcript（例如从会话文件读回来的）。 */
  messages?: readonly AgentMessage[];
  transformContext?: TransformContext;
  /** 省略时用 defaultConvertToLlm：应用自己的角色会被悄悄丢掉。 */
  convertToLlm?: ConvertToLlm;
  /** 每次执行工具之前 / 之后（第 12 章：扩展的 tool_call 与 tool_result 就接在这里）。 */
  beforeToolCall?: BeforeToolCall;
  afterToolCall?: AfterToolCall;
  /** 钩子抛出的异常交给它（调用照样有结果）；默认打印到 stderr。 */
  onHookError?: HookErrorHandler;
  maxSteps?: number;
  /** Agent 自己写的消息（用户消息、工具变化）用它取时间戳；测试传入固定值。 */
  now?: () => number;
  /** 监听器抛出的异常交给它；默认打印到 stderr。 */
  onListenerError?: (error: unknown, event: AgentEvent) => void;
}

/**
 * 订阅者看到的是事件，以及这个事件推导之后的状态（冻住的快照）。
 * 监听器可以是 async 函数（它也能赋给返回 void 的类型）：交回的 Promise 在送下一个事件之前等它兑现。
 */
export type AgentListener = (event: AgentEvent, state: AgentState) => void;

/** 一句话，或者一组消息（可以以 system 补丁开头，随后是用户消息）。 */
export type PromptInput = string | readonly AgentMessage[];

/** 工具集的一次变化：加入（或换了定义）的，和撤下的。 */
export interface ToolChange {
  added: ToolDefinition[];
  removed: ToolReference[];
}

const BUSY =
  "Agent 正在运行：上一次 prompt 还没有结束，不能再开一次。请先 await agent.waitForIdle()，或者 abort() 之后再等它停下。";
const BUSY_EDIT = "Agent 正在运行：运行中不能改 transcript。请先 await agent.waitForIdle()。";
/** 一个监听器交回的 Promise 最多等这么久：过了时限就报告它，事件照常往下送，prompt() 不会被它挂住。 */
export const LISTENER_TIME_LIMIT_MS = 500;

const LISTENER_TOO_SLOW = `监听器交回的 Promise 超过 ${LISTENER_TIME_LIMIT_MS} ms 还没兑现：不再等它，事件照常往下送。`;
const BOTH_STARTS =
  "systemPrompt 和 messages 只能给一个：续接的 transcript 里已经有自己的 system prompt，改它请追加 system message。";

// ── 纯函数：工具集的差量 ────────────────────────────────────────

/** transcript 声明的工具集 → Agent 想要的工具集；没有变化时交回 undefined。 */
export function toolChange(
  declared: readonly ToolDefinition[],
  wanted: readonly ToolDefinition[],
): ToolChange | undefined {
  // #region lab 9.5
  const before = new Map(declared.map((tool) => [tool.name, tool]));
  const after = new Set(wanted.map((tool) => tool.name));
  const added = wanted.filter((tool) => {
    const old = before.get(tool.name);
    return old === undefined || !sameDefinition(old, tool);
  });
  const removed = declared.filter((tool) => !after.has(tool.name)).map((tool) => ({ name: tool.name }));
  if (added.length === 0 && removed.length === 0) return undefined;
  return { added, removed };
  // #endregion
}

/**
 * 把变化并进一条已经在等待的 system 补丁。重放时一条消息先撤下、再加入，
 * 所以补丁自己加入、随后又被撤下的工具要从它的 toolsAdded 里拿掉。
 */
export function mergeToolChange(patch: SystemMessage, change: ToolChange): SystemMessage {
  // #region lab 9.5
  const dropped = new Set([...change.removed, ...change.added].map((tool) => tool.name));
  const added = [...(patch.toolsAdded ?? []).filter((tool) => !dropped.has(tool.name)), ...change.added];
  const removedNames = new Set([...(patch.toolsRemoved ?? []), ...change.removed].map((tool) => tool.name));
  const merged: SystemMessage = { ...patch };
  delete merged.toolsAdded;
  delete merged.toolsRemoved;
  if (added.length > 0) merged.toolsAdded = added;
  if (removedNames.size > 0) merged.toolsRemoved = [...removedNames].map((name) => ({ name }));
  return merged;
  // #endregion
}

function leadingSystemCount(messages: readonly AgentMessage[]): number {
  const index = messages.findIndex((message) => message.role !== "system");
  return index === -1 ? messages.length : index;
}

/**
 * 这次要追加的消息，带上工具集的变化：输入以 system 补丁开头时并进最后一条补丁，
 * 否则在前面新添一条。无论哪种，一次变化只占一条 system message。
 */
export function withToolChange(
  transcript: readonly AgentMessage[],
  incoming: readonly AgentMessage[],
  wanted: readonly ToolDefinition[],
  timestamp: number,
): AgentMessage[] {
  // #region lab 9.5
  const leading = leadingSystemCount(incoming);
  const change = toolChange(currentTools([...transcript, ...incoming.slice(0, leading)]), wanted);
  if (change === undefined) return [...incoming];
  const waiting = incoming[leading - 1];
  if (waiting === undefined || waiting.role !== "system") {
    return [mergeToolChange({ role: "system", content: "", timestamp }, change), ...incoming];
  }
  return [...incoming.slice(0, leading - 1), mergeToolChange(waiting, change), ...incoming.slice(leading)];
  // #endregion
}

/** 构造时的 transcript：续接给定的消息，或者以 systemPrompt（连同工具集）开头。 */
export function initialTranscript(
  options: Pick<AgentOptions, "systemPrompt" | "messages">,
  tools: readonly ToolDefinition[],
  timestamp: number,
): AgentMessage[] {
  // #region lab 9.3
  if (options.messages !== undefined) {
    if (options.systemPrompt !== undefined) throw new Error(BOTH_STARTS);
    return [...options.messages];
  }
  if (options.systemPrompt === undefined) return [];
  const first: SystemMessage = { role: "system", content: options.systemPrompt, timestamp };
  if (tools.length > 0) first.toolsAdded = [...tools];
  return [first];
  // #endregion
}

function promptMessages(input: PromptInput, timestamp: number): AgentMessage[] {
  if (typeof input === "string") return [userMessage(input, timestamp)];
  if (input.length === 0) throw new Error("prompt 至少要有一条消息。");
  return [...input];
}

function defaultListenerError(error: unknown): void {
  console.error("Agent 的一个监听器抛出了异常（已忽略，运行继续）：", error);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === "function";
}

/**
 * 等 work 兑现，最多 ms 毫秒；超时就以 message reject，work 之后怎样都不再管。计时器无论如何都清掉，不拖住进程退出。
 * 导出它：第 12 章的扩展（加载时、生命周期事件里）也是应用写的、可能永远不结束的代码，同一条规则不写第二遍。
 */
export async function withTimeout<T>(work: PromiseLike<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// ── Agent ───────────────────────────────────────────────────────

/** 一次运行：它自己的取消开关、结束标记，和一个在它的 agent_end 送到每个监听器之后兑现的 Promise。 */
class Run {
  readonly controller = new AbortController();
  ended = false;
  readonly finished: Promise<void>;
  settle: () => void = () => {};

  constructor() {
    this.finished = new Promise((resolve) => (this.settle = resolve));
  }
}

export class Agent {
  private readonly options: AgentOptions;
  private readonly now: () => number;
  private current: AgentState;
  private toolList: AgentTool<any>[];
  private readonly listeners: { listener: AgentListener }[] = [];
  private active: Run | undefined;
  /** 排队等着送给监听器的事件，各自带着推导之后的快照；flushing 时新来的只排队。 */
  private readonly outbox: { event: AgentEvent; state: AgentState; run: Run }[] = [];
  private flushing = false;
  private flushed: Promise<void> = Promise.resolve();

  constructor(options: AgentOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.toolList = [...(options.tools ?? [])];
    const registry = new ToolRegistry(this.toolList);
    this.current = frozenSnapshot(initialAgentState(initialTranscript(options, registry.definitions(), this.now())));
  }

  /** 当前状态的快照（冻住的）：它不会在你手里变，你也改不动它；下一次事件会换上一个新对象。 */
  get state(): AgentState {
    return this.current;
  }

  /** 只读视图：从 transcript 里的 system message 重放出来；没有 setter，改它请追加 system message。 */
  get systemPrompt(): string | undefined {
    // #region lab 9.3
    return currentSystemPrompt(this.current.messages);
    // #endregion
  }

  get tools(): readonly AgentTool<any>[] {
    return this.toolList;
  }

  /** 换一套工具。transcript 不在这里改：下一次 prompt 之前才把差量写成一条 system message。 */
  setTools(tools: readonly AgentTool<any>[]): void {
    // 先登记一遍：同名工具在这里就报错，而不是等到下一次运行。
    new ToolRegistry(tools);
    this.toolList = [...tools];
  }

  subscribe(listener: AgentListener): () => void {
    // 包一层对象：同一个函数订阅两次，也能各自退订。
    const entry = { listener };
    this.listeners.push(entry);
    return () => {
      const index = this.listeners.indexOf(entry);
      if (index !== -1) this.listeners.splice(index, 1);
    };
  }

  /** 追加一条消息（例如续接会话时补上的记录）。运行中拒绝。 */
  appendMessage(message: AgentMessage): void {
    if (this.active !== undefined) throw new Error(BUSY_EDIT);
    this.current = frozenSnapshot({ ...this.current, messages: [...this.current.messages, message] });
  }

  /** 整份换掉 transcript（例如切到会话树的另一条分支）。运行中拒绝。 */
  replaceMessages(messages: readonly AgentMessage[]): void {
    if (this.active !== undefined) throw new Error(BUSY_EDIT);
    this.current = frozenSnapshot({ ...this.current, messages: [...messages] });
  }

  /** 取消正在进行的运行；运行照常以 agent_end 收尾。没有运行时什么也不做。 */
  abort(): void {
    this.active?.controller.abort();
  }

  /** 等到没有运行、也没有待送的事件为止：监听器在 agent_end 里开的下一次运行，也一并等完。 */
  async waitForIdle(): Promise<void> {
    while (this.active !== undefined || this.flushing) await (this.active?.finished ?? this.flushed);
  }

  /**
   * 开始一次运行，在它结束、它的 agent_end 送到每个监听器之后兑现。模型或工具的失败写进 state.error，
   * 不会让它 reject；只有“正在运行”和空输入会立刻 reject。
   */
  async prompt(input: PromptInput): Promise<void> {
    // #region lab 9.2
    // 检查和占位之间没有 await：两次紧挨着的 prompt，第二次一定看到第一次的占位。
    if (this.active !== undefined) throw new Error(BUSY);
    const registry = new ToolRegistry(this.toolList);
    const timestamp = this.now();
    const incoming = withToolChange(
      this.current.messages,
      promptMessages(input, timestamp),
      registry.definitions(),
      timestamp,
    );
    const run = new Run();
    this.active = run;
    try {
      // runAgentLoop 同步发出 agent_start：prompt() 一返回，state.status 就已经是 running。
      await runAgentLoop({
        model: this.options.model,
        messages: [...this.current.messages, ...incoming],
        tools: registry,
        signal: run.controller.signal,
        transformContext: this.options.transformContext,
        convertToLlm: this.options.convertToLlm,
    // #endregion
        // #region lab 12.4 扩展
        beforeToolCall: this.options.beforeToolCall,
        afterToolCall: this.options.afterToolCall,
        onHookError: this.options.onHookError,
        // #endregion
    // #region lab 9.2
        maxSteps: this.options.maxSteps,
        now: this.now,
        onEvent: (event) => this.receive(run, event, incoming),
      });
    } catch (error) {
      // 循环本身抛出（例如某道闸抛了异常）：它没来得及发 agent_end，由这里补上，状态才会回到 idle。
      const reason = error instanceof Error ? error.message : String(error);
      this.receive(run, { type: "agent_end", messages: [], reason: "error", errorMessage: `运行失败：${reason}` }, incoming);
    }
    await run.finished;
    // #endregion
  }

  // #region lab 9.2 辅助
  /** 循环的每个事件都从这里进来：先挡掉迟到的，再冻住事件、推状态（也冻住），最后排队通知订阅者。 */
  private receive(run: Run, event: AgentEvent, incoming: readonly AgentMessage[]): void {
    if (run.ended) return;
    if (event.type === "agent_end") {
      // 先让出“正在运行”的位置：agent_end 的监听器可以立刻开始下一次运行。
      run.ended = true;
      if (this.active === run) this.active = undefined;
    }
    freezeSettled(event);
    this.current = frozenSnapshot(reduceAgentState(this.current, event));
    this.notify(event, this.current, run);
    if (event.type === "agent_start") {
      // 这次输入的消息和循环自己的消息走同一条路：先成为状态，再被订阅者看到。
      for (const message of incoming) {
        this.receive(run, { type: "message_start", message }, incoming);
        this.receive(run, { type: "message_end", message }, incoming);
      }
    }
  }

  /**
   * 事件先排队再送：正在送的时候（例如监听器在回调里开了下一次运行）新来的排在队尾，
   * 每个监听器看到的顺序都与发生顺序相同。没人交回 Promise 时，这里同步送完。
   */
  private notify(event: AgentEvent, state: AgentState, run: Run): void {
    this.outbox.push({ event, state, run });
    if (!this.flushing) this.flushed = this.flush();
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      for (let next = this.outbox.shift(); next !== undefined; next = this.outbox.shift()) {
        // 拷一份名单：监听器在回调里退订，不会让别的监听器被跳过。
        for (const { listener } of [...this.listeners]) {
          const pending = this.call(listener, next.event, next.state);
          if (pending !== undefined) await pending;
        }
        if (next.event.type === "agent_end") next.run.settle();
      }
    } finally {
      this.flushing = false;
    }
  }

  /** 调用一个监听器。抛出的异常当场报告；交回 Promise 的，交回一个最多等 LISTENER_TIME_LIMIT_MS、从不 reject 的 Promise。 */
  private call(listener: AgentListener, event: AgentEvent, state: AgentState): Promise<void> | undefined {
    const report = (error: unknown) => (this.options.onListenerError ?? defaultListenerError)(error, event);
    try {
      const outcome: unknown = listener(event, state);
      if (isThenable(outcome)) return withTimeout(outcome, LISTENER_TIME_LIMIT_MS, LISTENER_TOO_SLOW).then(() => undefined, report);
    } catch (error) {
      report(error);
    }
    return undefined;
  }
  // #endregion
}
