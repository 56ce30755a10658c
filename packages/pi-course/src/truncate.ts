/**
 * 截断：工具输出会原样进入模型的上下文，所以每一份都要有上限。
 * 截掉的部分不能悄悄消失：结果里要写明截在哪里、怎样接着看。
 */

// ── 文件窗口（read 用）─────────────────────────────────────────

export interface WindowRequest {
  /** 从第几行开始，1 起算；省略表示从头读。 */
  offset?: number;
  /** 最多读几行；省略表示只受字节上限约束。 */
  limit?: number;
  /** 这一窗最多放多少 UTF-8 字节（含行间换行）。 */
  maxBytes: number;
}

export interface ReadWindow {
  /** 窗口里的整行，用 "\n" 连接。 */
  text: string;
  /** 第一行和最后一行的行号（1 起算）；一行都放不下时 lastLine = firstLine - 1。 */
  firstLine: number;
  lastLine: number;
  totalLines: number;
  /** 为什么停下：读到了文件末尾、达到 limit，还是达到字节上限。 */
  stoppedBy: "end" | "limit" | "bytes";
}

// #region lab 8.1 辅助
/** 末尾的换行只是结束最后一行，不算多出一个空行。 */
function splitLines(content: string): string[] {
  if (content === "") return [];
  const lines = content.split("\n");
  if (content.endsWith("\n")) lines.pop();
  return lines;
}

/** schema 只保证是整数；0 和负数的行号没有意义，在这里拒绝。 */
function checkPositive(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
    throw new RangeError(`${name} 必须是不小于 1 的整数，实际是 ${value}。`);
  }
}
// #endregion

/**
 * 从 offset 起取整行，直到文件结束、凑满 limit 行，或下一行会超出 maxBytes。
 * 宁可少给一行，也不切开一行：半行代码会让模型照着错误的文字去 edit。
 */
export function readWindow(content: string, request: WindowRequest): ReadWindow {
  // #region lab 8.1
  checkPositive("offset", request.offset);
  checkPositive("limit", request.limit);
  const lines = splitLines(content);
  const firstLine = request.offset ?? 1;
  if (firstLine > Math.max(lines.length, 1)) {
    throw new RangeError(`offset=${firstLine} 超出了文件末尾：文件只有 ${lines.length} 行。`);
  }
  const wanted = lines.slice(firstLine - 1, firstLine - 1 + (request.limit ?? lines.length));
  const kept: string[] = [];
  let bytes = 0;
  for (const line of wanted) {
    const cost = Buffer.byteLength(line, "utf8") + (kept.length > 0 ? 1 : 0);
    if (bytes + cost > request.maxBytes) break;
    kept.push(line);
    bytes += cost;
  }
  const lastLine = firstLine + kept.length - 1;
  const stoppedBy = kept.length < wanted.length ? "bytes" : lastLine < lines.length ? "limit" : "end";
  return { text: kept.join("\n"), firstLine, lastLine, totalLines: lines.length, stoppedBy };
  // #endregion
}

/** 没读完时给模型的续读说明；读到末尾返回 undefined。 */
export function windowNotice(window: ReadWindow, maxBytes: number): string | undefined {
  // #region lab 8.1
  if (window.stoppedBy === "end") return undefined;
  if (window.lastLine < window.firstLine) {
    return `[第 ${window.firstLine} 行超过 ${maxBytes} 字节的单次读取上限，无法整行显示；可以用 bash 截取这一行的一部分。]`;
  }
  const reason = window.stoppedBy === "bytes" ? `（达到 ${maxBytes} 字节上限）` : "";
  const range = `第 ${window.firstLine}-${window.lastLine} 行，共 ${window.totalLines} 行${reason}`;
  return `[已显示${range}。用 offset=${window.lastLine + 1} 继续读取。]`;
  // #endregion
}

/**
 * 上限管的是模型读到的全部文字，续读说明也算在内：正文加说明放不下，就少给几行。
 * 说明的长度随行号变化，所以按超出的字节数收紧正文的预算，直到放得下，或一行也不剩。
 */
export function windowWithNotice(content: string, request: WindowRequest): { body: string; window: ReadWindow } {
  // #region lab 8.1
  for (let budget = request.maxBytes; ; ) {
    const window = readWindow(content, { ...request, maxBytes: budget });
    const notice = windowNotice(window, request.maxBytes);
    const body = notice === undefined ? window.text : `${window.text}\n\n${notice}`;
    const overflow = Buffer.byteLength(body, "utf8") - request.maxBytes;
    if (overflow <= 0 || window.lastLine < window.firstLine) return { body, window };
    budget -= overflow;
  }
  // #endregion
}

// ── 输出尾部（bash 用）─────────────────────────────────────────

/**
 * 只留最后 maxBytes 字节：命令的报错和结论通常在末尾。
 * 起点若落在多字节字符中间，就往后挪到下一个字符的开头，不产生乱码。
 */
export function tailOfBytes(buffer: Buffer, maxBytes: number): string {
  // #region lab 8.3
  let start = Math.max(0, buffer.length - maxBytes);
  // UTF-8 的后续字节形如 10xxxxxx。
  while (start < buffer.length && ((buffer[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return buffer.subarray(start).toString("utf8");
  // #endregion
}
