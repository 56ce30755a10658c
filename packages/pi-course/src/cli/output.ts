/**
 * 一个写出口。stdout 常常接在管道上：`tiny-pi --mode json … | head -1` 读够一行就走了，
 * 之后的每次写入都会得到 EPIPE。没有人监听 error 事件，Node 就把它当成未捕获的异常崩掉。
 * 这里监听它：出口一关，就记下来、通知关心的人（停下运行），之后的写入安静地丢掉。
 */

export class Output {
  private isClosed = false;
  private readonly listeners: (() => void)[] = [];

  constructor(readonly stream: NodeJS.WritableStream) {
    // #region lab 13.4
    stream.on("error", () => this.close());
    // #endregion
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** 写一段文字；出口已经关了就什么也不做，返回 false。 */
  write(text: string): boolean {
    if (this.isClosed) return false;
    this.stream.write(text);
    return true;
  }

  /** 出口关闭时调用一次（已经关了就立刻调用）。 */
  onClose(listener: () => void): void {
    if (this.isClosed) listener();
    else this.listeners.push(listener);
  }

  private close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const listener of this.listeners.splice(0)) listener();
  }
}
