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

export type EditErrorCode = "NOT_UTF8" | "NO_EDITS" | "EMPTY_OLD_TEXT" | "NOT_FOUND" | "AMBIGUOUS" | "OVERLAP";

export class EditError extends Error {
  constructor(
    readonly code: EditErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "EditError";
  }
}

// #region lab 8.2 辅助
// fatal：遇到非法字节就抛出，而不是悄悄换成 U+FFFD；ignoreBOM：BOM 留在文字里，写回时原样保留。
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
// #endregion

/**
 * edit 只改它看得懂的文本。宽松解码会把非法字节换成 U+FFFD，写回时就改掉了没人要求改的字节
 * （例如 Latin-1 的 é，0xE9，会变成 EF BF BD），所以不是有效 UTF-8 的文件整体拒绝。
 */
export function decodeUtf8Strict(bytes: Uint8Array): string {
  // #region lab 8.2
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new EditError("NOT_UTF8", "文件不是有效的 UTF-8 文本：edit 只改文本，不会替换它看不懂的字节。");
  }
  // #endregion
}

// #region lab 8.2 辅助
/** 一个编辑在原文里的落点。 */
interface Match {
  index: number;
  start: number;
  end: number;
  newText: string;
}

/** 所有出现位置，允许相互重叠：在 "aaa" 里找 "aa" 是两处，不是一处。 */
function occurrences(content: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = content.indexOf(needle); at >= 0; at = content.indexOf(needle, at + 1)) found.push(at);
  return found;
}

function locate(content: string, edit: TextEdit, index: number): Match {
  const label = `edits[${index}]`;
  if (edit.oldText === "") {
    throw new EditError("EMPTY_OLD_TEXT", `${label} 的 oldText 是空串：空串处处都能匹配，无法确定改哪里。`);
  }
  const found = occurrences(content, edit.oldText);
  const start = found[0];
  if (start === undefined) {
    throw new EditError("NOT_FOUND", `${label} 的 oldText 在文件里找不到：它必须与原文逐字符一致，包括空格和换行。`);
  }
  if (found.length > 1) {
    throw new EditError("AMBIGUOUS", `${label} 的 oldText 在文件里出现了 ${found.length} 次：多带几行上下文，让它只匹配一处。`);
  }
  return { index, start, end: start + edit.oldText.length, newText: edit.newText };
}
// #endregion

/**
 * 先为全部编辑在原文里找好落点，再按位置从前往后拼出新内容，途中检查重叠。
 * 结果只在全部检查通过后才返回：抛错时调用方手里没有任何“改了一半”的内容。
 */
export function applyEdits(content: string, edits: readonly TextEdit[]): string {
  // #region lab 8.2
  if (edits.length === 0) throw new EditError("NO_EDITS", "edits 是空数组：至少要给出一处替换。");
  const matches = edits.map((edit, index) => locate(content, edit, index));
  const ordered = [...matches].sort((a, b) => a.start - b.start);
  const pieces: string[] = [];
  let previous: Match | undefined;
  for (const match of ordered) {
    if (previous !== undefined && match.start < previous.end) {
      const [first, second] = [previous.index, match.index].sort((a, b) => a - b);
      throw new EditError("OVERLAP", `edits[${first}] 与 edits[${second}] 的匹配区域重叠：把它们合并成一个编辑。`);
    }
    pieces.push(content.slice(previous?.end ?? 0, match.start), match.newText);
    previous = match;
  }
  pieces.push(content.slice(previous?.end ?? 0));
  return pieces.join("");
  // #endregion
}
