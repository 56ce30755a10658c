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

// ── 有状态的解码器：字节块 → 事件 ───────────────────────────────

/**
 * 一次只喂一块字节，吐出这块字节凑齐的事件（只取 data）。
 * 没凑齐的半个字符、半行、半个事件都留在内部，等下一块来接上。
 */
export class SseDecoder {
  // #region lab 5.2 辅助
  private readonly text = new TextDecoder("utf-8");
  /** 最后一个换行之后的文字：一行还没收完。 */
  private pendingLine = "";
  /** 当前事件已经收到的 data 行；空行到来时才合成一个事件。 */
  private dataLines: string[] = [];
  // #endregion

  push(bytes: Uint8Array): string[] {
    // #region lab 5.2
    // stream: true 让解码器把被切开的多字节字符留到下一块，而不是当场换成 U+FFFD。
    this.pendingLine += this.text.decode(bytes, { stream: true });
    const lines = this.pendingLine.split("\n");
    this.pendingLine = lines.pop() ?? "";
    const events: string[] = [];
    for (const line of lines) {
      const data = this.acceptLine(line.endsWith("\r") ? line.slice(0, -1) : line);
      if (data !== undefined) events.push(data);
    }
    return events;
    // #endregion
  }

  // #region lab 5.2 辅助
  /** 空行结束一个事件；没有 data 行的事件（只有注释或 event: 之类）不算数。 */
  private acceptLine(line: string): string | undefined {
    if (line === "") {
      if (this.dataLines.length === 0) return undefined;
      const data = this.dataLines.join("\n");
      this.dataLines = [];
      return data;
    }
    const field = sseField(line);
    if (field?.name === "data") this.dataLines.push(field.value);
    return undefined;
  }
  // #endregion
}

/**
 * 逐个交出响应体里每个完整事件的 data。响应结束时还没等到空行的半个事件被丢弃：
 * 它可能正是断线截掉的那一段。
 */
export async function* readSseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new SseDecoder();
  try {
    for await (const bytes of body) yield* decoder.push(bytes);
  } catch (error) {
    // 底层只会说 terminated 之类的词；说清是哪一步断的，原来的错误留在 cause 里。
    throw new Error("响应流在中途断开了，后面的事件没有收到", { cause: error });
  }
}
