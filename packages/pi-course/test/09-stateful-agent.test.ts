import assert from "node:assert/strict";
import test from "node:test";

import { Agent, LISTENER_TIME_LIMIT_MS } from "../src/agent.js";
import { buildLlmMessages, defaultConvertToLlm, type AgentEvent } from "../src/agent-loop.js";
import { initialAgentState, reduceAgentState, type AgentState } from "../src/agent-state.js";
import { OpenAiCompatibleModel, toChatRequest } from "../src/openai-compatible.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { defineTool, type ToolContext } from "../src/tools.js";
import {
  assistantMessage,
  currentSystemMessage,
  currentTools,
  text,
  userMessage,
  type AgentMessage,
  type Message,
  type SystemMessage,
  type ToolCall,
  type ToolResultMessage,
} from "../src/types.js";

// ── 应用自己的角色：审计记录。它只写给人看，不该进模型的上下文 ─────────

interface AuditNote {
  role: "auditNote";
  /** 给人看的严重程度：warning 级别的记录，有的转换器会转告模型。 */
  severity: "info" | "warning";
  text: string;
  timestamp: number;
}

/**
 * 这份测试不用声明合并登记 auditNote：登记是全局的，一登记，第 05、07 章只认四种角色的代码
 * 在你改到实践 9.4 之前就过不了编译。审计记录因此像一条从文件里读进来的消息那样进入 transcript，
 * 类型不替它担保，运行时的两道闸和适配器照样要挡住它。
 */
function asAgentMessage(message: AuditNote): AgentMessage {
  return message as unknown as AgentMessage;
}

/** 是审计记录就交回它，否则 undefined。 */
function auditNoteOf(message: AgentMessage): AuditNote | undefined {
  const role: string = message.role;
  return role === "auditNote" ? (message as unknown as AuditNote) : undefined;
}

const note = asAgentMessage({ role: "auditNote", text: "跳过了 3 个生成文件", severity: "info", timestamp: 1_500 });

// ── 场景 ────────────────────────────────────────────────────────

const clock = { now: () => 1_000 };

function call(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

const readReadme = call("call_1", "read", { path: "README.md" });

function readTool(description = "读取工作区里的一个文本文件。") {
  return defineTool({
    name: "read",
    description,
    parameters: s.object({ path: s.string() }),
    async execute() {
      return { content: [text("# tiny-pi")] };
    },
  });
}

function lsTool(description = "列出一个目录。") {
  return defineTool({
    name: "ls",
    description,
    parameters: s.object({ path: s.string() }),
    async execute() {
      return { content: [text("README.md")] };
    },
  });
}

const readThenAnswer: ScriptedTurn[] = [
  { kind: "reply", content: [text("我先读 README。"), readReadme], stopReason: "toolUse" },
  { kind: "reply", content: [text("项目名是 tiny-pi。")], stopReason: "stop" },
];

function say(words: string): ScriptedTurn {
  return { kind: "reply", content: [text(words)], stopReason: "stop" };
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((message) => message.role);
}

/** 只看对话：system message 由 9.3、9.5 负责，9.2 不关心它们。 */
function dialogue(messages: readonly AgentMessage[]): string[] {
  return roles(messages).filter((role) => role !== "system");
}

/** 同步动作抛出的错误信息；没有抛出时也交回一句话，断言失败时读得懂。 */
function thrownMessage(action: () => void): string {
  try {
    action();
    return "没有抛出";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

function systemsOf(messages: readonly AgentMessage[]): SystemMessage[] {
  return messages.filter((message): message is SystemMessage => message.role === "system");
}

/** 等 n 轮事件循环：让“谁先完成”由轮数决定，不依赖真实时钟。 */
async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

// ── 9.1 纯的 reducer ────────────────────────────────────────────

test("9.1 reduceAgentState 是纯函数：不改旧状态，每个改变状态的事件都交回一个新对象", () => {
  const question = userMessage("你好", 1);
  const answer = assistantMessage([text("你好！")], "stop", { timestamp: 2 });
  const events: AgentEvent[] = [
    { type: "agent_start" },
    { type: "message_start", message: answer },
    { type: "message_end", message: answer },
    { type: "agent_end", messages: [answer], reason: "stop" },
  ];
  let state = initialAgentState([question]);
  for (const event of events) {
    const before = structuredClone(state);
    const next = reduceAgentState(state, event);
    assert.deepEqual(state, before, `${event.type} 改写了旧状态`);
    assert.notEqual(next, state, `${event.type} 没有交回新对象`);
    state = next;
  }
  assert.deepEqual(state.messages, [question, answer]);
});

test("9.1 assistant 生成中的 partial 放在 streamMessage；message_end 把消息追加进 messages 并清空它", () => {
  const partial = assistantMessage([text("我先")], "stop", { timestamp: 2 });
  const final = assistantMessage([text("我先读 README。")], "stop", { timestamp: 2 });
  let state = reduceAgentState(initialAgentState(), { type: "agent_start" });
  state = reduceAgentState(state, { type: "message_start", message: partial });
  assert.equal(state.streamMessage, partial);
  assert.deepEqual(state.messages, [], "生成中的 partial 不是 transcript 的一部分");
  state = reduceAgentState(state, { type: "message_end", message: final });
  assert.deepEqual(state.messages, [final]);
  assert.equal(state.streamMessage, undefined);
});

test("9.1 工具一开始执行就进 pendingToolCalls，交回结果就出来", () => {
  const ids = { toolName: "read" };
  let state = reduceAgentState(initialAgentState(), { type: "agent_start" });
  state = reduceAgentState(state, { type: "tool_execution_start", toolCallId: "a", args: {}, ...ids });
  state = reduceAgentState(state, { type: "tool_execution_start", toolCallId: "b", args: {}, ...ids });
  assert.deepEqual(state.pendingToolCalls, ["a", "b"]);
  const result: ToolResultMessage = { role: "toolResult", toolCallId: "a", toolName: "read", content: [], isError: false, timestamp: 3 };
  state = reduceAgentState(state, { type: "tool_execution_end", toolCallId: "a", result, isError: false, ...ids });
  assert.deepEqual(state.pendingToolCalls, ["b"]);
});

test("9.1 agent_end 让状态回到 idle，记下停下的原因和错误；下一次 agent_start 清掉它们", () => {
  let state = reduceAgentState(initialAgentState(), { type: "agent_start" });
  state = reduceAgentState(state, { type: "agent_end", messages: [], reason: "error", errorMessage: "模型调用失败。" });
  assert.equal(state.status, "idle");
  assert.equal(state.stopReason, "error");
  assert.equal(state.error, "模型调用失败。");
  state = reduceAgentState(state, { type: "agent_start" });
  assert.equal(state.stopReason, undefined);
  assert.equal(state.error, undefined);
});

test("9.1 agent_start 开始一次干净的运行：上一次没收尾留下的 streamMessage 与 pendingToolCalls 一并清空", () => {
  // 一份没等到 agent_end 的状态（例如从别处拿来的快照）：生成到一半的 partial、一个没交回的工具调用。
  const partial = assistantMessage([text("我先")], "stop", { timestamp: 2 });
  let state = reduceAgentState(initialAgentState(), { type: "agent_start" });
  state = reduceAgentState(state, { type: "message_start", message: partial });
  state = reduceAgentState(state, { type: "tool_execution_start", toolCallId: "a", toolName: "read", args: {} });
  state = reduceAgentState(state, { type: "agent_start" });
  assert.equal(state.status, "running");
  assert.equal(state.streamMessage, undefined, "新运行不该显示上一次生成到一半的 partial");
  assert.deepEqual(state.pendingToolCalls, [], "新运行不该等上一次的工具调用");
});

// ── 9.2 Agent：一次一个运行，先更新状态再通知 ───────────────────

test("9.2 prompt 跑完一次循环：transcript 依次追加用户消息、assistant、工具结果，状态回到 idle", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel(readThenAnswer, clock), tools: [readTool()], ...clock });
  const types: string[] = [];
  agent.subscribe((event) => {
    // 声明工具的 system message 由 9.5 负责，这里只看对话。
    if (event.type === "message_start" || event.type === "message_end") {
      if (event.message.role !== "system") types.push(`${event.type}:${event.message.role}`);
    } else types.push(event.type);
  });
  await agent.prompt("项目叫什么？");
  assert.deepEqual(dialogue(agent.state.messages), ["user", "assistant", "toolResult", "assistant"]);
  assert.deepEqual(
    types.slice(0, 4),
    ["agent_start", "message_start:user", "message_end:user", "turn_start"],
    "这次输入的消息应当在 agent_start 之后走 message_start、message_end 进入状态",
  );
  assert.equal(agent.state.status, "idle");
  assert.equal(agent.state.stopReason, "stop");
  assert.equal(agent.state.error, undefined);
});

test("9.2 运行中再次 prompt 被拒绝，错误说明 Agent 正在运行；第一次运行不受影响", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel(readThenAnswer, clock), tools: [readTool()], ...clock });
  const running = agent.prompt("项目叫什么？");
  const status = agent.state.status;
  const [first, second] = await Promise.allSettled([running, agent.prompt("再问一次")]);
  if (first.status === "rejected") throw first.reason;
  assert.equal(status, "running", "prompt() 一返回，状态就该是 running");
  assert.equal(second.status, "rejected", "运行中的第二次 prompt 应当被拒绝");
  assert.match(String(second.reason), /Agent 正在运行/);
  assert.deepEqual(dialogue(agent.state.messages).filter((role) => role === "user"), ["user"], "被拒绝的 prompt 不该进 transcript");
  assert.equal(agent.state.stopReason, "stop");
});

test("9.2 运行中不能改 transcript：appendMessage 与 replaceMessages 被拒绝，空闲时照常生效", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel([say("一")], clock), ...clock });
  const running = agent.prompt("第一问");
  const append = thrownMessage(() => agent.appendMessage(note));
  const replace = thrownMessage(() => agent.replaceMessages([]));
  const [outcome] = await Promise.allSettled([running]);
  if (outcome.status === "rejected") throw outcome.reason;
  assert.match(append, /运行中不能改 transcript/);
  assert.match(replace, /运行中不能改 transcript/);
  agent.appendMessage(note);
  assert.deepEqual(roles(agent.state.messages), ["user", "assistant", "auditNote"]);
  agent.replaceMessages([userMessage("从头来", 5)]);
  assert.deepEqual(roles(agent.state.messages), ["user"]);
});

test("9.2 监听器被调用时状态已经更新；subscribe 返回的函数退订之后不再收到事件", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel([say("一"), say("二")], clock), ...clock });
  const seen: string[] = [];
  const unsubscribe = agent.subscribe((event, state) => {
    assert.equal(state, agent.state, "监听器拿到的不是最新状态");
    if (event.type === "message_end") seen.push(state.messages.at(-1) === event.message ? "已在状态里" : "还没进状态");
    if (event.type === "agent_end") seen.push(`结束时 ${state.status}`);
  });
  await agent.prompt("第一问");
  assert.deepEqual(seen, ["已在状态里", "已在状态里", "结束时 idle"]);
  unsubscribe();
  await agent.prompt("第二问");
  assert.equal(seen.length, 3, "退订之后还收到了事件");
});

test("9.2 抛异常的监听器被报告，运行和其余监听器都照常继续", { timeout: 2_000 }, async () => {
  const reported: string[] = [];
  const agent = new Agent({
    model: new ScriptedModel(readThenAnswer, clock),
    tools: [readTool()],
    ...clock,
    onListenerError: (error, event) => reported.push(`${event.type}:${(error as Error).message}`),
  });
  agent.subscribe((event) => {
    if (event.type === "turn_end") throw new Error("监听器坏了");
  });
  const types: string[] = [];
  agent.subscribe((event) => types.push(event.type));
  await agent.prompt("项目叫什么？");
  assert.deepEqual(reported, ["turn_end:监听器坏了", "turn_end:监听器坏了"]);
  assert.equal(types.filter((type) => type === "turn_end").length, 2, "第一个监听器抛出后，第二个没收到");
  assert.equal(types.at(-1), "agent_end");
  assert.equal(agent.state.stopReason, "stop");
});

test("9.2 agent_end 的监听器可以立刻开始下一次运行，waitForIdle 等到两次都结束", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel([say("一"), say("二")], clock), ...clock });
  let followUp: Promise<void> | undefined;
  agent.subscribe((event) => {
    if (event.type === "agent_end" && followUp === undefined) followUp = agent.prompt("接着问");
  });
  await agent.prompt("第一问");
  assert.notEqual(followUp, undefined, "agent_end 的监听器没能开始下一次运行");
  await agent.waitForIdle();
  assert.deepEqual(dialogue(agent.state.messages), ["user", "assistant", "user", "assistant"]);
  assert.equal(agent.state.status, "idle");
  await followUp;
});

test("9.2 abort 取消正在进行的运行：以 aborted 结束，状态回到 idle", { timeout: 2_000 }, async () => {
  const waitTool = defineTool({
    name: "wait",
    description: "等到被取消。",
    parameters: s.object({}),
    execute: (_args, context) =>
      new Promise((resolve) => context.signal.addEventListener("abort", () => resolve({ content: [text("被取消")] }))),
  });
  const script: ScriptedTurn[] = [{ kind: "reply", content: [call("w1", "wait", {})], stopReason: "toolUse" }, say("不该问到这里")];
  const model = new ScriptedModel(script, clock);
  const agent = new Agent({ model, tools: [waitTool], ...clock });
  agent.subscribe((event) => {
    if (event.type === "tool_execution_start") agent.abort();
  });
  await agent.prompt("等一等");
  assert.equal(agent.state.stopReason, "aborted");
  assert.equal(agent.state.status, "idle");
  assert.deepEqual(agent.state.pendingToolCalls, []);
  assert.equal(model.requests.length, 1, "取消之后不该再问模型");
});

test("9.2 上一次运行漏出的迟到事件不改当前状态，也不通知订阅者", { timeout: 2_000 }, async () => {
  let leaked: ToolContext["onUpdate"] | undefined;
  const leaky = defineTool({
    name: "read",
    description: "把进度回调留到运行结束以后。",
    parameters: s.object({ path: s.string() }),
    async execute(_args, context) {
      leaked = context.onUpdate;
      return { content: [text("# tiny-pi")] };
    },
  });
  const agent = new Agent({ model: new ScriptedModel([...readThenAnswer, say("第二次")], clock), tools: [leaky], ...clock });
  await agent.prompt("项目叫什么？");
  const late: AgentEvent[] = [];
  agent.subscribe((event) => {
    if (event.type === "tool_execution_update") late.push(event);
  });
  const second = agent.prompt("再说一次");
  const during = agent.state;
  leaked?.({ content: [text("迟到的进度")] });
  assert.equal(agent.state, during, "迟到事件换掉了当前状态");
  await second;
  assert.deepEqual(late, [], "迟到事件被送到了订阅者");
});

test("9.2 事件排队送达：没人交回 Promise 时当场送到；agent_end 的监听器开了下一次运行，每个监听器看到的仍是 start1 end1 start2 end2", { timeout: 2_000 }, async () => {
  const agent = new Agent({ model: new ScriptedModel([say("一"), say("二")], clock), ...clock });
  const seen: Record<string, string[]> = { first: [], second: [] };
  const runs: Record<string, number> = { first: 0, second: 0 };
  const log = (who: string, event: AgentEvent) => {
    if (event.type === "agent_start") runs[who] = (runs[who] ?? 0) + 1;
    if (event.type === "agent_start" || event.type === "agent_end") seen[who]?.push(`${event.type === "agent_start" ? "start" : "end"}${runs[who]}`);
  };
  let followUp: Promise<void> | undefined;
  agent.subscribe((event) => {
    log("first", event);
    if (event.type === "agent_end" && followUp === undefined) followUp = agent.prompt("接着问");
  });
  agent.subscribe((event) => log("second", event));
  const first = agent.prompt("第一问");
  assert.deepEqual(seen.second, ["start1"], "没人交回 Promise 时，事件应当在发生的那一刻同步送到");
  await first;
  await agent.waitForIdle();
  await followUp;
  assert.deepEqual(seen.first, ["start1", "end1", "start2", "end2"]);
  assert.deepEqual(seen.second, ["start1", "end1", "start2", "end2"], "第二个监听器在 end1 之前就看到了 start2");
});

test("9.2 监听器拿到的是冻住的快照：改事件里的消息与结果、改 state.messages 都被拒绝并报告，下一次请求原样不变", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel(readThenAnswer, clock);
  const reported: string[] = [];
  const agent = new Agent({
    model,
    tools: [readTool()],
    ...clock,
    onListenerError: (error, event) => reported.push(`${event.type}:${(error as Error).name}`),
  });
  agent.subscribe((event) => {
    if (event.type === "message_end" && event.message.role === "assistant") event.message.content.push(text("监听器塞进来的话"));
  });
  agent.subscribe((event, state) => {
    if (event.type === "turn_end" && event.toolResults.length > 0) (state.messages as AgentMessage[]).push(userMessage("监听器塞进来的问题", 9));
  });
  agent.subscribe((event) => {
    const block = event.type === "turn_end" ? event.toolResults[0]?.content[0] : undefined;
    if (block !== undefined) block.text = "被监听器改过的结果";
  });
  agent.subscribe((event) => {
    if (event.type === "tool_execution_end") event.result.content.push(text("工具结束时塞进来的"));
    if (event.type === "message_start" && event.message.role === "toolResult") event.message.content.push(text("结果开始时塞进来的"));
    if (event.type === "message_start" && event.message.role === "user") event.message.content.push(text("问题开始时塞进来的"));
  });
  await agent.prompt("项目叫什么？");
  const sent = model.requests[1]?.messages ?? [];
  assert.deepEqual(dialogue(sent), ["user", "assistant", "toolResult"], "监听器往下一次请求里塞了消息");
  const question = sent.find((message) => message.role === "user");
  assert.deepEqual(question?.role === "user" && question.content, [text("项目叫什么？")], "监听器改动了这次输入的用户消息");
  const [answer, result] = sent.slice(-2);
  assert.deepEqual(answer?.role === "assistant" && answer.content, [text("我先读 README。"), readReadme]);
  assert.deepEqual(result?.role === "toolResult" && result.content, [text("# tiny-pi")]);
  assert.deepEqual(reported, [
    "message_start:TypeError",
    "message_end:TypeError",
    "tool_execution_end:TypeError",
    "message_start:TypeError",
    "turn_end:TypeError",
    "turn_end:TypeError",
    "message_end:TypeError",
  ]);
});

test(`9.2 监听器交回的 Promise 先等它再送下一个事件，最多等 ${LISTENER_TIME_LIMIT_MS} ms：永不兑现的、reject 的都被报告，prompt 照常兑现`, { timeout: 3_000 }, async () => {
  const reported: string[] = [];
  const agent = new Agent({
    model: new ScriptedModel([say("一")], clock),
    ...clock,
    onListenerError: (error, event) => reported.push(`${event.type}:${(error as Error).message}`),
  });
  const order: string[] = [];
  agent.subscribe(async (event) => {
    if (event.type === "message_end" && event.message.role === "assistant") {
      await ticks(3);
      order.push("慢监听器写完了 assistant");
    }
    if (event.type === "agent_end") await new Promise(() => {});
  });
  agent.subscribe(async (event) => {
    if (event.type === "turn_end") {
      order.push("turn_end");
      throw new Error("异步监听器坏了");
    }
  });
  const started = Date.now();
  await agent.prompt("第一问");
  assert.deepEqual(order, ["慢监听器写完了 assistant", "turn_end"], "turn_end 应当等前一个事件的 Promise 兑现之后再送");
  assert.equal(reported[0], "turn_end:异步监听器坏了");
  assert.match(reported[1] ?? "没有报告", new RegExp(`^agent_end:监听器交回的 Promise 超过 ${LISTENER_TIME_LIMIT_MS} ms 还没兑现`));
  assert.ok(Date.now() - started >= LISTENER_TIME_LIMIT_MS - 50, "prompt 应当等到时限才放弃永不兑现的监听器");
  assert.equal(agent.state.status, "idle");
});

test("9.2 快照里的一切都冻住：续接时交进来的消息、appendMessage 追加的消息、pendingToolCalls 都改不动", { timeout: 2_000 }, async () => {
  const reported: string[] = [];
  const model = new ScriptedModel(readThenAnswer, clock);
  const agent = new Agent({
    model,
    tools: [readTool()],
    messages: [userMessage("上一段对话的问题", 1)],
    ...clock,
    onListenerError: (error, event) => reported.push(`${event.type}:${(error as Error).name}`),
  });
  const earlier = agent.state.messages[0] as { content: unknown[] };
  assert.throws(() => earlier.content.push(text("改写历史")), TypeError, "续接时交进来的消息没有冻住");
  agent.appendMessage(userMessage("补上的一条", 2));
  const appended = agent.state.messages.at(-1) as { content: unknown[] };
  assert.throws(() => appended.content.push(text("改写历史")), TypeError, "appendMessage 追加的消息没有冻住");
  agent.subscribe((event, state) => {
    if (event.type === "tool_execution_start") (state.pendingToolCalls as string[]).push("监听器编出来的调用");
  });
  await agent.prompt("项目叫什么？");
  assert.deepEqual(reported, ["tool_execution_start:TypeError"], "监听器改得动 state.pendingToolCalls");
  const asked = (model.requests[0]?.messages ?? []).flatMap((message) => (message.role === "user" ? [message.content[0]?.text] : []));
  assert.deepEqual(asked, ["上一段对话的问题", "补上的一条", "项目叫什么？"]);
});

test("9.2 冻一次就够：已经冻住的消息，后面的快照不再走一遍", () => {
  let reads = 0;
  // 一条带 getter 的消息：冻住它时要走一遍它的字段，走一遍 getter 就被调用一次。
  const earlier: AgentMessage = Object.defineProperty(userMessage("上一段对话的问题", 1), "note", {
    enumerable: true,
    get: () => {
      reads += 1;
      return "只该被读一次";
    },
  });
  const agent = new Agent({ model: new ScriptedModel([], clock), messages: [earlier], ...clock });
  assert.equal(reads, 1, "构造时的快照要冻住这条消息");
  for (const words of ["一", "二", "三"]) agent.appendMessage(userMessage(words, 2));
  assert.equal(agent.state.messages.length, 4);
  assert.equal(reads, 1, "已经冻住的消息又被后面的快照走了一遍");
});

test("9.2 还在长的和冻不了的都不冻：工具一边汇报一边往同一个进度对象里写，结果里的字节数组原样交回，运行照常结束", { timeout: 2_000 }, async () => {
  const progress = { content: [text("读了 1 行")] };
  const reader = defineTool({
    name: "read",
    description: "读文件，边读边汇报进度，顺带交回原始字节。",
    parameters: s.object({ path: s.string() }),
    async execute(_args, context) {
      context.onUpdate(progress);
      // 进度归工具所有：交出去以后，工具还在往同一个对象里写。
      progress.content.push(text("读了 2 行"));
      context.onUpdate(progress);
      return { content: [text("# tiny-pi")], details: { bytes: new Uint8Array([35, 32, 116]) } };
    },
  });
  const agent = new Agent({ model: new ScriptedModel(readThenAnswer, clock), tools: [reader], ...clock });
  let updates = 0;
  agent.subscribe((event) => {
    if (event.type === "tool_execution_update") updates += 1;
  });
  await agent.prompt("项目叫什么？");
  assert.equal(agent.state.error, undefined, "冻住了不该冻的东西，运行出错了");
  assert.equal(agent.state.stopReason, "stop");
  assert.equal(updates, 2);
  assert.equal(progress.content.length, 2);
  const result = agent.state.messages.find((message): message is ToolResultMessage => message.role === "toolResult");
  assert.equal(result?.isError, false, "工具往自己的进度对象里写时失败了");
  assert.deepEqual(result?.details, { bytes: new Uint8Array([35, 32, 116]) });
});

test("9.2 maxSteps 原样交给循环：为 1 时模型只被问一次，运行以 max_steps 结束", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel(readThenAnswer, clock);
  const agent = new Agent({ model, tools: [readTool()], maxSteps: 1, ...clock });
  await agent.prompt("项目叫什么？");
  assert.equal(model.requests.length, 1, "maxSteps 没有交给循环");
  assert.equal(agent.state.stopReason, "max_steps");
  assert.equal(agent.state.status, "idle");
});

// ── 9.3 system prompt 属于 transcript ───────────────────────────

test("9.3 构造时的 systemPrompt 成为第一条 system message，agent.systemPrompt 是从 transcript 重放的只读视图", () => {
  const agent = new Agent({ model: new ScriptedModel([], clock), systemPrompt: "你是 tiny-pi。", ...clock });
  assert.deepEqual(agent.state.messages, [{ role: "system", content: "你是 tiny-pi。", timestamp: 1_000 }]);
  assert.equal(agent.systemPrompt, "你是 tiny-pi。");
  assert.throws(() => {
    (agent as unknown as { systemPrompt: string }).systemPrompt = "改掉它";
  }, TypeError);
  assert.equal(agent.systemPrompt, "你是 tiny-pi。");
  assert.throws(
    () => new Agent({ model: new ScriptedModel([], clock), systemPrompt: "x", messages: [userMessage("y", 1)] }),
    { message: /systemPrompt 和 messages 只能给一个/ },
  );
});

test("9.3 改指令只能追加 system message：content 追加、sections 按名字覆盖、null 删除，已发出的前缀一字不改", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([say("一"), say("二"), say("三")], clock);
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", ...clock });
  await agent.prompt([{ role: "system", content: "", sections: { rules: "先读再答。" }, timestamp: 1_100 }, userMessage("第一问", 1_100)]);
  assert.equal(agent.systemPrompt, "你是 tiny-pi。\n\n先读再答。");
  await agent.prompt([
    { role: "system", content: "回答用中文。", sections: { rules: "先读、再想、再答。" }, timestamp: 1_200 },
    userMessage("第二问", 1_200),
  ]);
  assert.equal(agent.systemPrompt, "你是 tiny-pi。\n\n回答用中文。\n\n先读、再想、再答。");
  await agent.prompt([{ role: "system", content: "", sections: { rules: null }, timestamp: 1_300 }, userMessage("第三问", 1_300)]);
  assert.equal(agent.systemPrompt, "你是 tiny-pi。\n\n回答用中文。");

  const [one, two, three] = model.requests.map((request) => request.messages);
  assert.deepEqual(two?.slice(0, one?.length), one, "第二次请求改写了第一次请求发过的前缀");
  assert.deepEqual(three?.slice(0, two?.length), two, "第三次请求改写了第二次请求发过的前缀");
  assert.deepEqual(systemsOf(agent.state.messages)[0], { role: "system", content: "你是 tiny-pi。", timestamp: 1_000 });
});

// ── 9.4 两道闸与应用自己的角色 ──────────────────────────────────

test("9.4 默认 convertToLlm 只留 system / user / assistant / toolResult，auditNote 被悄悄丢掉", { timeout: 2_000 }, async () => {
  const question = userMessage("项目叫什么？", 1_000);
  assert.deepEqual(defaultConvertToLlm([question, note]), [question], "默认 convertToLlm 应当丢掉 auditNote");
  const model = new ScriptedModel([say("tiny-pi")], clock);
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", ...clock });
  await agent.prompt([note, question]);
  assert.deepEqual(roles(agent.state.messages), ["system", "auditNote", "user", "assistant"], "transcript 里仍然留着审计记录");
  assert.deepEqual(roles(model.requests[0]?.messages ?? []), ["system", "user"]);
  assert.equal(agent.state.error, undefined, "丢掉是悄悄的：不报错");
});

test("9.4 用 flatMap 写的 convertToLlm 有意保留、转换或丢掉自定义角色", { timeout: 2_000 }, async () => {
  const warning = asAgentMessage({ role: "auditNote", text: "README 被改过", severity: "warning", timestamp: 1_600 });
  const convertToLlm = (messages: AgentMessage[]): Message[] =>
    messages.flatMap((message): Message[] => {
      const audit = auditNoteOf(message);
      if (audit === undefined) return defaultConvertToLlm([message]);
      if (audit.severity === "info") return [];
      return [userMessage(`[审计] ${audit.text}`, audit.timestamp)];
    });
  const model = new ScriptedModel([say("知道了")], clock);
  const agent = new Agent({ model, convertToLlm, ...clock });
  await agent.prompt([note, warning, userMessage("继续", 1_700)]);
  const sent = model.requests[0]?.messages ?? [];
  assert.deepEqual(sent, [userMessage("[审计] README 被改过", 1_600), userMessage("继续", 1_700)]);
});

test("9.4 每次调用模型之前先 transformContext、再 convertToLlm，顺序固定", { timeout: 2_000 }, async () => {
  const order: string[] = [];
  const agent = new Agent({
    model: new ScriptedModel(readThenAnswer, clock),
    systemPrompt: "你是 tiny-pi。",
    tools: [readTool()],
    ...clock,
    transformContext: (messages, signal) => {
      assert.equal(signal.aborted, false);
      order.push(`transform:${messages.length}`);
      return messages;
    },
    convertToLlm: (messages) => {
      order.push(`convert:${messages.length}`);
      return defaultConvertToLlm(messages);
    },
  });
  await agent.prompt("项目叫什么？");
  assert.deepEqual(order, ["transform:2", "convert:2", "transform:4", "convert:4"]);
});

test("9.4 两道闸都不写回 transcript：在副本上 push、裁剪、注入，都只影响这一次请求", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([...readThenAnswer, say("二")], clock);
  const seenByTransform: number[] = [];
  const agent = new Agent({
    model,
    systemPrompt: "你是 tiny-pi。",
    tools: [readTool()],
    ...clock,
    // 往副本里乱塞一条，再只留 system 和最后一条，并注入“现在时间”：都只为这一次请求。
    transformContext: (messages) => {
      seenByTransform.push(messages.length);
      const last = messages.at(-1);
      messages.push(userMessage("被 push 进副本的消息", 9));
      return [...messages.slice(0, 1), userMessage("现在是 10:00", 5), ...(last ? [last] : [])];
    },
  });
  await agent.prompt("第一问");
  await agent.prompt("第二问");
  assert.deepEqual(seenByTransform, [2, 4, 6], "transformContext 每次拿到的都该是完整而干净的 transcript");
  assert.deepEqual(roles(agent.state.messages), ["system", "user", "assistant", "toolResult", "assistant", "user", "assistant"]);
  assert.deepEqual(
    (model.requests[2]?.messages ?? []).map((message) => (message.role === "user" ? message.content[0]?.text : message.role)),
    ["system", "现在是 10:00", "第二问"],
  );
  // 直接交给 buildLlmMessages 的数组也一样：闸在副本上 push，交进去的数组一条不多。
  const history: AgentMessage[] = [userMessage("第一问", 1)];
  const pushing = (messages: AgentMessage[]) => {
    messages.push(userMessage("被 push 进副本的消息", 2));
    return messages;
  };
  const sent = await buildLlmMessages(history, { transformContext: pushing }, new AbortController().signal);
  assert.equal(sent?.length, 2, "这一次请求看得到闸塞进来的消息");
  assert.deepEqual(dialogue(history), ["user"], "交给 buildLlmMessages 的 transcript 不该被闸改动");
});

test("9.4 闸抛出异常时，这次运行以 error 结束：状态回到 idle，错误写明原因，prompt 照常兑现", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([say("不会被问到")], clock);
  const agent = new Agent({
    model,
    ...clock,
    transformContext: () => {
      throw new Error("裁剪失败");
    },
  });
  await agent.prompt("第一问");
  assert.equal(agent.state.status, "idle");
  assert.equal(agent.state.stopReason, "error");
  assert.equal(agent.state.error, "运行失败：裁剪失败");
  assert.equal(model.requests.length, 0, "闸失败时不该调用模型");
  assert.deepEqual(dialogue(agent.state.messages), ["user"]);
});

test("9.4 闸永不返回也挂不住运行：transformContext 或 convertToLlm 卡住时 abort()，这次运行以 aborted 结束，不调用模型", { timeout: 2_000 }, async () => {
  for (const gate of ["transformContext", "convertToLlm"] as const) {
    const model = new ScriptedModel([say("不会被问到")], clock);
    let entered: () => void = () => {};
    const inGate = new Promise<void>((resolve) => (entered = resolve));
    const stuck = () => {
      entered();
      return new Promise<never>(() => {});
    };
    const agent = new Agent({ model, ...clock, ...(gate === "transformContext" ? { transformContext: stuck } : { convertToLlm: stuck }) });
    const running = agent.prompt("第一问");
    await inGate;
    agent.abort();
    await running;
    assert.equal(agent.state.stopReason, "aborted", `${gate} 卡住时 abort() 应当以 aborted 结束`);
    assert.equal(agent.state.status, "idle");
    assert.equal(model.requests.length, 0, "闸没有交回就不该调用模型");
  }
});

test("9.4 没过滤的自定义角色到了第 05 章的适配器：请求不发出，错误说出是哪个角色", () => {
  const unfiltered = [userMessage("你好", 1), note] as unknown as Message[];
  assert.throws(() => toChatRequest({ messages: unfiltered }, "gpt-test"), {
    message: /消息角色 auditNote 不是模型认识的角色/,
  });
});

test("9.4 Agent 经过真实适配器发出的请求体里没有 auditNote，运行正常结束", { timeout: 2_000 }, async () => {
  const bodies: string[] = [];
  const reply = 'data: {"choices":[{"delta":{"content":"好的"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
  const model = new OpenAiCompatibleModel({
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "sk-test",
    model: "gpt-test",
    fetch: async (_url, init) => {
      bodies.push(String(init?.body));
      return new Response(reply, { status: 200, headers: { "content-type": "text/event-stream" } });
    },
  });
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", ...clock });
  await agent.prompt([note, userMessage("你好", 1_000)]);
  assert.equal(agent.state.error, undefined);
  assert.equal(bodies.length, 1);
  const sent = JSON.parse(bodies[0] ?? "{}") as { messages: { role: string }[] };
  assert.deepEqual(sent.messages.map((message) => message.role), ["system", "user"]);
});

// ── 9.5 工具集是 transcript 里的差量 ────────────────────────────

test("9.5 工具集变了，下一次请求前追加一条声明变化的 system message；没变就一条也不加", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([say("一"), say("二"), say("三")], clock);
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", tools: [readTool()], ...clock });
  assert.deepEqual(currentTools(agent.state.messages).map((tool) => tool.name), ["read"], "构造时的工具写在第一条 system message 里");
  await agent.prompt("第一问");
  assert.equal(systemsOf(agent.state.messages).length, 1, "工具没变，不该多出 system message");

  agent.setTools([lsTool()]);
  assert.equal(systemsOf(agent.state.messages).length, 1, "setTools 不该立刻改 transcript");
  await agent.prompt("第二问");
  const change = systemsOf(agent.state.messages)[1];
  assert.deepEqual(change?.toolsAdded?.map((tool) => tool.name), ["ls"]);
  assert.deepEqual(change?.toolsRemoved, [{ name: "read" }]);
  assert.deepEqual(roles(agent.state.messages).slice(-3), ["system", "user", "assistant"]);
  assert.deepEqual(currentTools(model.requests[1]?.messages ?? []).map((tool) => tool.name), ["ls"]);

  agent.setTools([lsTool("列出一个目录，跳过隐藏文件。")]);
  await agent.prompt("第三问");
  const redefined = systemsOf(agent.state.messages)[2];
  assert.deepEqual(redefined?.toolsAdded?.map((tool) => tool.description), ["列出一个目录，跳过隐藏文件。"], "同名工具换了说明也是变化");
  assert.equal(redefined?.toolsRemoved, undefined);
  assert.deepEqual(currentTools(agent.state.messages).map((tool) => tool.description), ["列出一个目录，跳过隐藏文件。"]);
});

test("9.5 已经有一条等待发送的 system 补丁时，工具变化并进它，不另起一条", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([say("一")], clock);
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", tools: [readTool()], ...clock });
  agent.setTools([readTool(), lsTool()]);
  await agent.prompt([{ role: "system", content: "", sections: { skills: "<skills>ls</skills>" }, timestamp: 1_100 }, userMessage("看看目录", 1_100)]);
  const systems = systemsOf(agent.state.messages);
  assert.equal(systems.length, 2, "补丁和工具变化应当是同一条 system message");
  assert.deepEqual(systems[1]?.sections, { skills: "<skills>ls</skills>" });
  assert.deepEqual(systems[1]?.toolsAdded?.map((tool) => tool.name), ["ls"]);
  assert.deepEqual(currentSystemMessage(agent.state.messages)?.toolsAdded?.map((tool) => tool.name), ["read", "ls"]);
});

test("9.5 第 05 章的适配器发送从 transcript 重放出的工具集", () => {
  const read = { name: "read", description: "读文件。", parameters: { type: "object" } };
  const ls = { name: "ls", description: "列目录。", parameters: { type: "object" } };
  const messages: Message[] = [
    { role: "system", content: "你是 tiny-pi。", toolsAdded: [read], timestamp: 1 },
    userMessage("你好", 2),
    { role: "system", content: "", toolsAdded: [ls], toolsRemoved: [{ name: "read" }], timestamp: 3 },
  ];
  const request = toChatRequest({ messages, tools: [read] }, "gpt-test");
  assert.deepEqual(request.tools?.map((tool) => tool.function.name), ["ls"], "适配器应当发送从 transcript 重放出的工具集");
  assert.deepEqual(request.messages.map((message) => message.role), ["system", "user"]);

  // 只写了指令、从没声明过工具的 transcript（例如第 05 章自己的测试）：照旧发 context.tools。
  const plain: Message[] = [{ role: "system", content: "你是 tiny-pi。", timestamp: 1 }, userMessage("你好", 2)];
  const fallback = toChatRequest({ messages: plain, tools: [read] }, "gpt-test");
  assert.deepEqual(fallback.tools?.map((tool) => tool.function.name), ["read"], "transcript 没声明过工具时应当照旧发送 context.tools");
  // 只用 toolsAdded 声明过，也算声明过。
  const addedOnly: Message[] = [{ role: "system", content: "你是 tiny-pi。", toolsAdded: [ls], timestamp: 1 }, userMessage("你好", 2)];
  const declared = toChatRequest({ messages: addedOnly, tools: [read] }, "gpt-test");
  assert.deepEqual(declared.tools?.map((tool) => tool.function.name), ["ls"], "只有 toolsAdded 的 transcript 也声明了工具");
});

test("9.5 补丁自己声明的工具也要和 Agent 的对齐：变化并进最后一条补丁，前面的补丁原样留下；只撤下工具时不写空的 toolsAdded", { timeout: 2_000 }, async () => {
  const find = { name: "find", description: "按名字找文件。", parameters: { type: "object" } };
  const grep = { name: "grep", description: "在文件里搜索。", parameters: { type: "object" } };
  const model = new ScriptedModel([say("一"), say("二")], clock);
  const agent = new Agent({ model, systemPrompt: "你是 tiny-pi。", tools: [readTool()], ...clock });
  agent.setTools([readTool(), lsTool()]);
  const first: SystemMessage = { role: "system", content: "回答用中文。", toolsAdded: [find], timestamp: 1_100 };
  const last: SystemMessage = { role: "system", content: "", sections: { skills: "<skills>grep</skills>" }, toolsAdded: [grep], timestamp: 1_100 };
  await agent.prompt([first, last, userMessage("看看目录", 1_100)]);
  const systems = systemsOf(agent.state.messages);
  assert.equal(systems.length, 3, "两条补丁都该留下，工具变化不另起一条");
  assert.deepEqual(systems[1], first, "前面那条补丁应当原样留下");
  assert.deepEqual(systems[2]?.sections, { skills: "<skills>grep</skills>" });
  assert.deepEqual(systems[2]?.toolsAdded?.map((tool) => tool.name), ["ls"], "补丁自己加入、又被撤下的 grep 应当从它的 toolsAdded 里拿掉");
  assert.deepEqual(systems[2]?.toolsRemoved, [{ name: "find" }, { name: "grep" }]);
  assert.deepEqual(currentTools(agent.state.messages).map((tool) => tool.name), ["read", "ls"]);

  agent.setTools([readTool()]);
  await agent.prompt("再问一次");
  assert.deepEqual(
    systemsOf(agent.state.messages)[3],
    { role: "system", content: "", toolsRemoved: [{ name: "ls" }], timestamp: 1_000 },
    "只撤下工具时，这条 system message 不写空的 toolsAdded",
  );
});

test("9.5 currentTools 按最后一次声明排序：重新声明的工具排到末尾，用新的定义", () => {
  const read = { name: "read", description: "读文件。", parameters: { type: "object" } };
  const ls = { name: "ls", description: "列目录。", parameters: { type: "object" } };
  const longerRead = { ...read, description: "读文件，最多 200 行。" };
  const messages: AgentMessage[] = [
    { role: "system", content: "你是 tiny-pi。", toolsAdded: [read, ls], timestamp: 1 },
    { role: "system", content: "", toolsAdded: [longerRead], timestamp: 2 },
  ];
  assert.deepEqual(currentTools(messages), [ls, longerRead], "重新声明的 read 应当排到末尾，用新的定义");
});

// 类型层面的小检查：AgentState 的字段都是只读的。
export type ReadonlyCheck = AgentState["messages"] extends readonly AgentMessage[] ? true : never;
