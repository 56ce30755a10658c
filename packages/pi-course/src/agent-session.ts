/**
 * AgentSession：一个 Agent 加一棵会话树。Agent 管运行，树管记录。
 *
 *   Agent 每定稿一条消息（message_end），这里就把它追加进树：写进文件的就是发生过的事。
 *   打开一份已有的会话时，Agent 从树的当前路径续上，接着对话；system prompt 也从记录里来。
 *   两种“模型不该看见”的数据：
 *     appendEntry(customType, data)  只是一个 custom 条目：保存、可以重放给界面，从不进请求；
 *     sendMessage({ … })             一条 custom 角色的消息：只有 content 以 user 身份进请求，
 *                                     display 与 details 留在记录里。
 *   写不进记录的会话不再使用：一条消息没能写进去，这次运行就地停下，之后的 prompt 在问模型之前就被拒绝。
 *
 * 第 11 章接上上下文的构建与压缩：
 *   `!cmd` / `!!cmd`   用户自己的命令，记成 bashExecution；`!!` 的只存不发。
 *   compact()          请模型把切点之前的历史写成摘要，存成 compaction 条目；交回做了什么、或为什么没做。
 *   prompt()           提问之前连同这次的输入一起看预算，超出就先压缩：压缩用这次运行的 signal，
 *                      摘要失败不拦住提问，结局写在交回的报告里。
 *   navigateTree()     离开一条分支时，给它留一份 branch_summary。
 *
 * 第 12 章接上两样东西：
 *   资源（resources）   项目上下文与技能是第一条 system 里的具名段落；重新加载只追加一条段落补丁。
 *                       `/name 参数` 先找扩展命令，再找提示模板。
 *   扩展（extensions）  context / context_with_system 接在 transformContext 上（只影响这一次请求），
 *                       tool_call / tool_result 接在循环的 beforeToolCall / afterToolCall 上，
 *                       生命周期事件按发生顺序排队送达；扩展的 sendMessage / appendEntry 就是会话自己的。
 */

import { Agent, type AgentListener, type AgentOptions, type PromptInput } from "./agent.js";
import type { AgentEvent, TransformContext } from "./agent-loop.js";
import { bashTool } from "./coding-tools.js";
import {
  BRANCH_SUMMARY_PROMPT,
  COMPACTION_PROMPT,
  DEFAULT_COMPACTION_SETTINGS,
  generateSummary,
  planCompaction,
  shouldCompact,
  type CompactionSettings,
  type CompactionSkipCode,
} from "./compaction.js";
import { convertToLlm, createCustomMessage, type BashExecutionMessage, type CustomMessage, type CustomMessageInput } from "./messages.js";
import { assertStorable, type BranchSummaryEntry, type CompactionEntry, type CustomEntry } from "./session-entries.js";
import { contextItems, unwritable, type SessionTree } from "./session-tree.js";
import type { ExtensionRunner, LifecycleEvent } from "./extensions.js";
import type { Resources } from "./resources.js";
import { resourcePatch, resourceSections } from "./resources/sections.js";
import { expandPromptTemplate, splitSlashCommand, type PromptTemplate } from "./resources/skills.js";
import type { CommandResult } from "./shell.js";
import type { AgentTool } from "./tools.js";
import { currentSystemMessage, userMessage, type AgentMessage, type Model, type SystemMessage } from "./types.js";
import type { Workspace } from "./workspace.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface AgentSessionOptions {
  tree: SessionTree;
  model: Model;
  /** 只用于新会话：续接的会话里，system prompt 是记录的一部分，从记录里重放。 */
  systemPrompt?: string;
  tools?: readonly AgentTool<any>[];
  transformContext?: TransformContext;
  maxSteps?: number;
  /** Agent 与 custom 消息的时间戳；测试传入固定值。 */
  now?: () => number;
  /** 用户的 `!cmd` 在这里运行（第 08 章的 bash 工具）；没有工作区就不接受 `!` 命令。 */
  workspace?: Workspace;
  /** 上下文预算：每次提问之前检查，超出就先压缩。 */
  compaction?: CompactionSettings;
  /** 项目上下文、技能、提示模板（第 12 章）：新会话的第一条 system 带上它们的段落。 */
  resources?: Resources;
  /** 加载好的扩展（第 12 章）。 */
  extensions?: ExtensionRunner;
}

/** compact() 的结局：写下了哪个压缩条目，或者为什么没压缩（code 给界面去说话）。 */
export type CompactResult = { status: "compacted"; entry: CompactionEntry } | { status: "skipped"; code: CompactionSkipCode };

/** 提问之前的自动压缩怎样了：除了 compact() 的两种结局，还有摘要失败（照样提问）与被取消（不再提问）。 */
export type AutoCompaction = CompactResult | { status: "failed"; message: string } | { status: "aborted" };

/** prompt() 交回的报告：这次没有自动压缩就是 {}。 */
export interface PromptReport {
  compaction?: AutoCompaction;
}

/** 用户输入里的 shell 命令：`!cmd` 进上下文，`!!cmd` 不进。 */
export interface BashInput {
  command: string;
  excludeFromContext: boolean;
}

// ── 纯函数 ──────────────────────────────────────────────────────

/** `!!` 开头是不进上下文的命令，`!` 开头是普通命令；前缀后面什么都没有就不是命令。 */
export function parseBashInput(input: string): BashInput | undefined {
  // #region lab 11.2
  const excluded = input.startsWith("!!");
  if (!excluded && !input.startsWith("!")) return undefined;
  const command = input.slice(excluded ? 2 : 1).trim();
  if (command === "") return undefined;
  return { command, excludeFromContext: excluded };
  // #endregion
}

/** 一条定稿的消息怎样进树：custom 角色有自己的条目种类，别的原样存成 message 条目。 */
export function persistMessage(tree: SessionTree, message: AgentMessage): void {
  // #region lab 10.4
  if (message.role === "custom") {
    tree.appendCustomMessageEntry(message.customType, message.content, message.display, message.details);
  } else {
    tree.appendMessage(message);
  }
  // #endregion
}

/** 循环事件里扩展关心的那几个，换成扩展事件的形状；别的事件不送。 */
export function lifecycleEventOf(event: AgentEvent): LifecycleEvent | undefined {
  switch (event.type) {
    case "agent_start":
      return { type: "agent_start" };
    case "agent_end":
      return { type: "agent_end", messages: event.messages };
    case "turn_start":
      return { type: "turn_start", step: event.step };
    case "turn_end":
      return { type: "turn_end", message: event.message, toolResults: event.toolResults };
    default:
      return undefined;
  }
}

/**
 * 扩展在 Agent 上的三个接点。transformContext 先跑会话自己的（如果有），再交给扩展：
 * 它们的输出只进这一次请求，transcript 和会话文件都不经过这里。
 */
export function extensionAgentOptions(
  runner: ExtensionRunner,
  own: TransformContext | undefined,
): Pick<AgentOptions, "transformContext" | "beforeToolCall" | "afterToolCall"> {
  // #region lab 12.4
  return {
    transformContext: async (messages, signal) => runner.transformContext(own === undefined ? messages : await own(messages, signal)),
    beforeToolCall: async ({ toolCall, args }, signal) =>
      runner.emitToolCall({ type: "tool_call", toolCallId: toolCall.id, toolName: toolCall.name, input: args }, signal),
    afterToolCall: async ({ toolCall, args, result, isError }, signal) =>
      runner.emitToolResult({
        type: "tool_result",
        toolCallId: toolCall.id,
        toolName: toolCall.name,
        input: args,
        content: result.content,
        details: result.details,
        isError,
      }, signal),
  };
  // #endregion
}

// ── AgentSession ────────────────────────────────────────────────

export class AgentSession {
  readonly agent: Agent;
  readonly tree: SessionTree;
  private readonly now: () => number;
  private readonly options: AgentSessionOptions;
  /** 第一条没能写进记录的消息为什么没写进去；有了它，会话不再接受 prompt。 */
  private failure: unknown;
  private templates: readonly PromptTemplate[];
  /** 排队送给扩展的生命周期事件：一个接一个，顺序与发生顺序相同。 */
  private extensionEvents: Promise<void> = Promise.resolve();

  constructor(options: AgentSessionOptions) {
    this.options = options;
    this.tree = options.tree;
    this.templates = options.resources?.promptTemplates ?? [];
    this.now = options.now ?? Date.now;
    // #region lab 10.4
    const history = options.tree.buildSessionContext();
    const start = history.length > 0 ? { messages: history } : options.systemPrompt !== undefined ? { systemPrompt: options.systemPrompt } : {};
    this.agent = new Agent({
      model: options.model,
      ...start,
      tools: options.tools,
      transformContext: options.transformContext,
    // #endregion
      // #region lab 12.4 扩展
      // 有扩展时：工具集并进扩展登记的工具，三个接点接上 runner（写在后面，盖过上面的 tools 与 transformContext）。
      ...(options.extensions
        ? { tools: options.extensions.toolSet(options.tools ?? []), ...extensionAgentOptions(options.extensions, options.transformContext) }
        : {}),
      // #endregion
    // #region lab 10.4
      maxSteps: options.maxSteps,
      convertToLlm,
      now: this.now,
    });
    // #endregion
    // #region lab 12.3 扩展
    if (options.resources !== undefined) {
      // 新会话：段落写进第一条 system；续接的会话：资源可能在两次运行之间变了，差异写成一条补丁。
      if (history.length === 0) this.seedResources(options.resources);
      else this.patchResources(options.resources);
    }
    // #endregion
    // #region lab 10.4
    // 新会话：构造时写下的第一条 system message 不经过事件，这里补进记录。
    if (history.length === 0) for (const message of this.agent.state.messages) persistMessage(this.tree, message);
    // 之后的每一条（用户的输入、模型的回答、工具结果）都在 message_end 时落进记录。
    this.agent.subscribe((event) => {
      if (event.type === "message_end") this.record(event.message);
    });
    // #endregion
    // #region lab 12.4 扩展
    if (options.extensions !== undefined) this.bindExtensions(options.extensions);
    // #endregion
  }

  // #region lab 10.4 辅助
  /** transcript 里已经有了这条消息，记录却写不进去：记下原因并停下这次运行，别带着缺口再去问模型。 */
  private record(message: AgentMessage): void {
    try {
      persistMessage(this.tree, message);
    } catch (error) {
      this.failure ??= error;
      this.agent.abort();
    }
  }
  // #endregion

  /**
   * 运行中拒绝改动会话（切分支、压缩、`!` 命令……）：运行还在往记录里写条目，这时换掉 transcript 或移动 leaf，
   * 记录与内存就各说各话。action 说出被拒绝的是什么。
   */
  private assertIdle(action: string): void {
    if (this.agent.state.status === "running") throw new Error(`Agent 正在运行：运行中不能${action}。请先 await session.agent.waitForIdle()。`);
  }

  /** 记录写不进去（之前的写入失败过，或者有一条消息存不下）就抛出 unwritable。 */
  private async assertWritable(): Promise<void> {
    // #region lab 10.4
    await this.tree.assertWritable();
    if (this.failure !== undefined) throw unwritable(this.failure);
    // #endregion
  }

  /** 新会话的第一条 system 带上资源的具名段落：之后的重新加载才有东西可以按名字补丁。 */
  private seedResources(resources: Resources): void {
    // #region lab 12.3
    const [first, ...rest] = this.agent.state.messages;
    const sections = resourceSections(resources);
    if (Object.keys(sections).length === 0) return;
    const head: SystemMessage =
      first?.role === "system"
        ? { ...first, sections: { ...first.sections, ...sections } }
        : { role: "system", content: "", sections, timestamp: this.now() };
    this.agent.replaceMessages(first?.role === "system" ? [head, ...rest] : [head, ...this.agent.state.messages]);
    // #endregion
  }

  /**
   * 资源变了（重新加载）：追加一条只写变化的 system 补丁，写下的 prompt 一个字节都不改。
   * 没有变化就不写；交回写下的补丁。运行中拒绝。
   */
  async reloadResources(resources: Resources): Promise<SystemMessage | undefined> {
    this.assertIdle("重新加载资源");
    const patch = this.patchResources(resources);
    await this.tree.flush();
    return patch;
  }

  /** 与重放出的段落比较，有变化就追加并记下一条补丁（写盘排在树的队列里）。 */
  private patchResources(resources: Resources): SystemMessage | undefined {
    // #region lab 12.3
    this.templates = resources.promptTemplates;
    const before = currentSystemMessage(this.agent.state.messages)?.sections ?? {};
    const written = Object.fromEntries(Object.entries(before).filter((entry): entry is [string, string] => entry[1] !== null));
    const patch = resourcePatch(written, resourceSections(resources), this.now());
    if (patch === undefined) return undefined;
    this.agent.appendMessage(patch);
    persistMessage(this.tree, patch);
    return patch;
    // #endregion
  }

  /** 把会话的动作交给扩展，把 Agent 的生命周期事件排队送给它们，最后送出 session_start。 */
  private bindExtensions(runner: ExtensionRunner): void {
    // #region lab 12.4
    runner.bindActions({
      sendMessage: (input) => void this.sendMessage(input),
      appendEntry: (customType, data) => void this.appendEntry(customType, data),
      toolsChanged: () => this.agent.setTools(runner.toolSet(this.options.tools ?? [])),
    });
    this.agent.subscribe((event) => {
      const lifecycle = lifecycleEventOf(event);
      if (lifecycle !== undefined) this.queueExtensionEvent(runner, lifecycle);
    });
    this.queueExtensionEvent(runner, { type: "session_start" });
    // #endregion
  }

  // #region lab 12.4 辅助
  /** runner.emit 从不 reject（处理器的异常都交给 onError），所以这条链不会断。 */
  private queueExtensionEvent(runner: ExtensionRunner, event: LifecycleEvent): void {
    this.extensionEvents = this.extensionEvents.then(() => runner.emit(event));
  }
  // #endregion

  get messages(): readonly AgentMessage[] {
    return this.agent.state.messages;
  }

  subscribe(listener: AgentListener): () => void {
    return this.agent.subscribe(listener);
  }

  /**
   * 跑一次，并等这次产生的条目全部写完。写不进记录的会话在做任何事之前就拒绝。以 `!` 开头的一句话不问模型，交给 executeBash；
   * 问模型之前先看预算，超出就先压缩。signal 管这次运行的全程：压缩、提问、工具。
   */
  async prompt(input: PromptInput, options: { signal?: AbortSignal } = {}): Promise<PromptReport> {
    await this.assertWritable();
    const bash = typeof input === "string" ? parseBashInput(input) : undefined;
    if (bash !== undefined) {
      await this.executeBash(bash.command, { excludeFromContext: bash.excludeFromContext, signal: options.signal });
      return {};
    }
    if (typeof input === "string" && input.startsWith("/")) {
      const expanded = await this.slash(input);
      if (expanded === undefined) {
        await this.flush();
        return {};
      }
      input = expanded;
    }
    const compaction = await this.compactBeforePrompt(input, options.signal);
    // 取消发生在提问之前：这句话没有发出，也没有写进会话（调用方手里还有它）。
    if (compaction?.status === "aborted") return { compaction };
    await this.runAgent(input, options.signal);
    await this.flush();
    await this.assertWritable();
    return compaction === undefined ? {} : { compaction };
  }

  /**
   * 预算连同这次要发出的输入一起算：历史刚好装得下、加上一句长话就装不下时，也要先压缩。
   * 摘要失败不拦住提问（会话不能因为摘要服务挂了就用不了），失败写进报告；被取消就停下。
   */
  private async compactBeforePrompt(input: PromptInput, signal: AbortSignal | undefined): Promise<AutoCompaction | undefined> {
    const incoming = typeof input === "string" ? [userMessage(input, this.now())] : input;
    if (!shouldCompact([...this.agent.state.messages, ...incoming], this.settings)) return undefined;
    if (signal?.aborted) return { status: "aborted" };
    try {
      return await this.compact({ signal });
    } catch (error) {
      if (signal?.aborted) return { status: "aborted" };
      return { status: "failed", message: error instanceof Error ? error.message : String(error) };
    }
  }

  /** 这次运行的 signal 接到 Agent 上：调用方取消，运行照常以 aborted 收尾。 */
  private async runAgent(input: PromptInput, signal: AbortSignal | undefined): Promise<void> {
    const stop = () => this.agent.abort();
    signal?.addEventListener("abort", stop);
    try {
      const run = this.agent.prompt(input);
      if (signal?.aborted) stop();
      await run;
    } finally {
      signal?.removeEventListener("abort", stop);
    }
  }

  /** `/name 参数`：扩展命令优先（它处理了就交回 undefined），否则按提示模板展开；都不是就原样交回。 */
  private async slash(input: string): Promise<string | undefined> {
    // #region lab 12.6
    const command = splitSlashCommand(input);
    if (command !== undefined && this.options.extensions !== undefined && (await this.options.extensions.runCommand(command.name, command.args))) return undefined;
    return expandPromptTemplate(input, this.templates);
    // #endregion
  }

  /** 应用自己的状态：写一个 custom 条目。它不进 Agent 的 transcript，所以也到不了任何请求。 */
  appendEntry<T>(customType: string, data?: T): CustomEntry<T> {
    // #region lab 10.4
    return this.tree.appendCustomEntry(customType, data);
    // #endregion
  }

  /**
   * 让模型在下一次请求里读到一段话：追加一条 custom 消息（运行中拒绝）。
   * 它和别的消息一样进 transcript、进记录；convertToLlm 只把 content 交给模型。
   */
  sendMessage<T>(input: CustomMessageInput<T>): CustomMessage<T> {
    // #region lab 10.4
    const message = createCustomMessage(input.customType, input.content, input.display, input.details, this.now());
    // 先查存不存得下：存不下就当场失败，transcript 和记录都不多一条。
    assertStorable(message, "sendMessage 的消息");
    this.agent.appendMessage(message);
    persistMessage(this.tree, message);
    return message;
    // #endregion
  }

  /** 从较早的条目分叉：树的 leaf 移过去，Agent 的 transcript 换成根到那里的路径。运行中拒绝。 */
  branch(entryId: string): void {
    // #region lab 10.4
    this.assertIdle("切换分支");
    this.tree.branch(entryId);
    this.agent.replaceMessages(this.tree.buildSessionContext());
    // #endregion
  }

  /** 等排队中的扩展事件送达、写入全部落盘。 */
  async flush(): Promise<void> {
    await this.extensionEvents;
    await this.tree.flush();
  }

  private get settings(): CompactionSettings {
    return this.options.compaction ?? DEFAULT_COMPACTION_SETTINGS;
  }

  /**
   * 用户亲手运行的命令：经第 08 章的 bash 工具在工作区里跑，结果记成一条 bashExecution，
   * 追加进 transcript 并写进会话。excludeFromContext 只影响请求，不影响记录。运行中拒绝。
   */
  async executeBash(command: string, options: { excludeFromContext?: boolean; signal?: AbortSignal } = {}): Promise<BashExecutionMessage> {
    // #region lab 11.2
    this.assertIdle("执行 `!` 命令");
    const workspace = this.options.workspace;
    if (workspace === undefined) throw new Error("这个会话没有工作区，不能运行 `!` 命令。");
    const signal = options.signal ?? new AbortController().signal;
    const output = await bashTool(workspace).execute({ command }, { toolCallId: "user-bash", signal, onUpdate() {} });
    const result = output.details as CommandResult;
    const message: BashExecutionMessage = {
      role: "bashExecution",
      command,
      output: result.output,
      // 被终止（取消或超时）的命令没有自己的退出码。
      exitCode: result.status === "exited" ? (result.exitCode ?? undefined) : undefined,
      cancelled: result.status !== "exited",
      truncated: result.truncated,
      timestamp: this.now(),
    };
    // 只在要排除时写这个字段：普通的 `!cmd` 记录里就没有它。
    if (options.excludeFromContext === true) message.excludeFromContext = true;
    this.agent.appendMessage(message);
    persistMessage(this.tree, message);
    await this.tree.flush();
    return message;
    // #endregion
  }

  /**
   * 把切点之前的历史交给模型写成摘要，写一个 compaction 条目，再从会话重建上下文。
   * 没有可摘要的、或自上次压缩以来没有新东西，就不调用模型，交回原因；摘要失败就抛出，会话一条都不多。
   * 运行中拒绝：运行还在往会话里写条目，这时换掉 transcript 会让记录与内存各说各话。
   */
  async compact(options: { signal?: AbortSignal } = {}): Promise<CompactResult> {
    // #region lab 11.4
    this.assertIdle("压缩");
    const plan = planCompaction(contextItems(this.tree.getBranch()), this.settings);
    if ("skip" in plan) return { status: "skipped", code: plan.skip };
    const summary = await generateSummary(this.options.model, plan.toSummarize, COMPACTION_PROMPT, { ...options, now: this.now, settings: this.settings });
    const entry = this.tree.appendCompaction(summary, plan.firstKeptEntryId, plan.tokensBefore);
    this.agent.replaceMessages(this.tree.buildSessionContext());
    await this.tree.flush();
    return { status: "compacted", entry };
    // #endregion
  }

  /**
   * 把 leaf 移到 targetId。summarize 时先把被离开的那段（旧路径上、不在新路径上的条目）
   * 交给模型写成摘要，挂在 targetId 下面；摘要失败就抛出，leaf 不动。运行中拒绝。
   */
  async navigateTree(targetId: string, options: { summarize?: boolean; signal?: AbortSignal } = {}): Promise<BranchSummaryEntry | undefined> {
    // #region lab 11.4
    this.assertIdle("切换分支");
    if (this.tree.getEntry(targetId) === undefined) throw new Error(`会话里没有 id 为 ${targetId} 的条目。`);
    const target = new Set(this.tree.getBranch(targetId).map((entry) => entry.id));
    const abandoned = this.tree.getBranch().filter((entry) => !target.has(entry.id));
    const messages = contextItems(abandoned).map((item) => item.message);
    if (options.summarize !== true || messages.length === 0) {
      this.branch(targetId);
      return undefined;
    }
    const summary = await generateSummary(this.options.model, messages, BRANCH_SUMMARY_PROMPT, { ...options, now: this.now, settings: this.settings });
    const entry = this.tree.branchWithSummary(targetId, summary);
    this.agent.replaceMessages(this.tree.buildSessionContext());
    await this.tree.flush();
    return entry;
    // #endregion
  }
}
