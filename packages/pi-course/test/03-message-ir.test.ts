import assert from "node:assert/strict";
import test from "node:test";

import { AssistantMessageEventStream } from "../src/event-stream.js";
import {
  assistantMessage,
  currentSystemMessage,
  currentSystemPrompt,
  systemMessageText,
  text,
  textOf,
  type AgentMessage,
  type ModelEvent,
} from "../src/types.js";

test("文本投影有损，但不修改原 content", () => {
  const message = assistantMessage(
    [
      text("先读取"),
      { type: "toolCall", id: "call_1", name: "read", arguments: { path: "README.md" } },
      text("再回答"),
    ],
    "toolUse",
    { timestamp: 1_010 },
  );
  const before = structuredClone(message.content);

  assert.equal(textOf(message), "先读取\n再回答");
  assert.deepEqual(message.content, before);
  // 构造函数的默认值：没有覆盖的字段照课文写的来
  assert.deepEqual(
    { provider: message.provider, model: message.model, usage: message.usage },
    { provider: "scripted", model: "scripted-v1", usage: { input: 0, output: 0, totalTokens: 0 } },
  );
});

test("error 终态自行结束流，result() 交出事件里的同一条 AssistantMessage", { timeout: 1_000 }, async () => {
  const stream = new AssistantMessageEventStream();
  const failed = assistantMessage([text("读到一半")], "error", {
    errorMessage: "socket reset",
    timestamp: 2_000,
  });

  stream.push({ type: "error", reason: "error", error: failed });
  // 终态之后的事件必须被丢弃，不能出现在迭代里。
  stream.push({ type: "start", partial: assistantMessage([]) } satisfies ModelEvent);

  const seen: string[] = [];
  for await (const event of stream) seen.push(event.type);

  assert.deepEqual(seen, ["error"]);
  const result = await stream.result();
  assert.equal(result, failed);
  assert.equal(result.errorMessage, "socket reset");

  // done 也是终态：之前的事件照样看得到，result() 交出 done 带的那条消息
  const finished = new AssistantMessageEventStream();
  const answer = assistantMessage([text("好了")], "stop", { timestamp: 2_001 });
  finished.push({ type: "start", partial: assistantMessage([]) });
  finished.push({ type: "done", reason: "stop", message: answer });
  const order: string[] = [];
  for await (const event of finished) order.push(event.type);
  assert.deepEqual(order, ["start", "done"]);
  assert.equal(await finished.result(), answer);
});

const replayedTranscript: AgentMessage[] = [
  {
    role: "system",
    content: "You are Pi.",
    sections: { rules: "RULE v1", scratch: "SCRATCH" },
    timestamp: 10,
  },
  { role: "user", content: [text("go")], timestamp: 11 },
  { role: "system", content: "", sections: { rules: "RULE v2", scratch: null }, timestamp: 20 },
  assistantMessage([text("ok")], "stop", { timestamp: 21 }),
  { role: "system", content: "Prefer small diffs.", timestamp: 30 },
];

test("system message 按出现顺序重放：追加说明、按名替换段落、null 删除", () => {
  const before = structuredClone(replayedTranscript);

  assert.deepEqual(currentSystemMessage(replayedTranscript), {
    role: "system",
    content: "You are Pi.\n\nPrefer small diffs.",
    sections: { rules: "RULE v2" },
    timestamp: 10,
  });
  assert.equal(
    currentSystemPrompt(replayedTranscript),
    "You are Pi.\n\nPrefer small diffs.\n\nRULE v2",
  );
  assert.equal(currentSystemMessage([{ role: "user", content: [text("hi")], timestamp: 1 }]), undefined);
  assert.deepEqual(replayedTranscript, before);

  // 段落被 null 删光以后，合成结果里连 sections 这个键都不该留下。
  const allDeleted = currentSystemMessage([
    { role: "system", content: "You are Pi.", sections: { rules: "RULE v1" }, timestamp: 10 },
    { role: "system", content: "", sections: { rules: null }, timestamp: 20 },
  ]);
  assert.deepEqual(allDeleted, { role: "system", content: "You are Pi.", timestamp: 10 });
  assert.equal(allDeleted !== undefined && "sections" in allDeleted, false, "段落全部删除后不该留下 sections 键");
});

test("systemMessageText 按固定顺序拼接 content 与段落，跳过空串和 null", () => {
  const system: AgentMessage = {
    role: "system",
    content: "",
    sections: { first: "A", dropped: null, blank: "", second: "B" },
    timestamp: 1,
  };

  assert.equal(systemMessageText(system), "A\n\nB");
  // system 消息的文本视图就是渲染后的 prompt：段落里的文字也算数。
  assert.equal(textOf(system), "A\n\nB");
});
