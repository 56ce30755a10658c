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
  /** 这一窗最多放多少 UTF-8 字节（含行间换行和续读说明）。 */
  maxBytes: number;
}

export type WindowStop = "end" | "limit" | "bytes";

/** 从字节流里攒出的窗口：已经解码的整行，还没有加续读说明。 */
export interface CollectedWindow {
  lines: string[];
  /** 第一行的行号（1 起算）。 */
  firstLine: number;
  /** 为什么停下：读到了文件末尾、后面还有行但已凑满 limit，还是下一行放不进字节上限。 */
  stoppedBy: WindowStop;
}

/** 交给模型的窗口的描述，也是 read 结果的 details。 */
export interface ReadWindow {
  /** 第一行和最后一行的行号（1 起算）；一行都放不下时 lastLine = firstLine - 1。 */
  firstLine: number;
  lastLine: number;
  stoppedBy: WindowStop;
  /** 打开时文件有多少字节：不读完文件就数不出总行数，但大小 fstat 一下就知道。 */
  fileBytes: number;
}

// #region lab 8.1 辅助
/** schema 只保证是整数；0 和负数的行号没有意义，在这里拒绝。 */
function checkPositive(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
    throw new RangeError(`${name} 必须是不小于 1 的整数，实际是 ${value}。`);
  }
}

const NEWLINE = 0x0a;
// #endregion

/**
 * 一块一块地消费文件的字节，攒出从 offset 起的整行窗口；窗口一满就 return，不再要下一块。
 * 内存只跟 maxBytes 有关：offset 之前的行只数换行符；窗口里的当前行攒到超出剩余预算，就知道它放不下。
 * 每块只在这一轮有效（读的一方可以复用缓冲区），要留下的字节先复制。
 * 行按 0x0A 切开，整行再解码：0x0A 不会出现在多字节字符中间，所以块的边界切不坏字符；
 * 不是 UTF-8 的字节解码成 U+FFFD，预算按解码后的字节算，因为模型读到的是解码后的文字。
 */
export async function collectWindow(chunks: AsyncIterable<Uint8Array>, request: WindowRequest): Promise<CollectedWindow> {
  // #region lab 8.1
  checkPositive("offset", request.offset);
  checkPositive("limit", request.limit);
  const firstLine = request.offset ?? 1;
  const afterWindow = request.limit === undefined ? Infinity : firstLine + request.limit;
  const lines: string[] = [];
  let used = 0; // 已收下的行加上行间换行的字节数
  let line = 1; // 正在读的是第几行
  let pending: Buffer[] = []; // 当前行已经收到的字节（只攒窗口里的行）
  let pendingBytes = 0;
  let lineStarted = false; // 当前行收到过字节没有：文件最后一行可以没有换行
  const done = (stoppedBy: WindowStop): CollectedWindow => ({ lines, firstLine, stoppedBy });
  const separator = () => (lines.length > 0 ? 1 : 0);
  /** 当前行结束了：解码，放得下就收下。 */
  const take = (): boolean => {
    const text = Buffer.concat(pending).toString("utf8");
    const cost = Buffer.byteLength(text, "utf8") + separator();
    if (used + cost > request.maxBytes) return false;
    lines.push(text);
    used += cost;
    return true;
  };

  for await (const chunk of chunks) {
    for (let start = 0; start < chunk.length; ) {
      // 窗口之后的那一行至少有一个字节：后面确实还有内容，窗口满了。
      if (line >= afterWindow) return done("limit");
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      if (line >= firstLine) {
        pendingBytes += end - start;
        // 解码后的字节只会比原始字节多（U+FFFD 占 3 字节）：原始字节已经超出，这一行一定放不下。
        if (used + separator() + pendingBytes > request.maxBytes) return done("bytes");
        pending.push(Buffer.from(chunk.subarray(start, end)));
      }
      if (newline === -1) {
        lineStarted = true;
        break;
      }
      if (line >= firstLine && !take()) return done("bytes");
      line += 1;
      pending = [];
      pendingBytes = 0;
      lineStarted = false;
      start = newline + 1;
    }
  }
  // 文件结束。末尾的换行只是结束最后一行；没有换行的最后一行也是一行。
  if (lineStarted) {
    if (line >= firstLine && !take()) return done("bytes");
    line += 1;
  }
  const totalLines = line - 1;
  if (firstLine > Math.max(totalLines, 1)) {
    throw new RangeError(`offset=${firstLine} 超出了文件末尾：文件只有 ${totalLines} 行。`);
  }
  return done("end");
  // #endregion
}

/** 没读完时给模型的续读说明；读到末尾返回 undefined。 */
export function windowNotice(window: ReadWindow, maxBytes: number): string | undefined {
  // #region lab 8.1
  if (window.stoppedBy === "end") return undefined;
  if (window.lastLine < window.firstLine) {
    return `[第 ${window.firstLine} 行超过 ${maxBytes} 字节的单次读取上限，无法整行显示；可以用 bash 截取这一行的一部分。]`;
  }
  const reason = window.stoppedBy === "bytes" ? `，达到 ${maxBytes} 字节上限` : "";
  const range = `第 ${window.firstLine}-${window.lastLine} 行（文件共 ${window.fileBytes} 字节${reason}）`;
  return `[已显示${range}。用 offset=${window.lastLine + 1} 继续读取。]`;
  // #endregion
}

/**
 * 上限管的是模型读到的全部文字，续读说明也算在内：正文加说明放不下，就从末尾少给几行。
 * 少给一行，说明就变成“达到字节上限”，续读的 offset 随之提前；一行也不剩时交出“这一行放不下”的说明。
 */
export function windowWithNotice(
  collected: CollectedWindow,
  maxBytes: number,
  fileBytes: number,
): { body: string; window: ReadWindow } {
  // #region lab 8.1
  const { lines, firstLine } = collected;
  let count = lines.length;
  let textBytes = Buffer.byteLength(lines.join("\n"), "utf8");
  for (;;) {
    const stoppedBy = count < lines.length ? "bytes" : collected.stoppedBy;
    const window: ReadWindow = { firstLine, lastLine: firstLine + count - 1, stoppedBy, fileBytes };
    const text = lines.slice(0, count).join("\n");
    const notice = windowNotice(window, maxBytes);
    const noticeBytes = notice === undefined ? 0 : Buffer.byteLength(notice, "utf8") + 2;
    if (textBytes + noticeBytes <= maxBytes || count === 0) {
      return { body: notice === undefined ? text : `${text}\n\n${notice}`, window };
    }
    count -= 1;
    textBytes -= Buffer.byteLength(lines[count] ?? "", "utf8") + (count > 0 ? 1 : 0);
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
