/**
 * 对 items 逐个做 work，最多 limit 个同时进行（按 items 的顺序开始）；结果按 items 的顺序交回。
 * work 的第二个参数是做这件事的工作者编号（0 到 limit-1）：同一个工作者一次只做一件，可以独占一份资源。
 */
export async function mapInPool<T, R>(items: readonly T[], limit: number, work: (item: T, worker: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (id: number) => {
    for (let index = next++; index < items.length; index = next++) results[index] = await work(items[index] as T, id);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, (_, id) => worker(id)));
  return results;
}
