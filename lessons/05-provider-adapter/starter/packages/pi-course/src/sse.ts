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
  throw new Error("Lab 5.2 尚未实现");
}

// ── 有状态的解码器：字节块 → 事件 ───────────────────────────────

/**
 * 一次只喂一块字节，吐出这块字节凑齐的事件（只取 data）。
 * 没凑齐的半个字符、半行、半个事件都留在内部，等下一块来接上。
 */
export class SseDecoder {
  push(bytes: Uint8Array): string[] {
    throw new Error("Lab 5.2 尚未实现");
  }
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
