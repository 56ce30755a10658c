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

/** 从 offset 起取整行，直到文件结束、凑满 limit 行，或下一行会超出 maxBytes。 */
export function readWindow(content: string, request: WindowRequest): ReadWindow {
  throw new Error("Lab 8.1 尚未实现");
}

/** 没读完时给模型的续读说明；读到末尾返回 undefined。 */
export function windowNotice(window: ReadWindow, maxBytes: number): string | undefined {
  throw new Error("Lab 8.1 尚未实现");
}

// ── 输出尾部（bash 用）─────────────────────────────────────────

/** 只留最后 maxBytes 字节，起点不落在多字节字符中间。 */
export function tailOfBytes(buffer: Buffer, maxBytes: number): string {
  throw new Error("Lab 8.3 尚未实现");
}
