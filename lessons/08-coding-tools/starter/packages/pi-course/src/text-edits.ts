/**
 * 精确替换：edit 工具的核心，一个不碰磁盘的纯函数。
 * 每个 oldText 都在“原文”里定位，必须恰好出现一次、彼此不重叠；
 * 任何一处不满足就整体拒绝，调用方据此保证文件一个字节都不变。
 */

export interface TextEdit {
  /** 要被替换的原文，逐字符匹配（空格、换行都算）。 */
  oldText: string;
  newText: string;
}

export type EditErrorCode = "NO_EDITS" | "EMPTY_OLD_TEXT" | "NOT_FOUND" | "AMBIGUOUS" | "OVERLAP";

export class EditError extends Error {
  constructor(
    readonly code: EditErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "EditError";
  }
}

/** 先为全部编辑在原文里找好落点，再按位置从前往后拼出新内容；任何一处不合格就抛 EditError。 */
export function applyEdits(content: string, edits: readonly TextEdit[]): string {
  throw new Error("Lab 8.2 尚未实现");
}
