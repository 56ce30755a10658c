import assert from "node:assert/strict";
import test from "node:test";

import {
  BrokenTraceError,
  README_TRACE,
  pairingProblems,
  showTrace,
  renderTrace,
  type TraceMessage,
} from "../src/prologue.js";

test("README 往返经过两次模型调用：先请求 read，拿到同 id 的结果后才回答", () => {
  assert.deepEqual(
    README_TRACE.map((message) => message.role),
    ["user", "assistant", "toolResult", "assistant"],
  );

  const [, firstCall, result, secondCall] = README_TRACE;
  assert.ok(firstCall?.role === "assistant" && secondCall?.role === "assistant");
  assert.ok(result?.role === "toolResult");

  assert.deepEqual(firstCall.content.map((block) => block.type), ["text", "toolCall"]);
  assert.equal(firstCall.stopReason, "toolUse");
  assert.deepEqual(firstCall.content[1], {
    type: "toolCall",
    id: "call_1",
    name: "read",
    arguments: { path: "README.md" },
  });
  assert.equal(result.toolCallId, "call_1");
  assert.equal(secondCall.stopReason, "stop");
});

test("终端画面按发生顺序编号，最后一行说出项目名 tiny-pi", () => {
  assert.deepEqual(renderTrace(README_TRACE), [
    "1. 用户：请读取 README，然后告诉我项目名。",
    "2. 模型：我先读取项目说明。",
    '3. 调用 read {"path":"README.md"}（call_1）',
    "4. 工具结果 call_1：# tiny-pi ⏎ A small agent runtime.",
    "5. 模型：项目名是 tiny-pi。",
  ]);
});

test("缺了工具结果的 trace 被拒绝：错误点名 call_1，终端上一行都不出现", () => {
  const withoutResult = README_TRACE.filter((message) => message.role !== "toolResult");
  const shown: string[] = [];

  assert.throws(
    () => showTrace(withoutResult, (line) => shown.push(line)),
    (error: unknown) => {
      assert.ok(error instanceof BrokenTraceError);
      assert.deepEqual(error.problems.map((problem) => problem.callId), ["call_1"]);
      assert.match(error.message, /工具调用 call_1（read）没有收到工具结果/);
      return true;
    },
  );
  assert.deepEqual(shown, []);
  // 对照：完整的 trace 一行不少地交给 print
  const printed: string[] = [];
  showTrace(README_TRACE, (line) => printed.push(line));
  assert.deepEqual(printed, renderTrace(README_TRACE));
});

test("配对检查一次报告两种问题：认不出的结果，和没人回答的调用", () => {
  const wrongId: TraceMessage[] = README_TRACE.map((message) =>
    message.role === "toolResult" ? { ...message, toolCallId: "call_9" } : message,
  );

  assert.deepEqual(pairingProblems(README_TRACE), []);
  assert.deepEqual(
    pairingProblems(wrongId).map((problem) => problem.callId),
    ["call_9", "call_1"],
  );
});
