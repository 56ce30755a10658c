import assert from "node:assert/strict";
import test from "node:test";

import { EventStream } from "../src/event-stream.js";

// 本章还没有消息类型：用一个玩具事件流代替模型输出。
// 模型一个字一个字地吐出 token，最后用 done 交出整句话。
type ToyEvent = { type: "token"; text: string } | { type: "done"; full: string };

function token(text: string): ToyEvent {
  return { type: "token", text };
}

function done(full: string): ToyEvent {
  return { type: "done", full };
}

/** 把事件写成一小段字符串，断言失败时一眼能看出顺序。 */
function label(event: ToyEvent): string {
  return event.type === "token" ? event.text : `done:${event.full}`;
}

function fullTextOf(event: ToyEvent): string {
  if (event.type !== "done") throw new Error("只有 done 事件携带整句话");
  return event.full;
}

function toyStream(): EventStream<ToyEvent, string> {
  return new EventStream<ToyEvent, string>((event: ToyEvent) => event.type === "done", fullTextOf);
}

/** 逐个读完整条流，返回读到的事件标签。 */
async function drain(stream: EventStream<ToyEvent, string>): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of stream) seen.push(label(event));
  return seen;
}

/** 让出一整轮事件循环：所有已经能跑的微任务都跑完。 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

test("没有消费者时，push 的事件排进队列，稍后按原顺序读出", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  stream.push(token("你"));
  stream.push(token("好"));
  stream.push(token("！"));

  const reader = stream[Symbol.asyncIterator]();
  const steps = [await reader.next(), await reader.next(), await reader.next()];

  assert.deepEqual(steps, [
    { value: token("你"), done: false },
    { value: token("好"), done: false },
    { value: token("！"), done: false },
  ]);
});

test("消费者先来就等待，下一次 push 直接唤醒它", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  const reader = stream[Symbol.asyncIterator]();
  let woken = false;
  const pending = reader.next().then((step: IteratorResult<ToyEvent>) => {
    woken = true;
    return step;
  });

  await nextTurn();
  assert.equal(woken, false, "还没有任何 push，消费者应当继续等待");

  stream.push(token("你"));
  assert.deepEqual(await pending, { value: token("你"), done: false });
});

test("每个事件只交付一次：两个消费者同时等待时按先来后到各取一个", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  const first = stream[Symbol.asyncIterator]().next();
  const second = stream[Symbol.asyncIterator]().next();

  stream.push(token("一"));
  stream.push(token("二"));

  assert.deepEqual(await first, { value: token("一"), done: false });
  assert.deepEqual(await second, { value: token("二"), done: false });
});

test("终态事件照样送达迭代器，迭代随后结束，result() 交出它携带的结果", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  // 两个读者在任何事件到达之前就位：终端逐个画出事件，Agent 只等最终结果。
  const terminal = drain(stream);
  const agent = stream.result();

  stream.push(token("你"));
  stream.push(token("好"));
  stream.push(done("你好"));

  // 没有人调用 end()：迭代能结束，只能是因为终态事件本身。
  assert.deepEqual(await terminal, ["你", "好", "done:你好"]);
  assert.equal(await agent, "你好");

  // 终态事件只交给排在最前的读者；其余还在等的读者被放行，收到“结束”，不会永远挂着。
  const shared = toyStream();
  const first = shared[Symbol.asyncIterator]().next();
  const second = shared[Symbol.asyncIterator]().next();
  shared.push(done("完"));
  assert.deepEqual(await first, { value: done("完"), done: false });
  assert.deepEqual(await second, { value: undefined, done: true });
});

test("终态之后的 push 被忽略：迭代看不到，result() 也不变", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  stream.push(token("你"));
  stream.push(done("你"));
  stream.push(token("迟到"));
  stream.push(done("改写"));

  assert.deepEqual(await drain(stream), ["你", "done:你"]);
  assert.equal(await stream.result(), "你");
});

test("end() 在没有终态事件时收尾：放行等待的迭代并完成 result()", { timeout: 1_000 }, async () => {
  const stream = toyStream();
  const terminal = drain(stream);

  stream.push(token("你"));
  // 让迭代器读走“你”，重新停下来等下一个事件，再由 end() 放行它。
  await nextTurn();
  stream.end("你（已取消）");

  assert.deepEqual(await terminal, ["你"]);
  assert.equal(await stream.result(), "你（已取消）");

  // end() 之后流就结束了：迟到的 push 被忽略，晚来的读者立刻读完，什么也拿不到。
  stream.push(token("迟到"));
  assert.deepEqual(await drain(stream), []);
});
