import assert from "node:assert/strict";
import test from "node:test";

import { README_TRACE, renderTrace } from "../src/prologue.js";
import {
  assertNever,
  describeEvent,
  parseTrace,
  traceEvents,
  type TraceEvent,
} from "../src/trace-events.js";

test("标签联合：README trace 摊平成七个事件，每次模型调用以 model_stop 收尾", () => {
  assert.deepEqual(traceEvents(README_TRACE), [
    { type: "user_text", text: "请读取 README，然后告诉我项目名。" },
    { type: "model_text", text: "我先读取项目说明。" },
    { type: "tool_call", id: "call_1", name: "read", arguments: { path: "README.md" } },
    { type: "model_stop", reason: "toolUse" },
    { type: "tool_result", toolCallId: "call_1", text: "# tiny-pi\nA small agent runtime.", isError: false },
    { type: "model_text", text: "项目名是 tiny-pi。" },
    { type: "model_stop", reason: "stop" },
  ]);
});

test("穷尽 switch：每种事件都有一句描述，绕过类型的事件在运行时被喊出来", () => {
  assert.deepEqual(traceEvents(README_TRACE).map(describeEvent), [
    "用户说：请读取 README，然后告诉我项目名。",
    "模型说：我先读取项目说明。",
    "模型请求工具 read（call_1）",
    "模型停下，等工具结果",
    "工具返回（call_1）",
    "模型说：项目名是 tiny-pi。",
    "模型说完了",
  ]);

  const smuggled = JSON.parse('{"type":"thinking","text":"嗯……"}') as TraceEvent;
  assert.throws(() => describeEvent(smuggled), /遇到没有处理的分支：.*thinking/);

  // 编译期的证据：event 还可能是五种事件中的任何一种，不是 never，下一行必须报错。
  // 如果 assertNever 的参数被放宽成 unknown，这条指令就“用不上”了，build 会因此失败。
  // @ts-expect-error
  const skipsEveryCase = (event: TraceEvent) => assertNever(event);
  assert.equal(typeof skipsEveryCase, "function");
});

test("解析 unknown：从 JSON 读回的 README trace 原样通过，还能照常渲染", () => {
  const fromDisk: unknown = JSON.parse(JSON.stringify(README_TRACE));
  const trace = parseTrace(fromDisk);

  assert.deepEqual(trace, README_TRACE);
  assert.equal(renderTrace(trace).at(-1), "5. 模型：项目名是 tiny-pi。");
});

/** 一份从 JSON 读回的 README trace，再弄坏其中一处。JSON.parse 给的就是 any。 */
function damaged(damage: (trace: any) => void): unknown {
  const trace = JSON.parse(JSON.stringify(README_TRACE));
  damage(trace);
  return trace;
}

test("解析 unknown：坏形状被拒绝，错误说出坏字段的路径", () => {
  const cases: Array<{ path: string; input: unknown }> = [
    { path: "trace", input: { messages: README_TRACE } },
    { path: "trace[0]", input: damaged((t) => (t[0] = null)) },
    { path: "trace[0]", input: damaged((t) => (t[0] = ["user", "请读取 README"])) },
    { path: "trace[0].content[0].type", input: damaged((t) => (t[0].content[0].type = "image")) },
    { path: "trace[0].role", input: damaged((t) => (t[0].role = "system")) },
    { path: "trace[1].content[0].type", input: damaged((t) => (t[1].content[0].type = "image")) },
    { path: "trace[1].content[1].id", input: damaged((t) => delete t[1].content[1].id) },
    { path: "trace[1].stopReason", input: damaged((t) => (t[1].stopReason = "done")) },
    { path: "trace[2].toolCallId", input: damaged((t) => delete t[2].toolCallId) },
    { path: "trace[2].isError", input: damaged((t) => (t[2].isError = "no")) },
    { path: "trace[3].content", input: damaged((t) => (t[3].content = "项目名是 tiny-pi。")) },
  ];

  for (const { path, input } of cases) {
    assert.throws(() => parseTrace(input), { name: "TraceShapeError", path }, `${path} 应当被拒绝`);
  }

  assert.throws(() => parseTrace(damaged((t) => (t[1].content[0].type = "image"))), {
    message: 'trace[1].content[0].type 应当是 "text" / "toolCall" 之一，实际是 "image"',
  });
});
