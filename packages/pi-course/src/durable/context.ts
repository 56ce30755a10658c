/**
 * 模型这一次看到什么：从记录现拼出来的上下文。一个纯函数，不碰存储，也不改任何条目。
 *
 *   1. 范围：从最后一个带 head 的条目（重置、压缩）到末尾；分叉时截到给定的条目为止。
 *   2. 每个条目交出自己的消息（见 entries.ts 的 contribute）。
 *   3. 范围里第一条系统提示词放到最前面；后面的系统条目是补丁，留在原位。
 *   4. 工具结果挪到调用它的那条回复后面，按调用的顺序；缺了结果的调用补一条 isError 的结果。
 */

import { currentSystemMessage, text, type Message, type SystemMessage, type ToolCall, type ToolResultMessage } from "../types.js";
import { contribute, newestEdits, type EntryDraft, type EntryRecord } from "./entries.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 一次请求的上下文：消息，以及它从哪个条目开始、到哪个条目为止（空记录时两者都是 undefined）。 */
export interface ContextView {
  readonly messages: readonly Message[];
  readonly start: number | undefined;
  readonly end: number | undefined;
}

export interface ContextOptions {
  /** 只看 id 不超过它的条目：从那个条目分叉出去的上下文。省略时看整本记录。 */
  until?: number;
}

/** 段名 → 文字；补丁里 null 表示删掉这一段。 */
export type SectionPatch = Record<string, string | null>;

/** 调用还没有结果时补上的那条结果的原文（给模型看，所以是英文）。 */
export const MISSING_RESULT_TEXT = "Tool result unavailable: history ends before this call completed.";

// ── 工具结果：挪到调用后面，补上缺的 ────────────────────────────

function callsOf(message: Message): ToolCall[] {
  if (message.role !== "assistant") return [];
  return message.content.filter((block): block is ToolCall => block.type === "toolCall");
}

/** 调用没有结果时补上的 isError 结果：时间戳取那条回复的时间。 */
export function missingResult(call: ToolCall, timestamp: number): ToolResultMessage {
  return { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [text(MISSING_RESULT_TEXT)], isError: true, timestamp };
}

/**
 * 让每个调用后面紧跟它的结果：结果按调用的顺序排在那条回复之后，排在两者之间写下的任何东西前面。
 * 同一个调用 id 的结果只认第一条；前面没有这个调用的结果丢掉；没有结果的调用补一条 missingResult。
 */
export function pairResults(messages: readonly Message[]): Message[] {
  // #region lab 19.2
  const called = new Set<string>();
  const results = new Map<string, ToolResultMessage>();
  for (const message of messages) {
    for (const call of callsOf(message)) called.add(call.id);
    // 结果只在它的调用之后才算：走到这里时 called 里只有更早的调用。
    if (message.role === "toolResult" && called.has(message.toolCallId) && !results.has(message.toolCallId)) {
      results.set(message.toolCallId, message);
    }
  }
  const paired: Message[] = [];
  const placed = new Set<string>();
  for (const message of messages) {
    if (message.role === "toolResult") continue;
    paired.push(message);
    for (const call of callsOf(message)) {
      if (placed.has(call.id)) continue;
      placed.add(call.id);
      paired.push(results.get(call.id) ?? missingResult(call, message.timestamp));
    }
  }
  return paired;
  // #endregion
}

// ── 系统提示词：一条基线在最前，后面只有补丁 ────────────────────

/** 上下文的范围：截到 until，再从最后一个带 head 的条目开始。 */
export function rangeOf(entries: readonly EntryRecord[], until?: number): EntryRecord[] {
  // #region lab 19.3
  const cut = until === undefined ? [...entries] : entries.filter((entry) => entry.id <= until);
  let start = 0;
  cut.forEach((entry, index) => {
    if (entry.head !== undefined) start = index;
  });
  return cut.slice(start);
  // #endregion
}

/** 范围里第一条系统消息放到最前面（哪怕它写在它回答的那句用户输入之后）；其余的原位不动。 */
export function placeSystem(messages: readonly Message[]): Message[] {
  // #region lab 19.3
  const first = messages.findIndex((message) => message.role === "system");
  if (first <= 0) return [...messages];
  return [messages[first]!, ...messages.slice(0, first), ...messages.slice(first + 1)];
  // #endregion
}

/**
 * 模型已经看到的段（shown）与这次算出来的段（desired）之间的补丁：值变了的段写新值，
 * 新加的段写进去，没了的段写 null；一段都没变就是 undefined（不写条目）。
 */
export function systemPatch(shown: Readonly<Record<string, string>>, desired: Readonly<Record<string, string>>): SectionPatch | undefined {
  // #region lab 19.3
  const patch: SectionPatch = {};
  for (const [name, body] of Object.entries(shown)) {
    const next = desired[name];
    if (next !== body) patch[name] = next ?? null;
  }
  for (const [name, body] of Object.entries(desired)) {
    if (!(name in shown)) patch[name] = body;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
  // #endregion
}

/** 打上补丁之后段的先后（留下的旧段在原位，新段接在后面）与 desired 的先后不同吗？ */
export function orderChanged(shown: Readonly<Record<string, string>>, desired: Readonly<Record<string, string>>): boolean {
  // #region lab 19.3
  const patched = [...Object.keys(shown).filter((name) => name in desired), ...Object.keys(desired).filter((name) => !(name in shown))];
  return patched.some((name, index) => name !== Object.keys(desired)[index]);
  // #endregion
}

/** 一条只有段落的系统消息（基线或补丁）。 */
export function systemMessage(sections: SectionPatch, timestamp: number): SystemMessage {
  return { role: "system", content: "", sections: { ...sections }, timestamp };
}

/**
 * 下一次请求之前该写的系统条目：范围里还没有系统条目（新会话，或者 head 之后）→ 整份基线；
 * 有 → 与模型已经看到的段比较出的补丁；一段都没变 → undefined。
 */
export function systemDraft(entries: readonly EntryRecord[], desired: Readonly<Record<string, string>>, timestamp: number): EntryDraft | undefined {
  // #region lab 19.3
  const edits = newestEdits(entries);
  const systems = rangeOf(entries)
    .flatMap((entry) => contribute(entry, edits.get(entry.id)))
    .filter((message): message is SystemMessage => message.role === "system");
  if (systems.length === 0) return { kind: "pi.system", model: [systemMessage(desired, timestamp)] };
  const shown = (currentSystemMessage(systems)?.sections ?? {}) as Record<string, string>;
  if (orderChanged(shown, desired)) {
    // 补丁改不了段的先后：先把每一段删掉，再整份写一遍。
    const cleared = Object.fromEntries(Object.keys(shown).map((name) => [name, null]));
    return { kind: "pi.system", model: [systemMessage(cleared, timestamp), systemMessage(desired, timestamp)] };
  }
  const patch = systemPatch(shown, desired);
  return patch === undefined ? undefined : { kind: "pi.system", model: [systemMessage(patch, timestamp)] };
  // #endregion
}

// ── 上下文 ──────────────────────────────────────────────────────

/** 从记录拼出这一次的上下文：范围 → 每个条目交的消息 → 系统基线放最前 → 结果配对。 */
export function context(entries: readonly EntryRecord[], options: ContextOptions = {}): ContextView {
  const cut = options.until === undefined ? entries : entries.filter((entry) => entry.id <= options.until!);
  // 修改可以写在 head 之前：它改的是条目，与条目落在哪个范围无关。
  const edits = newestEdits(cut);
  const range = rangeOf(cut);
  const contributed = range.flatMap((entry) => contribute(entry, edits.get(entry.id)));
  const messages = pairResults(placeSystem(contributed));
  return Object.freeze({ messages: Object.freeze(messages), start: range[0]?.id, end: range[range.length - 1]?.id });
}
