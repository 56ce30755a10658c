/**
 * MCP 的 stdio 传输一行一条消息：每条 JSON-RPC 消息写成一行 JSON，以 \n 结尾，消息里不许有换行。
 *
 * 管道不懂“行”：一次 data 事件可能只带来半行，也可能带来好几行。LineDecoder 把字节流切回一行一行：
 *   半行    留在缓冲里，等下一块把它补完；
 *   多行    一块里有几行就交出几条；
 *   超长    一行超过 maxLineBytes 就报一个问题、丢掉这一行剩下的部分（直到下一个 \n），缓冲永远有上限；
 *   坏行    不是 JSON 的一行报一个问题、跳过：服务器往 stdout 打了一句日志，不该让整条连接断掉。
 */

export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/** 解码一块字节得到的：完整的消息，以及一路上遇到的问题（给人看，从不抛出）。 */
export interface Decoded {
  messages: unknown[];
  problems: string[];
}

/** 一条消息写成一行：JSON.stringify 不会写出原样的换行，所以一行就是一条。 */
export function encodeLine(message: unknown): string {
  return `${JSON.stringify(message)}\n`;
}

export class LineDecoder {
  private buffer = "";
  /** 正在丢弃一行过长的消息：直到下一个 \n 为止的字节都不要。 */
  private skipping = false;

  constructor(readonly maxLineBytes = DEFAULT_MAX_LINE_BYTES) {}

  push(chunk: string): Decoded {
    // #region lab 17.1
    const decoded: Decoded = { messages: [], problems: [] };
    let rest = chunk;
    for (let end = rest.indexOf("\n"); end >= 0; end = rest.indexOf("\n")) {
      const line = this.buffer + rest.slice(0, end);
      rest = rest.slice(end + 1);
      this.buffer = "";
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      this.take(line, decoded);
    }
    if (this.skipping) return decoded;
    this.buffer += rest;
    if (Buffer.byteLength(this.buffer) > this.maxLineBytes) {
      decoded.problems.push(overLong(this.maxLineBytes));
      this.buffer = "";
      this.skipping = true;
    }
    return decoded;
    // #endregion
  }

  // #region lab 17.1 辅助
  private take(line: string, decoded: Decoded): void {
    const trimmed = line.trim();
    if (trimmed === "") return;
    if (Buffer.byteLength(trimmed) > this.maxLineBytes) {
      decoded.problems.push(overLong(this.maxLineBytes));
      return;
    }
    try {
      decoded.messages.push(JSON.parse(trimmed));
    } catch {
      decoded.problems.push(`跳过一行不是 JSON 的输出：${trimmed.slice(0, 80)}`);
    }
  }
  // #endregion
}

function overLong(max: number): string {
  return `丢弃一行超过 ${max} 字节的消息。`;
}
