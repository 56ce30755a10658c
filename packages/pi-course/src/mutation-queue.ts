/**
 * 文件变更队列：同一个文件上的“读 → 改 → 写”一次只跑一个。
 * 两次 edit 若交错执行，后写的那次会带着旧内容覆盖前一次的改动。
 */

export class MutationQueue {
  /** 每个 key 上最后一个任务的完成信号；后来的任务接在它后面。 */
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * 同一个 key 的任务按调用顺序依次执行，不同 key 互不等待。
   * 前一个任务失败不影响后一个：排队只管先后，不传递错误。
   */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    // #region lab 8.2
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    // 队伍走空时删掉 key：长时间运行的 Agent 不该为每个碰过的文件留一项。
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
    // #endregion
  }

  /** 还有任务在排队或执行的 key 数；测试用它确认队伍会清空。 */
  get size(): number {
    return this.tails.size;
  }
}
