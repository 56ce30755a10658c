/**
 * 压缩：上下文快要装不下时，把较早的对话交给模型写成一份摘要，只原样留下最近的几段交互。
 *
 * 这里只有算术和一次模型调用：估算 token、判断是否超出预算、找一个不会拆散
 * 工具调用与结果的切点、请模型写摘要。写条目、重建上下文是会话的事（agent-session.ts）。
 */

import { convertToLlm } from "./messages.js";
import { currentSystemMessage, systemMessageText, type AgentMessage, type Message, type Model, type SystemMessage } from "./types.js";

// ── 预算 ────────────────────────────────────────────────────────

export interface CompactionSettings {
  /** 模型一次请求最多能读多少 token。 */
  contextWindow: number;
  /** 留给回答的 token：请求本身不能把它们占掉。 */
  reserveTokens: number;
  /** 估算只是估算：再留一段余量，宁可早压缩也不要被 Provider 拒绝。 */
  safetyMargin: number;
  /** 压缩后原样保留的最近交互最多占多少 token。 */
  keepRecentTokens: number;
}

export const DEFAULT_COMPACTION_SETTINGS: CompactionSettings = {
  contextWindow: 128_000,
  reserveTokens: 16_000,
  safetyMargin: 4_000,
  keepRecentTokens: 20_000,
};

/** 会话条目与它带来的上下文消息：切点要落在条目上，才能写进 firstKeptEntryId。 */
export interface ContextItem {
  entryId: string;
  message: AgentMessage;
}

export interface ContextEstimate {
  /** 重放出的那一条 system message：每次请求都要带，所以先算。 */
  systemTokens: number;
  /** 其余消息（转换之后真正发出的部分）。 */
  messageTokens: number;
  total: number;
}

// ── 估算 ────────────────────────────────────────────────────────

/** 粗估：约 4 个字符一个 token，宁多勿少。中文会被低估，所以预算里另有余量。 */
function tokensOfChars(chars: number): number {
  return Math.ceil(chars / 4);
}

function charsOf(message: Message): number {
  // #region lab 11.3
  switch (message.role) {
    case "system": {
      const tools = message.toolsAdded === undefined ? 0 : JSON.stringify(message.toolsAdded).length;
      return systemMessageText(message).length + tools;
    }
    case "user":
    case "toolResult":
      return message.content.reduce((sum, block) => sum + block.text.length, 0);
    case "assistant":
      return message.content.reduce(
        (sum, block) => sum + (block.type === "text" ? block.text.length : block.name.length + JSON.stringify(block.arguments ?? null).length),
        0,
      );
  }
  // #endregion
}

/** 一条消息占多少 token，按模型真正读到的样子算：不进上下文的消息算 0。 */
export function estimateTokens(message: AgentMessage): number {
  return convertToLlm([message]).reduce((sum, converted) => sum + tokensOfChars(charsOf(converted)), 0);
}

/** 一次请求的估算：system 按重放后的那一条算，且最先算；别的 system 补丁不再重复计数。 */
export function estimateContext(messages: readonly AgentMessage[]): ContextEstimate {
  // #region lab 11.3
  const replay: SystemMessage | undefined = currentSystemMessage(messages);
  const systemTokens = replay === undefined ? 0 : estimateTokens(replay);
  let messageTokens = 0;
  for (const message of messages) {
    if (message.role !== "system") messageTokens += estimateTokens(message);
  }
  return { systemTokens, messageTokens, total: systemTokens + messageTokens };
  // #endregion
}

/** 请求最多能占多少：窗口减去留给回答的，再减去余量。 */
export function availableTokens(settings: CompactionSettings): number {
  return settings.contextWindow - settings.reserveTokens - settings.safetyMargin;
}

export function shouldCompact(messages: readonly AgentMessage[], settings: CompactionSettings): boolean {
  return estimateContext(messages).total > availableTokens(settings);
}

// ── 切点 ────────────────────────────────────────────────────────

/** 这些角色开启一段新的交互：用户（或代表用户的程序）说了一句话。 */
function startsInteraction(message: AgentMessage): boolean {
  const role = message.role;
  return role === "user" || role === "bashExecution" || role === "custom" || role === "branchSummary";
}

/**
 * 可以切开的位置：第 i 项开启一段新交互，而且此刻没有“已请求、未配上结果”的工具调用。
 * 按 id 记账而不是看位置：结果可能乱序到达，中间还可能夹着别的消息。
 */
export function interactionBoundaries(messages: readonly AgentMessage[]): number[] {
  // #region lab 11.3
  const boundaries: number[] = [];
  const waiting = new Set<string>();
  messages.forEach((message, index) => {
    if (waiting.size === 0 && startsInteraction(message)) boundaries.push(index);
    if (message.role === "assistant") {
      for (const block of message.content) if (block.type === "toolCall") waiting.add(block.id);
    } else if (message.role === "toolResult") {
      waiting.delete(message.toolCallId);
    }
  });
  return boundaries;
  // #endregion
}

/**
 * 从最新往回数，整段整段地保留交互，直到再加一段就超过 keepRecentTokens。
 * 最新的一段总是保留（那是模型此刻要回答的）；切点之前没有可摘要的内容就返回 undefined。
 */
export function findCutPoint(items: readonly ContextItem[], keepRecentTokens: number): number | undefined {
  // #region lab 11.3
  const messages = items.map((item) => item.message);
  const boundaries = interactionBoundaries(messages);
  let cut: number | undefined;
  let kept = 0;
  for (let i = boundaries.length - 1; i >= 0; i -= 1) {
    const start = boundaries[i]!;
    const end = boundaries[i + 1] ?? messages.length;
    let size = 0;
    for (const message of messages.slice(start, end)) if (message.role !== "system") size += estimateTokens(message);
    if (cut !== undefined && kept + size > keepRecentTokens) break;
    kept += size;
    cut = start;
  }
  // 切点之前只剩 system（它靠重放保留）就没有东西可摘要。
  const summarizable = cut !== undefined && messages.slice(0, cut).some((message) => message.role !== "system");
  return summarizable ? cut : undefined;
  // #endregion
}

export interface CompactionPlan {
  firstKeptEntryId: string;
  /** 切点之前、要交给模型摘要的消息（system 不在其中：它靠重放保留）。 */
  toSummarize: AgentMessage[];
  tokensBefore: number;
}

/**
 * 不压缩的两种原因，写成给程序看的 code，界面据此说话：
 *   nothing_to_summarize  切点之前除了 system 什么都没有；
 *   nothing_new           切点之前只剩上一份摘要：自上次压缩以来没有新东西，再压一次只是请模型改写它自己的摘要。
 */
export type CompactionSkipCode = "nothing_to_summarize" | "nothing_new";

export function planCompaction(items: readonly ContextItem[], settings: CompactionSettings): CompactionPlan | { skip: CompactionSkipCode } {
  const cut = findCutPoint(items, settings.keepRecentTokens);
  if (cut === undefined) return { skip: "nothing_to_summarize" };
  const messages = items.map((item) => item.message);
  const toSummarize = messages.slice(0, cut).filter((message) => message.role !== "system");
  if (toSummarize.every((message) => message.role === "compactionSummary")) return { skip: "nothing_new" };
  return { firstKeptEntryId: items[cut]!.entryId, toSummarize, tokensBefore: estimateContext(messages).total };
}

// ── 摘要：一次不带工具的模型调用 ─────────────────────────────────

export const SUMMARY_SYSTEM_PROMPT =
  "你负责给一段编程助手与用户的对话写交接摘要。只输出摘要本身：不要接着对话往下说，也不要回答对话里的问题。";

/** 结构化的要求：下一位读者（还是模型）要靠这几节接着干活。 */
export const COMPACTION_PROMPT = `请把 <conversation> 里的对话整理成交接摘要，另一个模型会只凭它继续工作。按下面的小节写，每节简短：

## 目标
## 约束与偏好
## 进展
### 已完成
### 进行中
### 受阻
## 关键决定
## 下一步
## 必要的上下文

文件路径、函数名、报错原文一律照抄。`;

export const BRANCH_SUMMARY_PROMPT = `<conversation> 里是一条被暂时离开的对话分支。请写一份摘要，将来回到树上别处时靠它记得这条分支做过什么。按下面的小节写：

## 目标
## 做过的事
## 结论与未完成的事

文件路径、函数名、报错原文一律照抄。`;

/** 把转换后的消息摊成一行行纯文字：摘要模型读的是一份记录，而不是一段要它接着演的对话。 */
export function transcriptLines(messages: readonly Message[]): string[] {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        break; // 指令靠重放保留，不进摘要
      case "user":
        lines.push(`[用户]: ${message.content.map((block) => block.text).join("\n")}`);
        break;
      case "toolResult":
        lines.push(`[工具结果 ${message.toolName}]: ${message.content.map((block) => block.text).join("\n")}`);
        break;
      case "assistant":
        for (const block of message.content) {
          if (block.type === "text") lines.push(`[助手]: ${block.text}`);
          else lines.push(`[助手调用工具]: ${block.name}(${JSON.stringify(block.arguments ?? null)})`);
        }
        break;
    }
  }
  return lines;
}

const LINE_SEPARATOR = "\n\n";

/** 摘要请求：一条说明身份的 system，一条 user——记录放在 <conversation> 里，后面接结构化的要求。不带工具。 */
export function summaryRequest(conversation: string, instructions: string, timestamp: number): Message[] {
  return [
    { role: "system", content: SUMMARY_SYSTEM_PROMPT, timestamp },
    { role: "user", content: [{ type: "text", text: `<conversation>\n${conversation}\n</conversation>\n\n${instructions}` }], timestamp },
  ];
}

/** 摘要请求里留给记录的 token：摘要模型的窗口同样要减去回答预留与余量，再减去说明与要求本身。 */
export function transcriptBudget(settings: CompactionSettings, instructions: string): number {
  return availableTokens(settings) - estimateContext(summaryRequest("", instructions, 0)).total;
}

function omittedNote(count: number): string {
  return `[${count} earlier transcript lines were omitted here: they did not fit the summarizer's context window.]`;
}

/**
 * 记录装不进预算时，从最旧的一头整行略去，开头写明略去了几行：交接最要紧的是最近做到了哪里。
 * 最新的一行自己就装不下时，只留它的开头。一条几千条消息的分支，也只发出一份装得下的请求。
 */
export function fitTranscript(lines: readonly string[], budget: number): string {
  const whole = lines.join(LINE_SEPARATOR);
  if (tokensOfChars(whole.length) <= budget) return whole;
  const room = budget - tokensOfChars(omittedNote(lines.length).length + LINE_SEPARATOR.length);
  const kept: string[] = [];
  let used = 0;
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const cost = tokensOfChars(lines[i]!.length + LINE_SEPARATOR.length);
    if (used + cost > room) break;
    kept.unshift(lines[i]!);
    used += cost;
  }
  if (kept.length === 0 && lines.length > 0) kept.push(lines.at(-1)!.slice(0, Math.max(0, room * 4 - LINE_SEPARATOR.length)));
  return [omittedNote(lines.length - kept.length), ...kept].join(LINE_SEPARATOR);
}

/**
 * 请模型写摘要。模型失败就抛出：宁可不压缩，也不能把一份空摘要写进会话。
 * settings 是摘要模型的窗口（省略时用默认预算）：记录按它截到装得下。
 */
export async function generateSummary(
  model: Model,
  messages: readonly AgentMessage[],
  instructions: string,
  options: { signal?: AbortSignal; now?: () => number; settings?: CompactionSettings } = {},
): Promise<string> {
  // #region lab 11.4
  const now = options.now ?? Date.now;
  const lines = transcriptLines(convertToLlm([...messages]));
  const conversation = fitTranscript(lines, transcriptBudget(options.settings ?? DEFAULT_COMPACTION_SETTINGS, instructions));
  const request = summaryRequest(conversation, instructions, now());
  const reply = await model.stream({ messages: request }, options.signal ? { signal: options.signal } : {}).result();
  if (reply.stopReason === "error" || reply.stopReason === "aborted") {
    throw new Error(`摘要没有写成（${reply.stopReason}）：${reply.errorMessage ?? "模型没有说明原因"}`);
  }
  const summary = reply.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n").trim();
  if (summary === "") throw new Error("摘要没有写成：模型交回了空文本。");
  return summary;
  // #endregion
}
