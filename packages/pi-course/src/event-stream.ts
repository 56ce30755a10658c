import type { AssistantMessage, ModelEvent, ModelStream } from "./types.js";

/**
 * 一条单次使用的异步事件流。
 *
 * 生产者用 push() 送入事件；消费者既可以 `for await` 逐个读取，
 * 也可以只等 result() 拿到终态事件里的最终结果。两条读法看到的是同一段事实。
 */
export class EventStream<T, R = T> implements AsyncIterable<T> {
  /** 已送达、还没有消费者取走的事件。 */
  private readonly buffered: T[] = [];
  /** 先到一步、正在等下一个事件的消费者。 */
  private readonly waiters: Array<(step: IteratorResult<T>) => void> = [];
  private finished = false;
  private readonly finalResult: Promise<R>;
  private settleResult: (result: R) => void = () => {};

  constructor(
    private readonly isComplete: (event: T) => boolean,
    private readonly extractResult: (event: T) => R,
  ) {
    this.finalResult = new Promise<R>((resolve) => {
      this.settleResult = resolve;
    });
  }

  push(event: T): void {
    // 终态之后流已经关闭：迟到的事件不能改写已经交出去的结果。
    if (this.finished) return;

    if (this.isComplete(event)) {
      this.finished = true;
      this.settleResult(this.extractResult(event));
    }

    const waiter = this.waiters.shift();
    if (waiter) waiter({ value: event, done: false });
    else this.buffered.push(event);

    // 终态事件已经送出；其余仍在等待的消费者只会等到“结束”。
    if (this.finished) this.releaseWaiters();
  }

  /** 没有终态事件也要收尾时调用；给出 result 则同时完成 result()。 */
  end(result?: R): void {
    if (this.finished) return;
    this.finished = true;
    if (result !== undefined) this.settleResult(result);
    this.releaseWaiters();
  }

  result(): Promise<R> {
    return this.finalResult;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    while (true) {
      if (this.buffered.length > 0) {
        yield this.buffered.shift() as T;
        continue;
      }
      if (this.finished) return;
      const step = await new Promise<IteratorResult<T>>((resolve) => {
        this.waiters.push(resolve);
      });
      if (step.done) return;
      yield step.value;
    }
  }

  private releaseWaiters(): void {
    for (const waiter of this.waiters.splice(0)) {
      waiter({ value: undefined, done: true });
    }
  }
}

/** 运送模型事件的流：done 或 error 一到就结束，result() 交出终态携带的消息。 */
export class AssistantMessageEventStream
  extends EventStream<ModelEvent, AssistantMessage>
  implements ModelStream
{
  // 通用流只需知道两件事：哪些事件是终态，终态里哪条消息是结果。
  constructor() {
    super(isTerminalEvent, finalMessageOf);
  }
}

function isTerminalEvent(event: ModelEvent): boolean {
  return event.type === "done" || event.type === "error";
}

function finalMessageOf(event: ModelEvent): AssistantMessage {
  switch (event.type) {
    case "done":
      return event.message;
    case "error":
      return event.error;
    default:
      throw new Error(`非终态事件 ${event.type} 不能产生最终消息`);
  }
}
