import assert from "node:assert/strict";
import test from "node:test";

import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import {
  assistantMessage,
  text,
  type AgentContext,
  type AgentMessage,
  type AssistantMessage,
  type ModelEvent,
  type ModelStream,
  type ToolCall,
} from "../src/types.js";

const readReadme: ToolCall = { type: "toolCall", id: "call_1", name: "read", arguments: { path: "README.md" } };

/** README 往返的两个 turn：先说明并请求 read，拿到结果后说出项目名。 */
const readmeScript: ScriptedTurn[] = [
  {
    kind: "reply",
    content: [text("我先读取项目说明。"), readReadme],
    stopReason: "toolUse",
    usage: { input: 18, output: 12, totalTokens: 30 },
  },
  {
    kind: "reply",
    content: [text("项目名是 tiny-pi。")],
    stopReason: "stop",
    usage: { input: 52, output: 8, totalTokens: 60 },
  },
];

const question: AgentMessage = {
  role: "user",
  content: [text("请读取 README，然后告诉我项目名。")],
  timestamp: 1_000,
};

const fixedClock = { now: () => 1_010 };

async function collect(stream: ModelStream): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function partialOf(event: ModelEvent | undefined): AssistantMessage {
  assert.ok(event && "partial" in event, `事件 ${event?.type} 应当携带 partial`);
  return event.partial;
}

// ── 实践 4.1 ────────────────────────────────────────────────────

test("4.1 README turn 播成 start → text_delta → toolcall_delta → toolcall_end → done，result() 就是 done 的 message", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const stream = model.stream({ messages: [question] });

  // 先等结果再读事件：晚到的消费者也必须看到完整序列。
  const message = await stream.result();
  const events = await collect(stream);

  assert.deepEqual(
    events.map((event) => event.type),
    ["start", "text_delta", "toolcall_delta", "toolcall_end", "done"],
  );
  const [start, textDelta, toolDelta, toolEnd, done] = events;
  assert.deepEqual(partialOf(start).content, []);
  assert.ok(textDelta?.type === "text_delta");
  assert.equal(textDelta.contentIndex, 0);
  assert.equal(textDelta.delta, "我先读取项目说明。");

  assert.ok(toolDelta?.type === "toolcall_delta");
  assert.equal(toolDelta.contentIndex, 1);
  assert.equal(toolDelta.delta, '{"path":"README.md"}');
  assert.deepEqual(toolDelta.partial.content[1], { ...readReadme, arguments: {}, rawArguments: '{"path":"README.md"}' });

  assert.ok(toolEnd?.type === "toolcall_end");
  assert.equal(toolEnd.contentIndex, 1);
  assert.deepEqual(toolEnd.toolCall, readReadme);

  assert.ok(done?.type === "done");
  assert.equal(done.reason, "toolUse");
  assert.equal(done.message, message);
  assert.deepEqual(
    message,
    assistantMessage([text("我先读取项目说明。"), readReadme], "toolUse", {
      usage: { input: 18, output: 12, totalTokens: 30 },
      timestamp: 1_010,
    }),
  );
});

test("4.1 每个事件的 partial 都是独立快照，后来的事件不会改写先前的 partial", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const events = await collect(model.stream({ messages: [question] }));
  const partials = events.slice(0, 4).map(partialOf);

  assert.equal(new Set(partials).size, 4, "每个事件都应当拿到自己的 partial 对象");
  assert.deepEqual(partials[0]?.content, [], "start 的 partial 被后来的事件改写了");
  assert.deepEqual(partials[1]?.content, [text("我先读取项目说明。")], "text_delta 的 partial 被后来的事件改写了");
  assert.deepEqual(
    partials[2]?.content[1],
    { ...readReadme, arguments: {}, rawArguments: '{"path":"README.md"}' },
    "toolcall_delta 的 partial 被后来的事件改写了",
  );
  assert.deepEqual(partials[3]?.content, [text("我先读取项目说明。"), readReadme]);
});

test("4.1 content 按脚本顺序播出，contentIndex 跟着 block 在数组里的位置走", { timeout: 1_000 }, async () => {
  const readA: ToolCall = { type: "toolCall", id: "call_a", name: "read", arguments: { path: "a.md" } };
  const readB: ToolCall = { type: "toolCall", id: "call_b", name: "read", arguments: { path: "b.md" } };
  const model = new ScriptedModel([{ kind: "reply", content: [readA, readB, text("两份都要读。")], stopReason: "toolUse" }]);

  const stream = model.stream({ messages: [question] });
  const events = await collect(stream);

  assert.deepEqual(
    events.map((event) => ("contentIndex" in event ? `${event.type}#${event.contentIndex}` : event.type)),
    ["start", "toolcall_delta#0", "toolcall_end#0", "toolcall_delta#1", "toolcall_end#1", "text_delta#2", "done"],
  );
  const message = await stream.result();
  assert.deepEqual(message.content, [readA, readB, text("两份都要读。")]);
  assert.deepEqual(message.usage, { input: 0, output: 0, totalTokens: 0 });
});

// ── 实践 4.2 ────────────────────────────────────────────────────

test("4.2 同一个实例逐次播放下一个 turn：README 往返不联网也能走完两次调用", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const messages: AgentContext["messages"] = [question];

  const first = await model.stream({ messages }).result();
  assert.equal(first.stopReason, "toolUse");
  messages.push(first, {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [text("# tiny-pi\nA small agent runtime.")],
    isError: false,
    timestamp: 1_020,
  });

  const second = await model.stream({ messages }).result();
  assert.equal(second.stopReason, "stop");
  assert.deepEqual(second.content, [text("项目名是 tiny-pi。")]);
  assert.deepEqual(second.usage, { input: 52, output: 8, totalTokens: 60 });
  assert.deepEqual(
    model.requests.map((request: AgentContext) => request.messages.map((message: AgentMessage) => message.role)),
    [["user"], ["user", "assistant", "toolResult"]],
  );
});

test("4.2 requests 保存每次请求的深拷贝：调用方之后改 messages 不影响记录", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const context: AgentContext = { messages: [structuredClone(question)] };
  const before = structuredClone(context);

  await model.stream(context).result();
  context.messages.push(assistantMessage([text("之后追加的消息")]));
  const asked = context.messages[0];
  assert.ok(asked?.role === "user");
  asked.content[0] = text("被改过的问题");

  assert.equal(model.requests.length, 1);
  assert.notEqual(model.requests[0], context);
  assert.deepEqual(model.requests[0], before, "记录跟着调用方的数组一起变了");
});

// ── 实践 4.3 ────────────────────────────────────────────────────

test("4.3 error turn 以 error 终态结束，保留已经生成的文字和 errorMessage", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(
    [{ kind: "error", errorMessage: "socket reset", partialText: "我先读" }],
    fixedClock,
  );
  const stream = model.stream({ messages: [question] });
  const events = await collect(stream);
  const failed = await stream.result();

  assert.deepEqual(events.map((event) => event.type), ["start", "text_delta", "error"]);
  const last = events.at(-1);
  assert.ok(last?.type === "error");
  assert.equal(last.reason, "error");
  assert.equal(last.error, failed);
  assert.deepEqual(failed.content, [text("我先读")]);
  assert.equal(failed.stopReason, "error");
  assert.equal(failed.errorMessage, "socket reset");
});

test("4.3 脚本播完后再调用，以 error 终态说明没有更多 turn，并写出第几次调用", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript.slice(0, 1), fixedClock);
  await model.stream({ messages: [question] }).result();

  const stream = model.stream({ messages: [question] });
  const events = await collect(stream);
  const failed = await stream.result();

  assert.deepEqual(events.map((event) => event.type), ["error"]);
  assert.equal(failed.stopReason, "error");
  assert.deepEqual(failed.content, []);
  assert.match(failed.errorMessage ?? "", /没有更多 turn/);
  assert.match(failed.errorMessage ?? "", /第 2 次/);
});

test("4.3 写错的 turn 也以 error 终态收场：errorMessage 写明第几个 turn 错在哪里，下一次调用照常播放下一个", { timeout: 1_000 }, async () => {
  // 脚本常从 JSON 文件读进来，类型检查拦不住这些写法。
  const broken = [
    { kind: "replay", content: [text("拼错了 kind")], stopReason: "stop" },
    { kind: "reply", content: [{ type: "image", url: "a.png" }], stopReason: "stop" },
    { kind: "reply", content: [text("好的")], stopReason: "error" },
    { kind: "reply", content: "好的", stopReason: "stop" },
    { kind: "error", errorMessage: 503 },
    null,
    { kind: "reply", content: [{ type: "text", value: "好的" }], stopReason: "stop" },
    { kind: "reply", content: [text("先读"), { type: "toolCall", name: "read", arguments: {} }], stopReason: "toolUse" },
    { kind: "reply", content: [{ type: "toolCall", id: "call_1", arguments: {} }], stopReason: "toolUse" },
    { kind: "error", errorMessage: "socket reset", partialText: 42 },
  ] as unknown as ScriptedTurn[];
  const model = new ScriptedModel([...broken, readmeScript[1] as ScriptedTurn], fixedClock);
  const expected = [
    /kind/,
    /content\[0\]/,
    /stopReason/,
    /content 不是数组/,
    /errorMessage/,
    /不是一个对象/,
    /content\[0\]/,
    /content\[1\]/,
    /content\[0\]/,
    /partialText 不是字符串/,
  ];

  for (const [at, problem] of expected.entries()) {
    const stream: ModelStream = model.stream({ messages: [question] });
    const events = await collect(stream);
    const failed: AssistantMessage = await stream.result();
    assert.deepEqual(events.map((event) => event.type), ["error"], `第 ${at + 1} 个 turn`);
    assert.equal(failed.stopReason, "error");
    assert.match(failed.errorMessage ?? "", new RegExp(`第 ${at + 1} 个 turn`));
    assert.match(failed.errorMessage ?? "", problem);
  }
  const next = await model.stream({ messages: [question] }).result();
  assert.deepEqual(next.content, [text("项目名是 tiny-pi。")], "写错的 turn 也算播过，下一次轮到下一个");
});

test("4.3 开始前已取消的请求以 aborted 结束，不消耗 turn", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const controller = new AbortController();
  controller.abort();

  const stream = model.stream({ messages: [question] }, { signal: controller.signal });
  const events = await collect(stream);
  const aborted = await stream.result();

  assert.deepEqual(events.map((event) => event.type), ["error"]);
  assert.ok(events[0]?.type === "error");
  assert.equal(events[0].reason, "aborted");
  assert.equal(aborted.stopReason, "aborted");
  assert.deepEqual(aborted.content, []);

  // 被取消的那次没有用掉第一个 turn：下一次调用照样从它开始。
  const next = await model.stream({ messages: [question] }).result();
  assert.equal(next.stopReason, "toolUse");
  assert.equal(model.requests.length, 2);
});

test("4.3 播放途中取消：剩下的事件不再送出，已经送出的文字留在 aborted 消息里", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, fixedClock);
  const controller = new AbortController();
  const stream = model.stream({ messages: [question] }, { signal: controller.signal });

  const seen: string[] = [];
  for await (const event of stream) {
    seen.push(event.type);
    if (event.type === "text_delta") controller.abort();
  }
  const aborted = await stream.result();

  assert.deepEqual(seen, ["start", "text_delta", "error"]);
  assert.equal(aborted.stopReason, "aborted");
  assert.deepEqual(aborted.content, [text("我先读取项目说明。")]);

  // stream() 自己不推任何事件：返回之后立刻取消，连 start 都来不及送出。
  const quick = new AbortController();
  const early = model.stream({ messages: [question] }, { signal: quick.signal });
  quick.abort();
  const earlyEvents = await collect(early);
  assert.deepEqual(earlyEvents.map((event) => event.type), ["error"]);
  assert.deepEqual((await early.result()).content, []);
});
