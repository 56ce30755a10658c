import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { PassThrough, Writable } from "node:stream";
import test from "node:test";

import { runAgentLoop, type AgentEvent } from "../src/agent-loop.js";
import { InteractiveMode } from "../src/cli/interactive-mode.js";
import { Output } from "../src/cli/output.js";
import { formatEvalTable } from "../src/eval/report.js";
import { routeRetried, ROUTING_TASKS } from "../src/eval/routing.js";
import { loadCatalogFile, parseCatalogFile } from "../src/models/catalog-file.js";
import { estimateContext } from "../src/compaction.js";
import type { SessionEntry } from "../src/session-entries.js";
import { runEvalTask } from "../src/eval/run.js";
import { VISIBLE_TASKS } from "../src/eval/tasks.js";
import { ModelCatalog, type PhysicalModelSpec, type RouteRequest } from "../src/models/catalog.js";
import { modelCommand } from "../src/models/model-command.js";
import { normalizeForTarget, targetToolCallId, TOOL_CALL_ID } from "../src/models/normalize.js";
import { CatalogModel, clampThinking, directModel, isRetryable } from "../src/models/routed-model.js";
import { ROUTE_ATTEMPT, routeOnce, routerStateOn, selectionOn, selectModel, sessionLedger, type RouteAttempt, type RouteLedger } from "../src/models/routing.js";
import { OpenAiCompatibleModel } from "../src/openai-compatible.js";
import { createRuntime } from "../src/runtime.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { s } from "../src/schema.js";
import { JsonlSessionStore } from "../src/session-store.js";
import { SessionTree } from "../src/session-tree.js";
import { defineTool, ToolRegistry } from "../src/tools.js";
import { assistantMessage, text, userMessage, type AssistantMessage, type Message, type ToolResultMessage } from "../src/types.js";

// ── 回环服务器：与第 05 章的测试一样，真正的 HTTP，只在 127.0.0.1 上 ──

type Reply = (res: ServerResponse, req: IncomingMessage) => void;
interface Loopback {
  baseUrl: string;
  bodies: Record<string, unknown>[];
  raw: string[];
  authorization: (string | undefined)[];
}

function sse(...chunks: unknown[]): string {
  return chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n";
}
const says = (words: string): Reply => (res) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(sse({ choices: [{ delta: { content: words } }] }, { choices: [{ delta: {}, finish_reason: "stop" }] }));
};
const callsTool = (id: string, name: string): Reply => (res) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(sse({ choices: [{ delta: { tool_calls: [{ index: 0, id, function: { name, arguments: "{}" } }] } }] }, { choices: [{ delta: {}, finish_reason: "tool_calls" }] }));
};
const status = (code: number): Reply => (res) => void res.writeHead(code).end(`status ${code}`);
const reset: Reply = (res) => res.socket?.destroy();
const badChunk: Reply = (res) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end('data: {"choices":[{"delta":{"content":"半句"}}]}\n\ndata: {"choices": [oops\n\n');
};

async function withLoopbacks<T>(replies: Reply[][], body: (servers: Loopback[]) => Promise<T>): Promise<T> {
  const servers = replies.map((script) => {
    const seen: Loopback = { baseUrl: "", bodies: [], raw: [], authorization: [] };
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        seen.raw.push(raw);
        seen.authorization.push(req.headers.authorization);
        seen.bodies.push(JSON.parse(raw) as Record<string, unknown>);
        (script[seen.raw.length - 1] ?? status(500))(res, req);
      });
    });
    return { server, seen };
  });
  for (const { server, seen } of servers) {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    seen.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  }
  try {
    return await body(servers.map(({ seen }) => seen));
  } finally {
    for (const { server } of servers) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }
}

function httpModel(provider: string, id: string, baseUrl: string, extra: Partial<PhysicalModelSpec> = {}): PhysicalModelSpec {
  return { provider, id, create: () => new OpenAiCompatibleModel({ baseUrl, apiKey: "", model: id, idleTimeoutMs: 2_000 }), ...extra };
}

function memoryLedger(selected?: string): RouteLedger & { attempts: RouteAttempt[]; states: Map<string, unknown> } {
  const attempts: RouteAttempt[] = [];
  const states = new Map<string, unknown>();
  return {
    attempts,
    states,
    selection: () => selected,
    select: (name) => void (selected = name),
    routerState: (name) => states.get(name),
    saveRouterState: (name, state) => void states.set(name, state),
    recordAttempt: (entry) => void attempts.push(entry),
  };
}

const question = userMessage("你好", 1);

async function replyOf(model: CatalogModel, messages: Message[], options = {}): Promise<AssistantMessage> {
  return model.stream({ messages }, options).result();
}

// ── 18.1 目录 ───────────────────────────────────────────────────

test("18.1 目录分开物理模型与虚拟模型：两个 Provider 可以提供同一个 id，裸 id 有歧义时报错并要求 provider/id", () => {
  const catalog = new ModelCatalog();
  catalog.addPhysical({ provider: "alpha", id: "m1", create: () => assert.fail("不该造出模型") });
  catalog.addPhysical({ provider: "beta", id: "m1", create: () => assert.fail("不该造出模型") });
  catalog.addPhysical({ provider: "beta", id: "m2", create: () => assert.fail("不该造出模型") });
  catalog.addVirtual({ name: "auto", route: () => ({ models: "m2" }) });

  assert.equal(catalog.physicalModel("alpha/m1").provider, "alpha");
  assert.equal(catalog.physicalModel("beta/m1").key, "beta/m1");
  assert.equal(catalog.physicalModel("m2").key, "beta/m2", "只有一个 Provider 提供的 id 可以只写 id");
  assert.equal(catalog.lookup("auto").kind, "virtual");
  assert.throws(() => catalog.lookup("m1"), /Model id m1 is ambiguous: served by alpha\/m1, beta\/m1; write provider\/id\./);
  assert.throws(() => catalog.lookup("gamma/m9"), /Unknown model gamma\/m9: not in the catalog\./);
  assert.throws(() => catalog.physicalModel("auto"), /Model auto is virtual: a route must name a physical model\./);
  assert.throws(() => catalog.addPhysical({ provider: "alpha", id: "m1", create: () => assert.fail() }), /Model alpha\/m1 is already in the catalog\./);
  assert.throws(() => catalog.addVirtual({ name: "beta/m2", route: () => ({ models: "m2" }) }), /Model beta\/m2 is already in the catalog\./);
  assert.deepEqual(catalog.names(), ["alpha/m1", "beta/m1", "beta/m2", "auto"]);
});

// ── 18.2 路由与分支状态 ─────────────────────────────────────────

test("18.2 route() 拿到 reason、上一次的回复、分支状态与消息；选到虚拟模型、未知的名字、抛出的路由器都是一句错误", async () => {
  const catalog = new ModelCatalog();
  catalog.addPhysical({ provider: "alpha", id: "m1", create: () => assert.fail() });
  catalog.addPhysical({ provider: "beta", id: "m2", create: () => assert.fail() });
  catalog.addVirtual({ name: "other", route: () => ({ models: "m1" }) });
  const seen: RouteRequest[] = [];
  const ok = await routeOnce(catalog, { name: "auto", route: (request) => (seen.push(request), { models: ["m1", "beta/m2"], state: { turns: 1 } }) }, { reason: "user", messages: [question], state: undefined });
  assert.deepEqual(ok.ok && ok.targets.map((target) => target.key), ["alpha/m1", "beta/m2"]);
  assert.deepEqual(ok.ok && ok.state, { turns: 1 });
  assert.equal(seen[0]!.reason, "user");
  const kept = await routeOnce(catalog, { name: "auto", route: () => ({ models: "m1" }) }, { reason: "continuation", messages: [question], state: 5 });
  assert.equal(kept.ok && kept.stateChanged, false, "没交回 state 就不写");
  const blank = await routeOnce(catalog, { name: "auto", route: () => ({ models: "m1", state: undefined }) }, { reason: "user", messages: [question], state: 5 });
  assert.equal(blank.ok && blank.stateChanged, false, "state 写成 undefined 也不写");

  const bad = async (route: () => never | { models: string | string[] }) => routeOnce(catalog, { name: "auto", route }, { reason: "user", messages: [], state: undefined });
  assert.deepEqual(await bad(() => ({ models: "other" })), { ok: false, message: "Router auto chose other: Model other is virtual: a route must name a physical model." });
  assert.deepEqual(await bad(() => ({ models: ["m1", "nope"] })), { ok: false, message: "Router auto chose nope: Unknown model nope: not in the catalog." });
  assert.deepEqual(await bad(() => ({ models: [] })), { ok: false, message: "Router auto chose no model." });
  assert.deepEqual(await bad(() => { throw new Error("boom"); }), { ok: false, message: "Router auto failed: boom" });

});

test("18.2 选择与路由器状态是分支上的条目：续上会话时读回来，另一个分支是另一份", async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-18-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, "s.jsonl");
  const catalog = new ModelCatalog();
  catalog.addPhysical({ provider: "alpha", id: "m1", create: () => assert.fail() });
  catalog.addVirtual({ name: "auto", route: () => ({ models: "m1" }) });

  const tree = await SessionTree.open(new JsonlSessionStore(file));
  const root = tree.appendMessage(question);
  selectModel(tree, catalog, "auto");
  const ledger = sessionLedger(tree);
  ledger.saveRouterState("auto", { turns: 1 });
  const mainLeaf = tree.getLeafId()!;
  tree.branch(root.id);
  assert.equal(ledger.selection(), undefined, "分叉之后看不到另一个分支的选择");
  assert.equal(ledger.routerState("auto"), undefined);
  selectModel(tree, catalog, "auto");
  ledger.saveRouterState("auto", { turns: 6 });
  selectModel(tree, catalog, "m1");
  ledger.saveRouterState("auto", { turns: 7 });
  assert.throws(() => selectModel(tree, catalog, "ghost"), /Unknown model ghost/);
  await tree.flush();

  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.equal(selectionOn(reopened.getBranch()), "m1", "续上的是最后写下的那个分支");
  assert.deepEqual(routerStateOn(reopened.getBranch(), "auto"), { turns: 7 });
  assert.equal(selectionOn(reopened.getBranch(mainLeaf)), "auto");
  assert.deepEqual(routerStateOn(reopened.getBranch(mainLeaf), "auto"), { turns: 1 });
  assert.equal(routerStateOn(reopened.getBranch(mainLeaf), "other"), undefined, "状态按虚拟模型的名字分开");
  assert.deepEqual(reopened.buildSessionContext(), [question], "元数据条目不进模型的上下文");
});

// ── 18.3 历史归一化 ─────────────────────────────────────────────

const foreignCall = "fc_1|rs:SIGALPHA/7";

function foreignTurn(): [AssistantMessage, ToolResultMessage] {
  const reply = assistantMessage([text("先看看"), { type: "toolCall", id: foreignCall, name: "echo", arguments: {}, rawArguments: "{}" }], "toolUse", { provider: "alpha", model: "m1", timestamp: 2 });
  reply.signature = "SIGALPHA-thinking";
  const result: ToolResultMessage = { role: "toolResult", toolCallId: foreignCall, toolName: "echo", content: [text("ok")], isError: false, timestamp: 3 };
  return [reply, result];
}

test("18.3 别的模型说的消息去掉 signature 与 rawArguments；id 换成目标的语法，结果跟着换；目标自己的消息原样留下", () => {
  const [reply, result] = foreignTurn();
  const own = assistantMessage([{ type: "toolCall", id: "call_own", name: "echo", arguments: {}, rawArguments: "{}" }], "toolUse", { provider: "beta", model: "m2", timestamp: 4 });
  own.signature = "SIGBETA";
  const ownResult: ToolResultMessage = { ...result, toolCallId: "call_own", timestamp: 5 };
  const input: Message[] = [question, reply, result, own, ownResult];
  const before = structuredClone(input);

  const out = normalizeForTarget(input, { provider: "beta", id: "m2" });
  assert.deepEqual(input, before, "输入一个字节也不变");
  const moved = out[1] as AssistantMessage;
  assert.equal(moved.signature, undefined);
  const call = moved.content[1];
  assert.ok(call?.type === "toolCall");
  assert.match(call.id, TOOL_CALL_ID);
  assert.equal(call.rawArguments, undefined);
  assert.equal((out[2] as ToolResultMessage).toolCallId, call.id, "结果换成同一个 id");
  assert.equal(out[0], input[0]);
  assert.equal(out[3], own, "目标自己说的消息是同一个对象");
  assert.equal(out[4], ownResult);

  // 只有文字的外人消息也要去掉签名。
  const plain = assistantMessage([text("想好了")], "stop", { provider: "alpha", model: "m1", timestamp: 6 });
  plain.signature = "SIGPLAIN";
  const plainOut = normalizeForTarget([plain], { provider: "beta", id: "m2" })[0] as AssistantMessage;
  assert.equal(plainOut.signature, undefined);
  assert.equal(plain.signature, "SIGPLAIN");

  // 同一模型名、另一个 Provider 也是外人。
  const sameIdOtherProvider = normalizeForTarget([reply], { provider: "gamma", id: "m1" })[0] as AssistantMessage;
  assert.equal(sameIdOtherProvider.signature, undefined);
  assert.equal((normalizeForTarget([reply], { provider: "alpha", id: "m1" })[0] as AssistantMessage).signature, "SIGALPHA-thinking");

  // 换 id：合法的不动；只换字符会撞车的两个 id 得到两个不同的结果；太长的截到 64 个字符以内。
  assert.equal(targetToolCallId("call_ok-1"), "call_ok-1");
  assert.notEqual(targetToolCallId("a:b"), targetToolCallId("a;b"), "只换字符会撞车的两个 id 得到不同的结果");
  assert.match(targetToolCallId("a|b"), /^a_[0-9a-f]{8}$/, "| 之后 Provider 自己的那段去掉");
  assert.match(targetToolCallId("a:b"), /^a_b_[0-9a-f]{8}$/);
  const long = "x".repeat(80);
  assert.match(targetToolCallId(long), TOOL_CALL_ID);
  assert.notEqual(targetToolCallId(long), targetToolCallId(`${long}y`));
});

test("18.4 真实 HTTP：路由从 alpha 换到 beta 之后，第二个请求的正文点名 beta 的模型，不带 alpha 的 id 与签名，调用与结果照样配对", { timeout: 5_000 }, async () => {
  await withLoopbacks([[callsTool(foreignCall, "echo")], [says("好了")]], async ([alpha, beta]) => {
    const catalog = new ModelCatalog();
    catalog.addPhysical(httpModel("alpha", "m1", alpha!.baseUrl));
    catalog.addPhysical(httpModel("beta", "m2", beta!.baseUrl));
    catalog.addVirtual({ name: "auto", route: ({ reason }) => ({ models: reason === "user" ? "alpha/m1" : "beta/m2" }) });
    const model = new CatalogModel({ catalog, ledger: memoryLedger("auto"), defaultModel: "auto" });
    const echo = defineTool({ name: "echo", description: "Echo.", parameters: s.object({}), execute: async () => ({ content: [text("ok")] }) });
    const updates: string[] = [];
    const result = await runAgentLoop({ model, messages: [question], tools: new ToolRegistry([echo]), onEvent: (event) => {
      if (event.type === "message_update") updates.push(`${event.message.provider}:${event.event.type}`);
    } });

    assert.equal(result.reason, "stop");
    assert.ok(updates.includes("beta:text_delta"), "路由过的回复照样一段段送出，盖着目录的 provider");
    const first = result.messages[0] as AssistantMessage;
    assert.deepEqual([first.provider, first.model], ["alpha", "m1"], "回复记在目录里的 provider 与 id 名下");
    assert.equal(alpha!.bodies[0]!.model, "m1");
    assert.equal(beta!.bodies.length, 1);
    const second = beta!.bodies[0]!;
    assert.equal(second.model, "m2");
    assert.ok(!beta!.raw[0]!.includes("SIGALPHA"), "第二个请求里没有 alpha 的签名与 id");
    const messages = second.messages as { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[];
    const sentCall = messages.find((message) => message.role === "assistant")!.tool_calls![0]!.id;
    assert.match(sentCall, TOOL_CALL_ID);
    assert.equal(messages.find((message) => message.role === "tool")!.tool_call_id, sentCall);
    // transcript 本身没有被改写：alpha 的 id 原样留在会话里。
    assert.equal((first.content[0] as { id: string }).id, foreignCall);
  });
});

// ── 18.4 备选、思考档位、上下文窗口、穿过循环 ───────────────────

test("18.4 503 之后以 reason retry 在下一个物理模型上重试一次，尝试记进元数据；连接被重置也重试", { timeout: 5_000 }, async () => {
  await withLoopbacks([[status(503), reset], [says("备用的回答"), says("又一次")]], async ([primary, backup]) => {
    const catalog = new ModelCatalog();
    catalog.addPhysical(httpModel("alpha", "m1", primary!.baseUrl));
    catalog.addPhysical(httpModel("beta", "m1", backup!.baseUrl));
    const reasons: string[] = [];
    let failed: AssistantMessage | undefined;
    catalog.addVirtual({ name: "auto", route: (request) => {
      reasons.push(request.reason);
      if (request.failed !== undefined) failed = request.failed;
      return { models: ["alpha/m1", "beta/m1"] };
    } });
    const ledger = memoryLedger("auto");
    const model = new CatalogModel({ catalog, ledger, defaultModel: "auto" });
    const reply = await replyOf(model, [question]);
    assert.equal(reply.stopReason, "stop");
    assert.deepEqual([reply.provider, reply.model], ["beta", "m1"]);
    assert.deepEqual(reasons, ["user", "retry"]);
    assert.match(failed?.errorMessage ?? "", /^HTTP 503/);
    assert.deepEqual(ledger.attempts.map(({ reason, target, outcome }) => [reason, target, outcome]), [["user", "alpha/m1", "retried"], ["retry", "beta/m1", "ok"]]);
    assert.match(ledger.attempts[0]!.error ?? "", /^HTTP 503/);

    const again = await replyOf(model, [question]);
    assert.equal(again.stopReason, "stop", "连接被重置也换下一个重试");
    assert.equal(primary!.bodies.length, 2);
    assert.equal(backup!.bodies.length, 2);
  });
});

test("18.4 不可重试的失败不重试：401 与坏掉的 schema 只发一次请求；重试也只有一次", { timeout: 5_000 }, async () => {
  await withLoopbacks([[status(401), badChunk, status(500)], [status(502)]], async ([primary, backup]) => {
    const catalog = new ModelCatalog();
    catalog.addPhysical(httpModel("alpha", "m1", primary!.baseUrl));
    catalog.addPhysical(httpModel("beta", "m1", backup!.baseUrl));
    catalog.addVirtual({ name: "auto", route: () => ({ models: ["alpha/m1", "beta/m1"] }) });
    const ledger = memoryLedger("auto");
    const model = new CatalogModel({ catalog, ledger, defaultModel: "auto" });
    const unauthorized = await replyOf(model, [question]);
    assert.match(unauthorized.errorMessage ?? "", /^HTTP 401/);
    const broken = await replyOf(model, [question]);
    assert.equal(broken.stopReason, "error");
    assert.deepEqual(broken.content, [text("半句")]);
    assert.equal(backup!.bodies.length, 0, "401 与 schema 错误都没有换模型重试");
    const twice = await replyOf(model, [question]);
    assert.match(twice.errorMessage ?? "", /^HTTP 502/, "备用的也失败时交回它的失败，不再试第三次");
    assert.equal(primary!.bodies.length, 3);
    assert.equal(backup!.bodies.length, 1);
    assert.deepEqual(ledger.attempts.map(({ outcome }) => outcome), ["failed", "failed", "retried", "failed"]);

    // 只有一个候选：失败了也没有别的可换，交回的就是那次失败。
    catalog.addVirtual({ name: "single", route: () => ({ models: "alpha/m1" }) });
    const single = await replyOf(new CatalogModel({ catalog, ledger: memoryLedger("single"), defaultModel: "auto" }), [question]);
    assert.match(single.errorMessage ?? "", /^HTTP 500/);

    // 调用方取消：终态是 aborted，不重试，也不发请求。
    const controller = new AbortController();
    controller.abort();
    const events = [];
    for await (const event of model.stream({ messages: [question] }, { signal: controller.signal })) events.push(event);
    const last = events[events.length - 1];
    assert.ok(last?.type === "error" && last.reason === "aborted");
    assert.equal(primary!.bodies.length, 4);
  });
  assert.equal(isRetryable(assistantMessage([], "error", { errorMessage: "HTTP 429：slow down" })), true);
  assert.equal(isRetryable(assistantMessage([], "error", { errorMessage: "HTTP 404：nope" })), false);
  assert.equal(isRetryable(assistantMessage([], "aborted", { errorMessage: "fetch failed" })), false);
});

test("18.4 思考档位夹到目标支持的范围；上下文窗口放不下的目标在发送之前就被拒绝", { timeout: 5_000 }, async () => {
  assert.equal(clampThinking("high", ["off", "low", "medium"]), "medium");
  assert.equal(clampThinking("medium", ["off", "high"]), "off");
  assert.equal(clampThinking("low", ["medium", "high"]), "medium");
  assert.equal(clampThinking("high"), "off");
  assert.equal(clampThinking("low", ["off", "low", "high"]), "low");

  await withLoopbacks([[says("小的")], [says("大的")]], async ([small, large]) => {
    const catalog = new ModelCatalog();
    const thinkingSeen: unknown[] = [];
    const spy = (spec: PhysicalModelSpec): PhysicalModelSpec => ({ ...spec, create: () => {
      const inner = spec.create();
      return { provider: inner.provider, id: inner.id, stream: (context, options) => (thinkingSeen.push(options?.thinking), inner.stream(context, options)) };
    } });
    catalog.addPhysical(spy(httpModel("alpha", "small", small!.baseUrl, { contextWindow: 50, thinking: ["off", "low"] })));
    catalog.addPhysical(spy(httpModel("beta", "large", large!.baseUrl, { contextWindow: 100_000, thinking: ["off", "low", "medium"] })));
    catalog.addVirtual({ name: "auto", route: () => ({ models: ["alpha/small", "beta/large"] }) });
    const ledger = memoryLedger("auto");
    const model = new CatalogModel({ catalog, ledger, defaultModel: "auto", thinking: "high" });

    const short = await replyOf(model, [question]);
    assert.equal(short.model, "small");
    const long = await replyOf(model, [userMessage("很长的问题".repeat(100), 1)]);
    assert.equal(long.model, "large");
    assert.equal(small!.bodies.length, 1, "放不下的请求一个字节也没发给小模型");
    assert.deepEqual(thinkingSeen, ["low", "medium"]);
    assert.deepEqual(ledger.attempts.map(({ target, outcome }) => [target, outcome]), [["alpha/small", "ok"], ["alpha/small", "refused"], ["beta/large", "ok"]]);

    const exact = estimateContext([question]).total;
    catalog.addPhysical({ provider: "gamma", id: "exact", contextWindow: exact, create: () => new ScriptedModel([{ kind: "reply", content: [text("刚好")], stopReason: "stop" }]) });
    catalog.addVirtual({ name: "fit", route: () => ({ models: "gamma/exact" }) });
    assert.equal((await replyOf(new CatalogModel({ catalog, ledger: memoryLedger("fit"), defaultModel: "auto" }), [question])).stopReason, "stop", "窗口恰好等于估算也放得下");

    catalog.addVirtual({ name: "tiny", route: () => ({ models: "alpha/small" }) });
    const refused = await replyOf(new CatalogModel({ catalog, ledger: memoryLedger("tiny"), defaultModel: "auto" }), [userMessage("很长的问题".repeat(100), 1)]);
    assert.match(refused.errorMessage ?? "", /^No model chosen by tiny has a context window for this request \(~\d+ tokens\)\.$/);
  });
});

test("18.4 没有虚拟模型时，经过目录的请求正文与事件顺序和直接用那个模型完全一样；direct 的调用带着 reason direct", { timeout: 5_000 }, async () => {
  const echo = defineTool({ name: "echo", description: "Echo.", parameters: s.object({}), execute: async () => ({ content: [text("ok")] }) });
  const run = async (wrap: (spec: PhysicalModelSpec) => Parameters<typeof runAgentLoop>[0]["model"]) =>
    withLoopbacks([[callsTool("call_1", "echo"), says("好了")]], async ([server]) => {
      const events: string[] = [];
      const result = await runAgentLoop({
        model: wrap(httpModel("openai-compatible", "m1", server!.baseUrl)),
        messages: [question],
        tools: new ToolRegistry([echo]),
        now: () => 9,
        onEvent: (event: AgentEvent) => events.push(event.type),
      });
      return { raw: server!.raw, events, reason: result.reason };
    });
  const plain = await run((spec) => spec.create());
  const catalog = new ModelCatalog();
  const viaCatalog = await run((spec) => {
    catalog.addPhysical(spec);
    return new CatalogModel({ catalog, ledger: memoryLedger(), defaultModel: "m1" });
  });
  assert.equal(plain.reason, "stop");
  assert.deepEqual(viaCatalog.raw, plain.raw);
  assert.deepEqual(viaCatalog.events, plain.events);

  const reasons: string[] = [];
  const routes = new ModelCatalog();
  routes.addPhysical({ provider: "alpha", id: "m1", create: () => ({ provider: "alpha", id: "m1", stream: () => new CatalogModel({ catalog: routes, ledger: memoryLedger("ghost"), defaultModel: "ghost" }).stream({ messages: [] }) }) });
  routes.addVirtual({ name: "auto", route: ({ reason }) => (reasons.push(reason), { models: "m1" }) });
  const model = new CatalogModel({ catalog: routes, ledger: memoryLedger("auto"), defaultModel: "auto" });
  await replyOf(model, [question]);
  await replyOf(model, [question, assistantMessage([text("hi")])]);
  await directModel(model).stream({ messages: [question] }).result();
  assert.deepEqual(reasons, ["user", "continuation", "direct"]);
});

test("18.4 路由器的状态存进分支；route() 看得到上一次的回复；路由出错是一条 error 回复，循环照常收场", { timeout: 5_000 }, async () => {
  const catalog = new ModelCatalog();
  const reply: ScriptedTurn = { kind: "reply", content: [text("好")], stopReason: "stop" };
  catalog.addPhysical({ provider: "alpha", id: "m1", create: () => new ScriptedModel([reply, reply, reply, reply, reply, reply]) });
  const previous: (string | undefined)[] = [];
  catalog.addVirtual({ name: "counting", route: (request) => (previous.push(request.previous?.model), { models: request.reason === "user" ? "m1" : "zzz", state: ((request.state as number | undefined) ?? 0) + 1 }) });
  const ledger = memoryLedger("counting");
  const counting = new CatalogModel({ catalog, ledger, defaultModel: "m1" });
  assert.equal((await replyOf(counting, [question])).stopReason, "stop");
  assert.equal((await replyOf(counting, [question, assistantMessage([text("hi")], "stop", { model: "m0" }), userMessage("再来", 2)])).model, "m1");
  assert.deepEqual(previous, [undefined, "m0"]);
  assert.equal(ledger.states.get("counting"), 2, "第二次请求读到第一次存下的状态");
  const wrong = await replyOf(counting, [question, assistantMessage([text("hi")])]);
  assert.equal(wrong.errorMessage, "Router counting chose zzz: Unknown model zzz: not in the catalog.");
  assert.equal(ledger.states.get("counting"), 2, "路由出错时不存状态");
  catalog.addVirtual({ name: "sticky", route: ({ state }) => (state === undefined ? { models: "m1", state: "first" } : { models: "m1" }) });
  const stickyLedger = memoryLedger("sticky");
  const sticky = new CatalogModel({ catalog, ledger: stickyLedger, defaultModel: "m1" });
  await replyOf(sticky, [question]);
  await replyOf(sticky, [question]);
  assert.equal(stickyLedger.states.get("sticky"), "first", "没交回 state 的决定不抹掉存下的状态");

  // 经过目录模型：错误是一条 error 回复，stream() 不抛出，循环照常收场。
  catalog.addVirtual({ name: "broken", route: () => { throw new Error("boom"); } });
  const model = new CatalogModel({ catalog, ledger: memoryLedger("broken"), defaultModel: "m1" });
  const result = await runAgentLoop({ model, messages: [question], tools: new ToolRegistry() });
  assert.equal(result.reason, "error");
  assert.equal(result.errorMessage, "Router broken failed: boom");
  const missing = await replyOf(new CatalogModel({ catalog, ledger: memoryLedger("ghost"), defaultModel: "m1" }), [question]);
  assert.equal(missing.stopReason, "error");
  assert.equal(missing.errorMessage, "Unknown model ghost: not in the catalog.");
});

test("18.4 tiny-pi 读 agent 目录里的 models.json：/model 只改当前分支，续上会话时选择还在；eval 的 fallback-after-503 在真正的 runtime 上通过", { timeout: 10_000 }, async (t) => {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-18-rt-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const cwd = path.join(root, "work");
  const agentDir = path.join(root, "agent");
  await mkdir(cwd, { recursive: true });
  await mkdir(agentDir, { recursive: true });

  const bare = await createRuntime({ cwd, agentDir, env: {} });
  assert.match(modelCommand(bare.model, "/model") ?? "", /^没有模型目录：在 agent 目录里写一个 models\.json/);
  await bare.dispose();

  await withLoopbacks([[status(503), status(503)]], async ([busy]) => {
    const file = {
      default: "offline",
      providers: { alpha: { baseUrl: busy!.baseUrl, apiKeyEnv: "ALPHA_KEY" } },
      models: [{ provider: "offline", id: "offline" }, { provider: "alpha", id: "m1", contextWindow: 100_000 }],
      virtual: [{ name: "auto", routes: { user: ["alpha/m1", "offline"] } }],
    };
    await writeFile(path.join(agentDir, "models.json"), JSON.stringify(file));
    const runtime = await createRuntime({ cwd, agentDir, env: { ALPHA_KEY: "k-18" } });
    assert.ok(runtime.model instanceof CatalogModel);
    assert.equal(modelCommand(runtime.model, "/model"), "当前分支选中 offline；目录里有：offline/offline、alpha/m1、auto");
    assert.equal(modelCommand(runtime.model, "/model auto"), "已选中 auto：只对当前分支有效。");
    assert.throws(() => modelCommand(runtime.model, "/model ghost"), /Unknown model ghost: not in the catalog\./);
    assert.equal(modelCommand(runtime.model, "你好"), undefined, "别的输入不归它管");
    assert.throws(() => modelCommand(runtime.model, "/model auto offline"), /用法：\/model \[名字\]/);
    // 交互模式里的 /model 就是这个命令：回答写在屏幕上，不当成任务交给模型
    const stdin = new PassThrough();
    let screen = "";
    const stdout = new Writable({
      write(chunk, _encoding, done) {
        screen += String(chunk);
        done();
      },
    });
    const repl = new InteractiveMode(runtime, { input: stdin, output: new Output(stdout), terminal: false, reopen: () => assert.fail("不该换会话") });
    const finished = repl.run();
    stdin.write("/model\n");
    stdin.write("/exit\n");
    // /model 若被当成任务交给了模型，REPL 要等那次运行：不干等，3 秒还没离开就算错
    const left = await Promise.race([finished, new Promise<string>((resolve) => setTimeout(resolve, 3_000, "/exit 之后 3 秒还没离开").unref())]);
    assert.equal(left, 0, screen);
    assert.match(screen, /当前分支选中 auto；目录里有：offline\/offline、alpha\/m1、auto/);
    assert.equal(busy!.bodies.length, 0, "/model 不问模型");
    await runtime.session.prompt("你好");
    await runtime.dispose();
    assert.equal(busy!.bodies[0]!.model, "m1");
    assert.equal(busy!.authorization[0], "Bearer k-18", "key 从 apiKeyEnv 点名的环境变量里来");

    const entries = (await new JsonlSessionStore(runtime.sessionFile).load()).entries;
    const attempts = entries.flatMap((entry) => (entry.type === "custom" && entry.customType === ROUTE_ATTEMPT ? [entry.data as RouteAttempt] : []));
    assert.deepEqual(attempts.map(({ target, outcome }) => [target, outcome]), [["alpha/m1", "retried"], ["offline/offline", "ok"]]);
    const reply = entries.findLast((entry) => entry.type === "message" && entry.message.role === "assistant");
    assert.ok(reply?.type === "message" && reply.message.role === "assistant" && reply.message.provider === "offline");

    const resumed = await createRuntime({ cwd, agentDir, env: {}, session: "continue" });
    assert.equal((resumed.model as CatalogModel).selected, "auto", "续上会话时选择还在");
    await resumed.dispose();
  });

  await writeFile(path.join(agentDir, "models.json"), JSON.stringify({ models: [{ provider: "alpha" }] }));
  await assert.rejects(createRuntime({ cwd, agentDir, env: {} }), /模型目录 .*models\.json 写得不对：models\[0\] 要有字符串 provider 与 id。/);
  await writeFile(path.join(agentDir, "models.json"), JSON.stringify({ models: [{ provider: 5, id: "m1" }] }));
  await assert.rejects(createRuntime({ cwd, agentDir, env: {} }), /models\[0\] 要有字符串 provider 与 id。/, "provider 是数字也不行");

  // models.json 的每一种写错都有一句话；agent 目录不存在或不是目录时当作没有目录文件。
  const wrong: [unknown, RegExp][] = [
    [[], /顶层应当是一个对象。$/],
    [{ models: [{ provider: "a", id: "b", thinking: "low" }] }, /models\[0\]\.thinking 应当是字符串数组。$/],
    [{ models: [{ provider: "a", id: "b", thinking: [1] }] }, /models\[0\]\.thinking 应当是字符串数组。$/],
    [{ models: [{ provider: "a", id: "b", thinking: ["max"] }] }, /models\[0\]\.thinking 里的 max 不是 off、low、medium、high 之一。$/],
    [{ models: [{ provider: "a", id: "b" }], virtual: [{ name: "v" }] }, /virtual\[0\] 要有字符串 name 与对象 routes。$/],
    [{ models: [{ provider: "a", id: "b" }], virtual: [{ routes: {} }] }, /virtual\[0\] 要有字符串 name 与对象 routes。$/],
    [{ models: [{ provider: "a", id: "b" }], virtual: [{ name: "v", routes: { continuation: ["a/b"] } }] }, /virtual\[0\]\.routes 至少要有 user 一列。$/],
    [{}, /目录里一个模型也没有。$/],
    [{ default: "zz", models: [{ provider: "a", id: "b" }] }, /Unknown model zz: not in the catalog\.$/],
  ];
  for (const [value, message] of wrong) assert.throws(() => parseCatalogFile(value, {}), message);
  const parsed = parseCatalogFile({ models: [{ provider: "a", id: "b", contextWindow: 5, thinking: ["off", "low"] }, { provider: "a", id: "c" }], virtual: [{ name: "v", routes: { user: ["a/b"], continuation: ["a/c"] } }] }, {});
  assert.equal(parsed.defaultModel, "a/b", "没写 default 时用目录里的第一个名字");
  assert.deepEqual([parsed.catalog.physicalModel("a/b").contextWindow, parsed.catalog.physicalModel("a/b").thinking], [5, ["off", "low"]]);
  const declared = parsed.catalog.lookup("v");
  assert.ok(declared.kind === "virtual");
  assert.deepEqual(await declared.model.route({ reason: "continuation", messages: [], state: undefined }), { models: ["a/c"] });
  assert.deepEqual(await declared.model.route({ reason: "retry", messages: [], state: undefined }), { models: ["a/b"] }, "没列的 reason 用 user 的那一列");
  assert.equal(await loadCatalogFile(path.join(agentDir, "models.json"), {}), undefined, "agent 目录其实是个文件");
  assert.equal(await loadCatalogFile(path.join(root, "nowhere"), {}), undefined);

  // 没有 baseUrl 的 Provider：用到它时是一条 error 回复，不是崩溃。
  for (const providers of [undefined, { beta: { apiKeyEnv: "BETA_KEY" } }]) {
    const noBase = parseCatalogFile({ ...(providers ? { providers } : {}), models: [{ provider: "beta", id: "m9" }] }, {});
    const broken = await replyOf(new CatalogModel({ catalog: noBase.catalog, ledger: memoryLedger(), defaultModel: noBase.defaultModel }), [question]);
    assert.equal(broken.errorMessage, "Provider beta has no baseUrl in models.json.");
  }

  // 评测的检查：少了一次换到备选就不算通过。
  const attempt = (target: string, outcome: string, reason: string, error?: string) =>
    ({ type: "custom", customType: ROUTE_ATTEMPT, id: target + outcome, parentId: null, timestamp: "", data: { virtual: "auto", reason, target, outcome, ...(error ? { error } : {}) } }) as unknown as SessionEntry;
  const once = [attempt("loopback/primary", "retried", "user", "HTTP 503：x"), attempt("scripted/backup", "ok", "retry")];
  const evidence = (entries: SessionEntry[]) => ({ workspace: root, entries, requests: [], events: [], finalAnswer: "" });
  assert.equal((await routeRetried(503, 1).run(evidence(once))).ok, true);
  assert.equal((await routeRetried(503, 2).run(evidence(once))).ok, false);
  assert.equal((await routeRetried(502, 1).run(evidence(once))).ok, false);
  const withMessage = [...once, { type: "message", id: "m", parentId: null, timestamp: "", message: question } as unknown as SessionEntry];
  assert.equal((await routeRetried(503, 1).run(evidence(withMessage))).ok, true, "只数 route_attempt 条目");
  assert.match((await routeRetried(503, 1).run(evidence([]))).reason, /会话里的尝试是 （没有）/);

  const report = await runEvalTask(ROUTING_TASKS[0]!);
  assert.ok(report.ok, formatEvalTable([report]));
  assert.ok(VISIBLE_TASKS.includes(ROUTING_TASKS[0]!), "npm run eval 跑得到它");
});
