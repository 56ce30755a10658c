import assert from "node:assert/strict";
import { test } from "node:test";

import { mapInPool } from "../scripts/engine/pool.ts";

test("mapInPool：最多 limit 件同时进行，同一个工作者一次只做一件，结果按原来的顺序", async () => {
  let running = 0;
  let most = 0;
  const busy = new Set<number>();
  const delays = [30, 5, 20, 1, 10, 15];
  const results = await mapInPool(delays, 2, async (delay, worker) => {
    assert.ok(!busy.has(worker), `工作者 ${worker} 同时做了两件事`);
    assert.ok(worker === 0 || worker === 1);
    busy.add(worker);
    most = Math.max(most, ++running);
    await new Promise((resolve) => setTimeout(resolve, delay));
    running -= 1;
    busy.delete(worker);
    return delay * 2;
  });
  assert.deepEqual(results, [60, 10, 40, 2, 20, 30]);
  assert.equal(most, 2);
  assert.deepEqual(await mapInPool([], 3, async () => 1), []);
  assert.deepEqual(await mapInPool([1, 2], 5, async (value) => value), [1, 2]);
});
