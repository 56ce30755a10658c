import assert from "node:assert/strict";
import test from "node:test";

import { runAgentLoop, type AgentEvent } from "../src/agent-loop.js";
import { AssistantMessageEventStream } from "../src/event-stream.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { defineTool, ToolRegistry } from "../src/tools.js";
import {
  assistantMessage,
  text,
  type AgentMessage,
  type AssistantMessage,
  type Model,
  type ToolCall,
  type ToolResultMessage,
} from "../src/types.js";

// ── 场景 ────────────────────────────────────────────────────────

const system: AgentMessage = { role: "system", content: "你是一个编程助手。", timestamp: 900 };
const question: AgentMessage = { role: "user", content: [text("请读取 README，然后告诉我项目名。")], timestamp: 1_000 };
const history: readonly AgentMessage[] = [system, question];

function call(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

const readReadme = call("call_1", "read", { path: "README.md" });

const readmeScript: ScriptedTurn[] = [
  { kind: "reply", content: [text("我先读取项目说明。"), readReadme], stopReason: "toolUse" },
  { kind: "reply", content: [text("项目名是 tiny-pi。")], stopReason: "stop" },
];

function readTool() {
  return defineTool({
    name: "read",
    description: "读取工作区里的一个文本文件。",
    parameters: s.object({ path: s.string() }),
    async execute(args, context) {
      context.onUpdate({ content: [text(`正在读 ${args.path}`)] });
      return { content: [text("# tiny-pi\nA small agent runtime.")] };
    },
  });
}

/** 等 n 轮事件循环：让“谁先完成”由轮数决定，不依赖真实时钟。 */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

const clocks = { now: () => 3_000 };
const modelClock = { now: () => 2_000 };

function recorder() {
  const events: AgentEvent[] = [];
  return { events, onEvent: (event: AgentEvent) => events.push(event), types: () => events.map(describe) };
}

function describe(event: AgentEvent): string {
  switch (event.type) {
    case "message_start":
    case "message_end":
      return `${event.type}:${event.message.role}`;
    case "message_update":
      return `message_update:${event.event.type}`;
    case "tool_execution_start":
    case "tool_execution_update":
    case "tool_execution_end":
      return `${event.type}:${event.toolCallId}`;
    default:
      return event.type;
  }
}

/** 一次调用只交出一条写好的终态消息的模型：用来造 ScriptedModel 造不出的回答。 */
function fixedModel(messages: AssistantMessage[]): Model & { calls: number } {
  const model = {
    provider: "fixed",
    id: "fixed-v1",
    calls: 0,
    stream() {
      const message = messages[model.calls] ?? assistantMessage([], "error", { errorMessage: "没有更多回答" });
      model.calls += 1;
      const stream = new AssistantMessageEventStream();
      queueMicrotask(() => {
        if (message.stopReason === "error" || message.stopReason === "aborted") {
          stream.push({ type: "error", reason: message.stopReason, error: message });
        } else {
          stream.push({ type: "done", reason: message.stopReason, message });
        }
      });
      return stream;
    },
  };
  return model;
}

function rolesOf(messages: readonly AgentMessage[]): string[] {
  return messages.map((message) => message.role);
}

function resultsOf(messages: readonly AgentMessage[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

// ── 实践 7.1 ────────────────────────────────────────────────────

test("7.1 只说话的一轮：模型被调用一次，交回那条 assistant，以 stop 结束", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel([{ kind: "reply", content: [text("你好。")], stopReason: "stop" }], modelClock);
  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry(), ...clocks });

  assert.equal(model.requests.length, 1);
  assert.deepEqual(run, {
    messages: [assistantMessage([text("你好。")], "stop", { timestamp: 2_000 })],
    reason: "stop",
  });
});

test("7.1 事件成对嵌套：agent_start → turn_start → message_start → message_update… → message_end → turn_end → agent_end", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel([{ kind: "reply", content: [text("你好"), text("。")], stopReason: "stop" }], modelClock);
  const log = recorder();
  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry(), onEvent: log.onEvent, ...clocks });

  assert.deepEqual(log.types(), [
    "agent_start",
    "turn_start",
    "message_start:assistant",
    "message_update:text_delta",
    "message_update:text_delta",
    "message_end:assistant",
    "turn_end",
    "agent_end",
  ]);
  const [, turnStart, , firstUpdate, , messageEnd, turnEnd, agentEnd] = log.events;
  assert.deepEqual(turnStart, { type: "turn_start", step: 1 });
  assert.ok(firstUpdate?.type === "message_update");
  assert.deepEqual(firstUpdate.message.content, [text("你好")], "message_update 应当带着这一刻的 partial");
  assert.equal(messageEnd?.type === "message_end" && messageEnd.message, run.messages[0]);
  assert.deepEqual(turnEnd, { type: "turn_end", message: run.messages[0], toolResults: [] });
  assert.deepEqual(agentEnd, { type: "agent_end", messages: run.messages, reason: "stop" });
});

test("7.1 请求带着完整历史和工具定义；循环不写 system 消息，也不改调用方的数组", { timeout: 1_000 }, async () => {
  const tools = new ToolRegistry([readTool()]);
  const model = new ScriptedModel([{ kind: "reply", content: [text("好的。")], stopReason: "stop" }], modelClock);
  const messages = [...history];

  const run = await runAgentLoop({ model, messages, tools, ...clocks });

  assert.deepEqual(model.requests[0], { messages: [...history], tools: tools.definitions() });
  assert.equal(messages.length, 2, "调用方传入的数组不应当被追加");
  assert.deepEqual(rolesOf(run.messages), ["assistant"]);
  assert.ok(run.messages.every((message) => message.role !== "system"), "循环不应当写 system 消息");
});

// ── 实践 7.2 ────────────────────────────────────────────────────

test("7.2 README 往返：两次模型调用，新消息依次是 assistant(toolUse)、toolResult、assistant(stop)", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, modelClock);
  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), ...clocks });

  assert.equal(model.requests.length, 2, "README 往返应当恰好调用模型两次");
  assert.deepEqual(rolesOf(run.messages), ["assistant", "toolResult", "assistant"]);
  assert.deepEqual(run.messages[1], {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [text("# tiny-pi\nA small agent runtime.")],
    isError: false,
    timestamp: 3_000,
  });
  assert.deepEqual(rolesOf(model.requests[1]?.messages ?? []), ["system", "user", "assistant", "toolResult"]);
  assert.deepEqual(run.messages[2], assistantMessage([text("项目名是 tiny-pi。")], "stop", { timestamp: 2_000 }));
  assert.equal(run.reason, "stop");
});

test("7.2 工具事件带着 toolCallId：start → update → end，结果消息在工具结束后才追加", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(readmeScript, modelClock);
  const log = recorder();
  await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), onEvent: log.onEvent, ...clocks });

  assert.deepEqual(log.types(), [
    "agent_start",
    "turn_start",
    "message_start:assistant",
    "message_update:text_delta",
    "message_update:toolcall_delta",
    "message_update:toolcall_end",
    "message_end:assistant",
    "tool_execution_start:call_1",
    "tool_execution_update:call_1",
    "tool_execution_end:call_1",
    "message_start:toolResult",
    "message_end:toolResult",
    "turn_end",
    "turn_start",
    "message_start:assistant",
    "message_update:text_delta",
    "message_end:assistant",
    "turn_end",
    "agent_end",
  ]);
  const started = log.events.find((event) => event.type === "tool_execution_start");
  assert.deepEqual(started, { type: "tool_execution_start", toolCallId: "call_1", toolName: "read", args: { path: "README.md" } });
  const update = log.events.find((event) => event.type === "tool_execution_update");
  assert.deepEqual(update, { type: "tool_execution_update", toolCallId: "call_1", toolName: "read", partial: { content: [text("正在读 README.md")] } });
});

test("7.2 同一 turn 的工具并发执行，结果按 tool call 的源顺序追加，与完成顺序无关", { timeout: 1_000 }, async () => {
  let running = 0;
  let peak = 0;
  const wait = defineTool({
    name: "wait",
    description: "等几轮事件循环",
    parameters: s.object({ rounds: s.integer() }),
    async execute(args) {
      running += 1;
      peak = Math.max(peak, running);
      await ticks(args.rounds);
      running -= 1;
      return { content: [text(`等了 ${args.rounds} 轮`)] };
    },
  });
  const calls = [call("call_a", "wait", { rounds: 2 }), call("call_b", "wait", { rounds: 3 }), call("call_c", "wait", { rounds: 1 })];
  const model = new ScriptedModel(
    [
      { kind: "reply", content: calls, stopReason: "toolUse" },
      { kind: "reply", content: [text("都等完了。")], stopReason: "stop" },
    ],
    modelClock,
  );
  const log = recorder();

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([wait]), onEvent: log.onEvent, ...clocks });

  assert.equal(peak, 3, "同一 turn 的三个工具应当同时在跑");
  assert.deepEqual(
    log.types().filter((type) => type.startsWith("tool_execution_end")),
    ["tool_execution_end:call_c", "tool_execution_end:call_a", "tool_execution_end:call_b"],
  );
  assert.deepEqual(
    resultsOf(run.messages).map((result) => result.toolCallId),
    ["call_a", "call_b", "call_c"],
    "结果应当按 tool call 的源顺序追加",
  );
  assert.deepEqual(rolesOf(model.requests[1]?.messages ?? []).slice(-4), ["assistant", "toolResult", "toolResult", "toolResult"]);
});

test("7.2 失败的调用（reject、未知工具、参数不合法）都变成 isError 结果，循环照常把它们交给模型", { timeout: 1_000 }, async () => {
  const broken = defineTool({
    name: "broken",
    description: "总是失败",
    parameters: s.object({}),
    execute: () => Promise.reject(new Error("磁盘满了")),
  });
  const model = new ScriptedModel(
    [
      {
        kind: "reply",
        content: [call("call_1", "broken", {}), call("call_2", "grep", { pattern: "pi" }), call("call_3", "read", { path: 7 })],
        stopReason: "toolUse",
      },
      { kind: "reply", content: [text("换个办法。")], stopReason: "stop" },
    ],
    modelClock,
  );

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([broken, readTool()]), ...clocks });

  assert.deepEqual(
    resultsOf(run.messages).map((result) => [result.toolCallId, result.isError, result.details]),
    [
      ["call_1", true, { kind: "execution_failed" }],
      ["call_2", true, { kind: "unknown_tool" }],
      ["call_3", true, { kind: "invalid_arguments", path: "path" }],
    ],
  );
  assert.equal(model.requests.length, 2, "失败的结果也要交给模型，让它换个办法");
  assert.equal(run.reason, "stop");
});

// ── 实践 7.3 ────────────────────────────────────────────────────

test("7.3 length 结束的 turn 不执行工具：每个 tool call 配一条 isError 结果，循环停下", { timeout: 1_000 }, async () => {
  let executed = 0;
  const counted = defineTool({ ...readTool(), execute: async () => ((executed += 1), { content: [] }) });
  const model = new ScriptedModel(
    [{ kind: "reply", content: [text("我来读两个文件"), call("call_1", "read", { path: "a" }), call("call_2", "read", { path: "b" })], stopReason: "length" }],
    modelClock,
  );

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([counted]), ...clocks });

  assert.equal(executed, 0, "参数可能被截断的调用不应当执行");
  assert.equal(model.requests.length, 1);
  assert.equal(run.reason, "length");
  assert.deepEqual(rolesOf(run.messages), ["assistant", "toolResult", "toolResult"], "每个 tool call 都应当配一条结果");
  assert.deepEqual(run.messages[1], {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: [text("工具 read 没有执行：模型输出被截断（length），参数可能不完整。")],
    isError: true,
    details: { kind: "not_executed", stopReason: "length" },
    timestamp: 3_000,
  });
});

test("7.3 error 结束的 turn 同样不执行工具，已出现的 tool call 配上错误结果，errorMessage 带到结局里", { timeout: 1_000 }, async () => {
  const failed = assistantMessage([call("call_1", "read", { path: "a" })], "error", { errorMessage: "socket reset", timestamp: 2_000 });
  const model = fixedModel([failed]);
  const log = recorder();

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), onEvent: log.onEvent, ...clocks });

  assert.equal(model.calls, 1);
  assert.deepEqual(run.messages.map((message) => message.role === "toolResult" && message.details), [
    false,
    { kind: "not_executed", stopReason: "error" },
  ]);
  assert.equal(run.reason, "error");
  assert.equal(run.errorMessage, "socket reset");
  // 流一上来就是终态，没有 start 事件：message_start 仍然要补上。
  assert.deepEqual(log.types().slice(0, 4), ["agent_start", "turn_start", "message_start:assistant", "message_end:assistant"]);
});

test("7.3 协议错误：以 stop 结束却带着 tool call，不执行、配上错误结果，以 protocol_error 结束", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(
    [
      { kind: "reply", content: [text("好了。"), readReadme], stopReason: "stop" },
      { kind: "reply", content: [text("不该被播放")], stopReason: "stop" },
    ],
    modelClock,
  );

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), ...clocks });

  assert.equal(model.requests.length, 1);
  assert.equal(run.reason, "protocol_error");
  assert.equal(run.errorMessage, "模型以 stop 结束，却请求了工具。");
  const [result] = resultsOf(run.messages);
  assert.equal(result?.toolCallId, "call_1");
  assert.equal(result?.isError, true);
  assert.deepEqual(result?.details, { kind: "not_executed", stopReason: "stop" });
});

test("7.3 协议错误：以 toolUse 结束却没有 tool call，不再调用模型，以 protocol_error 结束", { timeout: 1_000 }, async () => {
  const model = new ScriptedModel(
    [
      { kind: "reply", content: [text("我要用工具了")], stopReason: "toolUse" },
      { kind: "reply", content: [text("不该被播放")], stopReason: "stop" },
    ],
    modelClock,
  );
  const log = recorder();

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), onEvent: log.onEvent, ...clocks });

  assert.equal(model.requests.length, 1, "没有工具结果可交，再问模型只会得到同样的回答");
  assert.deepEqual(rolesOf(run.messages), ["assistant"]);
  assert.equal(run.reason, "protocol_error");
  assert.equal(run.errorMessage, "模型以 toolUse 结束，却没有请求任何工具。");
  assert.deepEqual(log.events.at(-1), { type: "agent_end", messages: run.messages, reason: "protocol_error", errorMessage: run.errorMessage });
});

// ── 实践 7.4 ────────────────────────────────────────────────────

test("7.4 开始前已取消：一次模型调用都不发起，没有新消息，以 aborted 结束", { timeout: 1_000 }, async () => {
  const controller = new AbortController();
  controller.abort();
  const model = new ScriptedModel(readmeScript, modelClock);
  const log = recorder();

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), signal: controller.signal, onEvent: log.onEvent });

  assert.equal(model.requests.length, 0);
  assert.deepEqual(run, { messages: [], reason: "aborted" });
  assert.deepEqual(log.types(), ["agent_start", "agent_end"]);
});

test("7.4 模型生成途中取消：aborted 消息里已出现的 tool call 配上错误结果，工具不执行", { timeout: 1_000 }, async () => {
  let executed = 0;
  const counted = defineTool({ ...readTool(), execute: async () => ((executed += 1), { content: [] }) });
  const controller = new AbortController();
  const model = new ScriptedModel(readmeScript, modelClock);
  const onEvent = (event: AgentEvent) => {
    if (event.type === "message_update" && event.event.type === "toolcall_end") controller.abort();
  };

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([counted]), signal: controller.signal, onEvent, ...clocks });

  assert.equal(executed, 0);
  assert.equal(model.requests.length, 1);
  assert.equal(run.reason, "aborted");
  const [assistant, result] = run.messages;
  assert.ok(assistant?.role === "assistant");
  assert.equal(assistant.stopReason, "aborted");
  assert.deepEqual(assistant.content, [text("我先读取项目说明。"), readReadme]);
  assert.ok(result?.role === "toolResult");
  assert.equal(result.toolCallId, "call_1");
  assert.deepEqual(result.details, { kind: "not_executed", stopReason: "aborted" });
});

test("7.4 工具执行途中取消：工具收到 signal，循环等所有工具收尾后停下，不再调用模型", { timeout: 1_000 }, async () => {
  const controller = new AbortController();
  const slow = defineTool({
    name: "slow",
    description: "一直等到被取消",
    parameters: s.object({}),
    execute: (_args, context) =>
      new Promise((_resolve, reject) => {
        context.signal.addEventListener("abort", () => reject(new Error("被取消了")), { once: true });
        context.onUpdate({ content: [text("开始等待")] });
      }),
  });
  const model = new ScriptedModel(
    [
      { kind: "reply", content: [call("call_slow", "slow", {}), readReadme], stopReason: "toolUse" },
      { kind: "reply", content: [text("不该被播放")], stopReason: "stop" },
    ],
    modelClock,
  );
  // 两个工具都已开始后才取消：slow 在等 signal，read 不理会取消、照常完成。
  const onEvent = (event: AgentEvent) => {
    if (event.type === "tool_execution_update" && event.toolCallId === "call_1") controller.abort();
  };

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([slow, readTool()]), signal: controller.signal, onEvent, ...clocks });

  assert.equal(model.requests.length, 1, "取消之后不应当再调用模型");
  assert.equal(run.reason, "aborted");
  assert.deepEqual(
    resultsOf(run.messages).map((result) => [result.toolCallId, result.isError, result.content]),
    [
      ["call_slow", true, [text("工具 slow 执行失败：被取消了")]],
      ["call_1", false, [text("# tiny-pi\nA small agent runtime.")]],
    ],
    "被取消的工具以错误结果收尾，不理会取消的工具照常完成",
  );
});

test("7.4 maxSteps 限制模型调用次数：到上限就停下，以 max_steps 结束", { timeout: 1_000 }, async () => {
  const again: ScriptedTurn = { kind: "reply", content: [readReadme], stopReason: "toolUse" };
  const model = new ScriptedModel([again, again, again], modelClock);
  const log = recorder();

  const run = await runAgentLoop({ model, messages: history, tools: new ToolRegistry([readTool()]), maxSteps: 2, onEvent: log.onEvent, ...clocks });

  assert.equal(model.requests.length, 2);
  assert.deepEqual(rolesOf(run.messages), ["assistant", "toolResult", "assistant", "toolResult"]);
  assert.equal(run.reason, "max_steps");
  assert.deepEqual(
    log.events.filter((event) => event.type === "turn_start"),
    [
      { type: "turn_start", step: 1 },
      { type: "turn_start", step: 2 },
    ],
  );
});
