/**
 * 持久会话的记录：一本只往后加的账。每个条目写下去就不再改动，也不删除；
 * 要纠正一句话，就在后面再记一个 edit 条目，用 edits 指回旧条目。
 *
 * 条目有三样东西：
 *   model   它交给模型的消息（可以没有：备注、检查点只给人或恢复程序看）
 *   data    只给界面与程序看的数据，从不进请求
 *   edits   它对更早条目的修改：replace 换成另一组消息，omit 让那个条目什么也不交
 *
 * id 与 commitSeq 由存储在提交时发放：id 一个条目一个、只增不减；commitSeq 一次提交一个，
 * 同一批提交的条目共用一个。
 */

import type { Message, StopReason } from "../types.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 条目的种类。pi.system 是系统提示词（基线或补丁）；pi.partial 是流式回复的检查点。 */
export type EntryKind = "message" | "pi.system" | "edit" | "note" | "pi.partial";

/** 修改一个更早的条目：replace 换成 messages，omit 让它在上下文里什么也不交。 */
export type ContextEdit =
  | { target: number; action: "replace"; messages: readonly Message[] }
  | { target: number; action: "omit" };

/** 压缩或重置之后的条目带着 head：新的上下文从它开始。 */
export type HeadReason = "reset" | "compaction";

/** 还没提交的条目：调用方写的就是这些。 */
export interface EntryDraft {
  kind: EntryKind;
  model?: readonly Message[];
  data?: unknown;
  edits?: readonly ContextEdit[];
  head?: HeadReason;
}

/** 已提交的条目：存储发放了 id 与 commitSeq。 */
export interface EntryRecord extends EntryDraft {
  readonly id: number;
  readonly commitSeq: number;
}

/** 这三种结束原因的回复不是回答：被打断的、出错的、被 Provider 推迟的。它们留在记录里，但不进上下文。 */
const NOT_ANSWERS: readonly StopReason[] = ["aborted", "error", "deferred"];
export const EXCLUDED_STOP_REASONS: ReadonlySet<StopReason> = new Set(NOT_ANSWERS);

// ── 纯函数 ──────────────────────────────────────────────────────

/** 一个回复能不能交给模型：不是 assistant，或者结束原因不在排除之列。 */
export function isContributable(message: Message): boolean {
  // #region lab 19.1
  return message.role !== "assistant" || !EXCLUDED_STOP_REASONS.has(message.stopReason);
  // #endregion
}

/**
 * 一个条目交给上下文的消息。edit 是这个条目最新的那次修改（没有就是 undefined）。
 * omit → 什么也不交；replace → 修改里的消息；否则是它自己的 model。edit 条目与 note 自己什么也不交。
 * 最后滤掉 aborted / error / deferred 的回复。交回的数组是冻住的。
 */
export function contribute(entry: EntryRecord, edit: ContextEdit | undefined): readonly Message[] {
  // #region lab 19.1
  if (edit?.action === "omit") return Object.freeze([]);
  if (edit === undefined && (entry.kind === "edit" || entry.kind === "note")) return Object.freeze([]);
  const messages = edit?.action === "replace" ? edit.messages : (entry.model ?? []);
  return Object.freeze(messages.filter(isContributable));
  // #endregion
}

/** 每个被修改过的条目最新的那次修改：按 id 从小到大走一遍，后来的覆盖先前的。 */
export function newestEdits(entries: readonly EntryRecord[]): Map<number, ContextEdit> {
  // #region lab 19.1
  const edits = new Map<number, ContextEdit>();
  for (const entry of entries) {
    for (const edit of entry.edits ?? []) {
      // 只能改更早的条目：指向自己或后面的修改不算数。
      if (edit.target < entry.id) edits.set(edit.target, edit);
    }
  }
  return edits;
  // #endregion
}

/** 深冻一个条目：记录写下去就不变，读回来的人也改不动它。 */
export function freezeEntry<T extends EntryRecord>(entry: T): T {
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object" || Object.isFrozen(value)) return;
    Object.freeze(value);
    for (const inner of Object.values(value)) visit(inner);
  };
  visit(entry);
  return entry;
}
