/**
 * 服务器发送事件（SSE）：把一条 HTTP 响应的字节流切回一个个事件。
 * 网络只保证字节按顺序到达，不保证一块刚好是一行、一个事件，甚至一个完整的字符。
 */

/** 一行里的一个字段，例如 `data: {...}` 是名字 data、值 `{...}`。 */
export interface SseField {
  name: string;
  value: string;
}

// ── 纯函数：一行 ────────────────────────────────────────────────

/**
 * 读一行（不含换行符）。冒号开头的是注释，返回 undefined；
 * 冒号后面紧跟的那一个空格只是分隔，不属于值。
 */
export function sseField(line: string): SseField | undefined {
  // #region lab 5.2
  if (line.startsWith(":")) return undefined;
  const colon = line.indexOf(":");
  if (colon < 0) return { name: line, value: "" };
  const rest = line.slice(colon + 1);
  return { name: line.slice(0, colon), value: rest.startsWith(" ") ? rest.slice(1) : rest };
  // #endregion
}

// ── 上限：对面可能是坏掉的或者不怀好意的服务器 ─────────────────

/** 一行、一个事件最多收多少个字符（JavaScript 字符串的长度）。 */
export interface SseLimits {
  maxLineChars: number;
  maxEventChars: number;
}

/**
 * 正常的 chunk 只有几百个字符，一个大的工具参数也会被拆成许多块送来。
 * 1 Mi 字符一行、4 Mi 字符一个事件已经宽裕得多；再长只能是服务器出了问题，
 * 继续收下去只会把内存吃光。
 */
export const DEFAULT_SSE_LIMITS: SseLimits = { maxLineChars: 1 << 20, maxEventChars: 4 << 20 };

/** 超过上限时抛出：和“连接断了”区分开，它说的是对面送来的东西不对。 */
export class SseLimitError extends Error {}

// ── 有状态的解码器：字节块 → 事件 ───────────────────────────────

/** SSE 规范承认三种行尾：CRLF、LF，以及单独一个 CR。 */
const LINE_END = /\r\n|\r|\n/g;

/**
 * 一次只喂一块字节，逐个交出这块字节凑齐的事件（只取 data）。
 * 没凑齐的半个字符、半行、半个事件都留在内部，等下一块来接上。
 * 每块只扫描它自己的字符：一行分成一万块送来，也不会把前面收过的部分重新复制、重新切分。
 */
export class SseDecoder {
  private readonly limits: SseLimits;
  // #region lab 5.2 辅助
  private readonly text = new TextDecoder("utf-8");
  /** 当前行已经收到的片段；等到行尾才拼成一行。 */
  private lineParts: string[] = [];
  private lineChars = 0;
  /** 上一块以 CR 结尾：下一块开头的 LF 和它是同一个行尾（CRLF 被切开了）。 */
  private endedWithCr = false;
  /** 当前事件已经收到的 data 行；空行到来时才合成一个事件。 */
  private dataLines: string[] = [];
  private eventChars = 0;
  // #endregion

  constructor(limits: Partial<SseLimits> = {}) {
    this.limits = { ...DEFAULT_SSE_LIMITS, ...limits };
  }

  /** 生成器：凑齐一个就交出一个。同一块里后面超了上限，前面那些完好的事件也已经交出去了。 */
  *push(bytes: Uint8Array): Generator<string> {
    // #region lab 5.2
    // stream: true 让解码器把被切开的多字节字符留到下一块，而不是当场换成 U+FFFD。
    const chunk = this.text.decode(bytes, { stream: true });
    if (chunk === "") return;
    let start = this.endedWithCr && chunk.startsWith("\n") ? 1 : 0;
    this.endedWithCr = chunk.endsWith("\r");
    for (const end of chunk.matchAll(LINE_END)) {
      if (end.index < start) continue;
      this.growLine(chunk.slice(start, end.index));
      const data = this.acceptLine(this.takeLine());
      if (data !== undefined) yield data;
      start = end.index + end[0].length;
    }
    this.growLine(chunk.slice(start));
    // #endregion
  }

  // #region lab 5.2 辅助
  /** 行还没收完就检查长度：等到行尾再查，超长的行早已整个堆在内存里了。 */
  private growLine(piece: string): void {
    if (piece === "") return;
    this.lineChars += piece.length;
    if (this.lineChars > this.limits.maxLineChars) {
      throw new SseLimitError(`SSE 的一行超过了 ${this.limits.maxLineChars} 个字符，不像正常的事件流，不再读下去。`);
    }
    this.lineParts.push(piece);
  }

  private takeLine(): string {
    const line = this.lineParts.join("");
    this.lineParts = [];
    this.lineChars = 0;
    return line;
  }

  /** 空行结束一个事件；没有 data 行的事件（只有注释或 event: 之类）不算数。 */
  private acceptLine(line: string): string | undefined {
    if (line === "") {
      if (this.dataLines.length === 0) return undefined;
      const data = this.dataLines.join("\n");
      this.dataLines = [];
      this.eventChars = 0;
      return data;
    }
    const field = sseField(line);
    if (field?.name !== "data") return undefined;
    this.eventChars += field.value.length + 1;
    if (this.eventChars > this.limits.maxEventChars) {
      throw new SseLimitError(`一个 SSE 事件超过了 ${this.limits.maxEventChars} 个字符，不像正常的事件流，不再读下去。`);
    }
    this.dataLines.push(field.value);
    return undefined;
  }
  // #endregion
}

/**
 * 逐个交出响应体里每个完整事件的 data。响应结束时还没等到空行的半个事件被丢弃：
 * 它可能正是断线截掉的那一段。
 */
export async function* readSseData(
  body: AsyncIterable<Uint8Array>,
  limits: Partial<SseLimits> = {},
): AsyncGenerator<string> {
  const decoder = new SseDecoder(limits);
  try {
    for await (const bytes of body) yield* decoder.push(bytes);
  } catch (error) {
    // 超限是对面送错了东西，原样交出；其余的是连接本身断了。
    if (error instanceof SseLimitError) throw error;
    // 底层只会说 terminated 之类的词；说清是哪一步断的，原来的错误留在 cause 里。
    throw new Error("响应流在中途断开了，后面的事件没有收到", { cause: error });
  }
}
