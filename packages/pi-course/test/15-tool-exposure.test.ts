import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test, { type TestContext } from "node:test";

import { Agent, toolChange } from "../src/agent.js";
import { runAgentLoop } from "../src/agent-loop.js";
import { BM25_B, BM25_K1, rankBm25, rankByOverlap, splitWords, toolDocument, type SearchDocument } from "../src/bm25.js";
import { canonicalJson, sameDefinition } from "../src/canonical-json.js";
import { toChatRequest } from "../src/openai-compatible.js";
import { declaredFrom } from "../src/eval/checks.js";
import { runEvalTask } from "../src/eval/run.js";
import { VISIBLE_TASKS } from "../src/eval/tasks.js";
import { decideListing, LISTING_QUERY } from "../src/offline-model.js";
import { createRuntime, runtimeTools } from "../src/runtime.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { ToolActivation } from "../src/tool-activation.js";
import { Workspace } from "../src/workspace.js";
import { searchReport, TOOL_SEARCH_NAME, toolSearchTool, type ToolSearchDetails } from "../src/tool-search.js";
import {
  defineTool,
  executeToolCall,
  isCallable,
  isDeclared,
  ToolRegistry,
  type AgentTool,
  type CallScope,
  type DeferredState,
  type ToolExposure,
} from "../src/tools.js";
import {
  currentTools,
  text,
  textOf,
  userMessage,
  type AgentContext,
  type AgentMessage,
  type SystemMessage,
  type ToolCall,
  type ToolDefinition,
  type ToolResultMessage,
} from "../src/types.js";

// ── 场景：一个带计数的工具、一份 deferred 工具目录 ───────────────

const clock = { now: () => 1_000 };

function call(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

function say(words: string): ScriptedTurn {
  return { kind: "reply", content: [text(words)], stopReason: "stop" };
}

function calls(...toolCalls: ToolCall[]): ScriptedTurn {
  return { kind: "reply", content: toolCalls, stopReason: "toolUse" };
}

/** 一个记着自己被执行了几次的工具。 */
function countingTool(name: string, exposure?: ToolExposure, description = `Does ${name}.`) {
  const runs: unknown[] = [];
  const tool = defineTool({
    name,
    description,
    parameters: s.object({ city: s.string() }),
    exposure,
    async execute(args) {
      runs.push(args);
      return { content: [text(`${name} ran for ${args.city}`)] };
    },
  });
  return { tool, runs };
}

const fixedState = (loaded: boolean, declared: boolean): DeferredState => ({ isLoaded: () => loaded, isDeclared: () => declared });

function readTool(): AgentTool<any> {
  return defineTool({
    name: "read",
    description: "Read a text file in the workspace.",
    parameters: s.object({ path: s.string() }),
    async execute() {
      return { content: [text("# tiny-pi")] };
    },
  });
}

/** 三个 deferred 工具：天气、汇率、快递。 */
function deferredCatalog() {
  const weather = countingTool("weather_get_forecast", undefined, "Get the weather forecast for a city.");
  const currency = countingTool("currencyConvertRate", undefined, "Convert an amount between two currencies at today's rate.");
  const parcel = countingTool("shipping-track-parcel", undefined, "Track a parcel by its tracking number.");
  return { weather, currency, parcel, tools: [weather.tool, currency.tool, parcel.tool] };
}

function systems(messages: readonly AgentMessage[]): SystemMessage[] {
  return messages.filter((message): message is SystemMessage => message.role === "system");
}

function declaredNames(messages: readonly AgentMessage[]): string[] {
  return currentTools(messages).map((tool) => tool.name);
}

function results(messages: readonly AgentMessage[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

// ── 15.1 规范 JSON ──────────────────────────────────────────────

test("15.1 规范 JSON：对象的键按字典序，数组保持原顺序，值为 undefined 的属性不写", () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [3, 1], c: null } }), '{"a":{"c":null,"d":[3,1]},"b":1}');
  assert.equal(canonicalJson({ z: undefined, y: "值" }), '{"y":"值"}');
  assert.equal(canonicalJson([undefined, "x"]), '[null,"x"]');
  assert.notEqual(canonicalJson([1, 3]), canonicalJson([3, 1]), "数组的顺序是值的一部分");
  assert.equal(canonicalJson({ b: { y: 1, x: 2 }, a: 0 }), canonicalJson({ a: 0, b: { x: 2, y: 1 } }));
  assert.equal(canonicalJson({ b: 1, é: 4, a: 3, B: 2 }), '{"B":2,"a":3,"b":1,"é":4}', "键按 UTF-16 码元排序（sort() 的默认顺序），不随语言环境变");
  assert.equal(canonicalJson(undefined), "null", "整个值是 undefined 时写成 null：交回的总是一个字符串");
});

test("15.1 换了键序重新序列化的 schema 还是同一个工具：toolChange 不再声明它；说明真的变了才重新声明", () => {
  const declared: ToolDefinition = {
    name: "weather",
    description: "Get the forecast.",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  };
  const reserialised: ToolDefinition = {
    parameters: { required: ["city"], properties: { days: { type: "integer" }, city: { type: "string" } }, type: "object" },
    description: "Get the forecast.",
    name: "weather",
  };
  assert.notEqual(JSON.stringify(declared.parameters), JSON.stringify(reserialised.parameters), "字节确实不同");
  assert.ok(sameDefinition(declared, reserialised));
  assert.equal(toolChange([declared], [reserialised]), undefined, "键序不同不算变化");
  const edited = { ...reserialised, description: "Get the forecast for up to 7 days." };
  assert.deepEqual(toolChange([declared], [edited]), { added: [edited], removed: [] });
});

// ── 15.2 曝光级别与调用范围 ─────────────────────────────────────

test("15.2 声明集：direct、model-only 与已加载的 deferred 写进工具列表，codemode、hidden 与未加载的 deferred 不写", () => {
  const registry = new ToolRegistry([
    countingTool("plain").tool,
    countingTool("direct_one", "direct").tool,
    countingTool("model_only", "model-only").tool,
    countingTool("script_only", "codemode").tool,
    countingTool("secret", "hidden").tool,
    { ...countingTool("loaded_later", "deferred").tool, deferred: fixedState(true, false) },
    { ...countingTool("not_loaded", "deferred").tool, deferred: fixedState(false, false) },
    countingTool("no_state", "deferred").tool,
  ]);
  assert.deepEqual(
    registry.definitions().map((tool) => tool.name),
    ["plain", "direct_one", "model_only", "loaded_later"],
  );
  assert.equal(registry.names.length, 8, "登记了的都还在注册表里");
});

test("15.2 可调用集按范围：模型能调 direct、model-only 与已声明的 deferred；脚本能调 direct、codemode 与任何 deferred；hidden 谁都不能", () => {
  const cases: [AgentTool<any>, boolean, boolean, string][] = [
    [countingTool("a").tool, true, true, "direct"],
    [countingTool("b", "model-only").tool, true, false, "model-only"],
    [countingTool("c", "codemode").tool, false, true, "codemode"],
    [countingTool("d", "hidden").tool, false, false, "hidden"],
    [{ ...countingTool("e", "deferred").tool, deferred: fixedState(true, true) }, true, true, "已加载、transcript 也已声明的 deferred"],
    [{ ...countingTool("f", "deferred").tool, deferred: fixedState(true, false) }, false, true, "已加载、transcript 还没声明的 deferred"],
    [countingTool("g", "deferred").tool, false, true, "没有加载状态的 deferred"],
  ];
  for (const [tool, model, script, label] of cases) {
    assert.equal(isCallable(tool, "model"), model, `${label}（${tool.name}）在 model 范围`);
    assert.equal(isCallable(tool, "script"), script, `${label}（${tool.name}）在 script 范围`);
  }
  assert.equal(isDeclared(cases[5]![0]), true, "加载了就声明，但模型眼前的请求里还没有它");
});

test("15.2 范围之外的调用：配对的 isError 结果，英文写明下一步（deferred 要先调用 tool_search），工具一行都不执行", { timeout: 2_000 }, async () => {
  const signal = new AbortController().signal;
  const refused = async (exposure: ToolExposure, scope: CallScope) => {
    const { tool, runs } = countingTool("weather", exposure);
    // 参数故意不合法：范围检查在参数检查之前，模型先知道的是“这个工具此刻不能这样调用”。
    const result = await executeToolCall(new ToolRegistry([tool]), call("c1", "weather", { city: 42 }), { signal, scope, ...clock });
    assert.equal(runs.length, 0, `${exposure} 在 ${scope} 范围里不执行`);
    assert.equal(result.toolCallId, "c1");
    assert.equal(result.isError, true);
    assert.deepEqual(result.details, { kind: "out_of_scope", exposure, scope });
    return textOf(result);
  };
  const deferred = await refused("deferred", "model");
  assert.match(deferred, /Tool weather is deferred and was not declared in this request\./);
  assert.match(deferred, /Call `tool_search` first/);
  assert.match(await refused("codemode", "model"), /can only be called from a codemode script/);
  assert.match(await refused("model-only", "script"), /can only be called directly by the model, not from a script/);
  assert.match(await refused("hidden", "model"), /is hidden: it cannot be called here/);
  assert.match(await refused("hidden", "script"), /is hidden/);

  // 范围之内照旧：省略 scope 就是 model。
  const { tool, runs } = countingTool("weather");
  const ok = await executeToolCall(new ToolRegistry([tool]), call("c2", "weather", { city: "Berlin" }), { signal, ...clock });
  assert.equal(ok.isError, false);
  assert.deepEqual(runs, [{ city: "Berlin" }]);
});

// ── 15.3 BM25 ───────────────────────────────────────────────────

test("15.3 切词：按 _、- 与 camelCase 切开，全部小写；名字、说明与参数名都进文档", () => {
  assert.deepEqual(splitWords("readFile read_file read-file"), ["read", "file", "read", "file", "read", "file"]);
  assert.deepEqual(splitWords("parseHTTPResponse v2Api"), ["parse", "http", "response", "v2", "api"]);
  assert.deepEqual(splitWords("utf8Decode"), ["utf8", "decode"], "数字跟着前面的字母");
  assert.deepEqual(splitWords("  Hello, world!  "), ["hello", "world"]);
  const document = toolDocument({
    name: "shipping-trackParcel",
    description: "Track a parcel.",
    parameters: { type: "object", properties: { trackingNumber: { type: "string" } } },
  });
  assert.deepEqual(document, { name: "shipping-trackParcel", terms: ["shipping", "track", "parcel", "track", "a", "parcel", "tracking", "number"] });
  assert.deepEqual(toolDocument({ name: "x", description: "", parameters: { type: "object" } }).terms, ["x"]);
});

test("15.3 BM25 照公式计分：罕见的词分量重，同一个词重复出现很快饱和", () => {
  const documents: SearchDocument[] = [
    { name: "rare", terms: ["invoice", "pdf"] },
    { name: "both", terms: ["the", "invoice", "the", "user"] },
    { name: "common", terms: ["the", "user", "the", "data"] },
    { name: "short", terms: ["the", "service"] },
  ];
  const ranked = rankBm25(documents, "the invoice", { limit: 10 });
  const N = 4;
  const avgdl = (2 + 4 + 4 + 2) / 4;
  const idf = (n: number) => Math.log(1 + (N - n + 0.5) / (n + 0.5));
  const part = (f: number, length: number) => (f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avgdl));
  // the 出现在 3 个文档里，invoice 只在 2 个里：命中一次 invoice 胜过命中两次 the。
  const expected: Record<string, number> = {
    rare: idf(2) * part(1, 2),
    both: idf(3) * part(2, 4) + idf(2) * part(1, 4),
    common: idf(3) * part(2, 4),
    short: idf(3) * part(1, 2),
  };
  assert.deepEqual(ranked.map((entry) => entry.name), ["both", "rare", "common", "short"]);
  for (const entry of ranked) assert.ok(Math.abs(entry.score - expected[entry.name]!) < 1e-9, entry.name);
  // 只有一个文档：avgdl 就是它自己的长度，长度归一那一项正好是 1。
  const [only] = rankBm25([{ name: "only", terms: ["x"] }], "x", { limit: 1 });
  assert.ok(Math.abs(only!.score - Math.log(1 + 0.5 / 1.5)) < 1e-9);
  // 饱和：同一个词出现四次，分数远不到出现一次的四倍。
  const once = rankBm25([{ name: "a", terms: ["x", "y"] }, { name: "b", terms: ["z", "y"] }], "x", { limit: 1 })[0]!.score;
  const many = rankBm25([{ name: "a", terms: ["x", "x", "x", "x"] }, { name: "b", terms: ["z", "y", "z", "y"] }], "x", { limit: 1 })[0]!.score;
  assert.ok(many < 2 * once, `四次 ${many} 不到一次 ${once} 的两倍`);
});

test("15.3 分数相同按目录的先后，最多交回 limit 个，零分的一个不交", () => {
  const documents: SearchDocument[] = ["c", "a", "b", "d"].map((name) => ({ name, terms: name === "d" ? ["other"] : ["same", "words"] }));
  assert.deepEqual(rankBm25(documents, "same", { limit: 10 }).map((entry) => entry.name), ["c", "a", "b"]);
  assert.deepEqual(rankBm25(documents, "same", { limit: 2 }).map((entry) => entry.name), ["c", "a"]);
  assert.deepEqual(rankBm25(documents, "same", { limit: 0 }), []);
  assert.deepEqual(rankBm25(documents, "nothing here", { limit: 5 }), []);
  // 高分与低分交错排在目录里：先按分数，同分的各自保持目录里的先后。
  const mixed: SearchDocument[] = ["low1", "high1", "low2", "high2", "low3", "high3"].map((name) => ({
    name,
    terms: name.startsWith("high") ? ["key", "key", "pad"] : ["key", "pad", "pad"],
  }));
  assert.deepEqual(rankBm25(mixed, "key", { limit: 10 }).map((entry) => entry.name), ["high1", "high2", "high3", "low1", "low2", "low3"]);
  assert.deepEqual(rankBm25([], "key", { limit: 3 }), []);
  assert.deepEqual(rankBm25([{ name: "blank", terms: [] }], "key", { limit: 3 }), []);
  assert.deepEqual(rankByOverlap(documents, "same words", 2).map((entry) => entry.name), ["c", "a"]);
});

// 合成目录：25 个服务 × 12 个动作，名字轮流用 snake_case、camelCase 与 kebab-case；外加 5 个什么词都沾的“大杂烩”工具。
const SERVICES: [string, string, string[]][] = [
  ["calendar", "event", ["eventId", "startTime"]],
  ["email", "message", ["messageId", "recipient"]],
  ["invoice", "invoice", ["invoiceId", "amount"]],
  ["weather", "forecast", ["city", "days"]],
  ["github", "issue", ["repo", "issueNumber"]],
  ["slack", "channel", ["channelId", "text"]],
  ["crm", "contact", ["contactId", "company"]],
  ["storage", "bucket", ["bucketName", "region"]],
  ["billing", "subscription", ["planId", "customerId"]],
  ["translate", "document", ["sourceLanguage", "targetLanguage"]],
  ["maps", "route", ["origin", "destination"]],
  ["payroll", "payslip", ["employeeId", "month"]],
  ["inventory", "stock", ["sku", "warehouse"]],
  ["shipping", "parcel", ["trackingNumber", "carrier"]],
  ["database", "table", ["tableName", "query"]],
  ["analytics", "report", ["metric", "period"]],
  ["hr", "employee", ["employeeId", "department"]],
  ["ticketing", "ticket", ["ticketId", "priority"]],
  ["dns", "record", ["domain", "recordType"]],
  ["currency", "rate", ["from", "to"]],
  ["music", "playlist", ["playlistId", "track"]],
  ["notes", "note", ["noteId", "folder"]],
  ["photos", "album", ["albumId", "caption"]],
  ["feeds", "article", ["feedUrl", "limit"]],
  ["vpn", "tunnel", ["tunnelId", "peer"]],
];
const ACTIONS = ["create", "delete", "list", "get", "update", "search", "export", "archive", "share", "sync", "restore", "notify"];
const HUBS = ["workspace_overview", "assistant_help", "activity_digest", "admin_console", "audit_log"];

const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

function syntheticCatalog(): { definition: ToolDefinition; service: string }[] {
  const catalog: { definition: ToolDefinition; service: string }[] = [];
  for (const [service, object, params] of SERVICES) {
    for (const action of ACTIONS) {
      const style = catalog.length % 3;
      const name =
        style === 0 ? `${service}_${action}_${object}` : style === 1 ? `${service}${capital(action)}${capital(object)}` : `${service}-${action}-${object}`;
      const description = `${capital(action)} a ${object} in the ${service} service. Use it when the user asks to ${action} a ${object}.`;
      const properties = Object.fromEntries(params.map((param) => [param, { type: "string" }]));
      catalog.push({ definition: { name, description, parameters: { type: "object", properties } }, service });
    }
  }
  const everything = SERVICES.map(([service, object]) => `${service} ${object}`).join(", ");
  for (const hub of HUBS) {
    const description = `Shows a summary for the user of everything: ${everything}. From here you can ${ACTIONS.join(", ")} for the user in the service.`;
    catalog.push({ definition: { name: hub, description, parameters: { type: "object", properties: { scope: { type: "string" } } } }, service: "hub" });
  }
  return catalog;
}

/** 固定的查询，以及相关的服务：前 k 个里属于这个服务的才算对。 */
const QUERIES: [string, string][] = [
  ["create a calendar event for the meeting", "calendar"],
  ["delete the email message", "email"],
  ["what is the weather forecast for berlin", "weather"],
  ["list github issues in the repo", "github"],
  ["export the invoice as pdf", "invoice"],
  ["track a parcel with the tracking number", "shipping"],
  ["convert currency rate from usd to eur", "currency"],
  ["share a photo album", "photos"],
  ["archive the slack channel", "slack"],
  ["restore a deleted note", "notes"],
];

function precisionAt(k: number, rank: (query: string) => { name: string }[], serviceOf: Map<string, string>): number {
  let sum = 0;
  for (const [query, service] of QUERIES) {
    const top = rank(query).slice(0, k);
    sum += top.filter((entry) => serviceOf.get(entry.name) === service).length / k;
  }
  return sum / QUERIES.length;
}

test("15.3 三百多个工具、十个固定查询：BM25 的 precision@3 是 1.00，词重叠计数只有 0.47", () => {
  const catalog = syntheticCatalog();
  assert.equal(catalog.length, 305);
  const documents = catalog.map((entry) => toolDocument(entry.definition));
  const serviceOf = new Map(catalog.map((entry) => [entry.definition.name, entry.service]));
  const k = 3;
  const bm25 = precisionAt(k, (query) => rankBm25(documents, query, { limit: k }), serviceOf);
  const overlap = precisionAt(k, (query) => rankByOverlap(documents, query, k), serviceOf);
  assert.ok(bm25 > overlap, `BM25 ${bm25} 应当高过词重叠 ${overlap}`);
  assert.equal(bm25.toFixed(2), "1.00");
  assert.equal(overlap.toFixed(2), "0.47");
});

// ── 15.4 加载与卸载 ─────────────────────────────────────────────

test("15.4 加载与上限：超过 maxLoaded 就卸载最久没用的；已加载的再加载、被调用一次，都算用过", { timeout: 2_000 }, async () => {
  const { tools } = deferredCatalog();
  const activation = new ToolActivation(tools, { maxLoaded: 2 });
  assert.deepEqual(activation.loadedNames, []);
  assert.ok(activation.tools.every((tool) => tool.exposure === "deferred" && tool.deferred !== undefined));

  assert.deepEqual(activation.load(["weather_get_forecast"]), { loaded: ["weather_get_forecast"], unloaded: [] });
  assert.deepEqual(activation.load(["currencyConvertRate"]), { loaded: ["currencyConvertRate"], unloaded: [] });
  // 调用天气一次：它成了最近用过的。
  const weather = activation.tools.find((tool) => tool.name === "weather_get_forecast")!;
  await weather.execute({ city: "Berlin" }, { toolCallId: "w", signal: new AbortController().signal, onUpdate() {} });
  assert.deepEqual(activation.load(["shipping-track-parcel"]), { loaded: ["shipping-track-parcel"], unloaded: ["currencyConvertRate"] });
  assert.deepEqual(activation.loadedNames, ["weather_get_forecast", "shipping-track-parcel"]);
  assert.equal(activation.isLoaded("currencyConvertRate"), false);

  // 已加载的再加载一次不算新加载，但刷新了它的使用时刻。
  assert.deepEqual(activation.load(["weather_get_forecast"]), { loaded: [], unloaded: [] });
  assert.deepEqual(activation.loadedNames, ["shipping-track-parcel", "weather_get_forecast"]);
  assert.throws(() => activation.load(["rm_rf"]), /rm_rf 不是登记过的 deferred 工具/);
  // 一次加载的比上限多：先加载、又为守住上限卸下的名字只在 unloaded 里。
  const tight = new ToolActivation(tools, { maxLoaded: 1 });
  assert.deepEqual(tight.load(["weather_get_forecast", "currencyConvertRate"]), { loaded: ["currencyConvertRate"], unloaded: ["weather_get_forecast"] });
  assert.throws(() => new ToolActivation(tools, { maxLoaded: 0 }), /maxLoaded 必须是正整数/);
});

test("15.4 声明看 transcript：加载之后、补丁写进 transcript 之前不算声明；续上的会话按 transcript 恢复同样的已加载集", () => {
  const { tools } = deferredCatalog();
  const transcript = { state: { messages: [] as AgentMessage[] } };
  const activation = new ToolActivation(tools);
  assert.equal(activation.isDeclared("weather_get_forecast"), false, "没跟着 transcript 时什么都没声明");
  activation.follow(transcript);
  activation.load(["weather_get_forecast"]);
  assert.equal(activation.isLoaded("weather_get_forecast"), true);
  assert.equal(activation.isDeclared("weather_get_forecast"), false, "加载了，但模型还没在请求里见过它");

  const definition = (name: string): ToolDefinition => ({ name, description: name, parameters: { type: "object" } });
  transcript.state.messages = [
    { role: "system", content: "", toolsAdded: [definition("read"), definition("currencyConvertRate"), definition("weather_get_forecast")], timestamp: 1 },
  ];
  assert.equal(activation.isDeclared("weather_get_forecast"), true, "补丁进了 transcript 就算声明");
  assert.equal(activation.isDeclared("read"), false, "不是这里登记的工具，不归它管");

  const resumed = new ToolActivation(tools);
  resumed.load(["shipping-track-parcel"]);
  resumed.follow(transcript);
  assert.deepEqual(resumed.loadedNames, ["currencyConvertRate", "weather_get_forecast"], "恰好是声明过的那些，按声明的先后");
  transcript.state.messages = [...transcript.state.messages, { role: "system", content: "", toolsRemoved: [{ name: "currencyConvertRate" }], timestamp: 2 }];
  assert.equal(resumed.isDeclared("currencyConvertRate"), false, "撤下之后就不再声明");
});

// ── 15.5 tool_search 与循环 ─────────────────────────────────────

test("15.5 tool_search：在 deferred 工具里按 BM25 检索并加载，英文说明加载了哪些、何时能用、卸载了哪些；没找到也照实说", { timeout: 2_000 }, async () => {
  const { tools } = deferredCatalog();
  const activation = new ToolActivation(tools, { maxLoaded: 1 });
  const search = toolSearchTool(activation);
  assert.equal(search.name, TOOL_SEARCH_NAME);
  assert.equal(search.exposure, "model-only");
  const context = { toolCallId: "s", signal: new AbortController().signal, onUpdate() {} };

  const first = await search.execute({ query: "weather forecast" }, context);
  assert.equal(textOf({ role: "toolResult", toolCallId: "s", toolName: "tool_search", content: first.content, isError: false, timestamp: 0 }),
    "Loaded 1 tool(s): weather_get_forecast. They are declared from the next request on; call them then.");
  assert.deepEqual((first.details as ToolSearchDetails).loaded, ["weather_get_forecast"]);

  const second = await search.execute({ query: "convert currency" }, context);
  const secondText = second.content.map((block) => block.text).join("\n");
  assert.match(secondText, /^Loaded 1 tool\(s\): currencyConvertRate\./);
  assert.match(secondText, /Unloaded \(least recently used, to stay within the budget\): weather_get_forecast\./);
  assert.deepEqual(activation.loadedNames, ["currencyConvertRate"]);

  assert.equal(
    searchReport("parcel", [{ name: "shipping-track-parcel", score: 2 }, { name: "weather_get_forecast", score: 1 }], []),
    "Loaded 2 tool(s): shipping-track-parcel, weather_get_forecast. They are declared from the next request on; call them then.",
    "几个名字按排名先后用逗号加空格连起来",
  );

  const none = await search.execute({ query: "quantum teleport" }, context);
  assert.equal(none.content[0]?.text, 'No deferred tool matches "quantum teleport". Try other words, or go on with the tools you have.');
  assert.deepEqual((none.details as ToolSearchDetails).matches, []);
});

/** 一个接好 tool_search 的 Agent：read 是 direct，三个 deferred 工具等着被找到。 */
function searchingAgent(script: ScriptedTurn[], options: { maxLoaded?: number; messages?: readonly AgentMessage[] } = {}) {
  const catalog = deferredCatalog();
  const activation = new ToolActivation(catalog.tools, options.maxLoaded === undefined ? {} : { maxLoaded: options.maxLoaded });
  const model = new ScriptedModel(script, clock);
  const tools = [readTool(), toolSearchTool(activation), ...activation.tools];
  const start = options.messages === undefined ? { systemPrompt: "You are tiny-pi." } : { messages: options.messages };
  const agent = new Agent({ model, tools, ...start, ...clock });
  activation.follow(agent);
  return { agent, model, activation, catalog };
}

test("15.5 同一批里：deferred 工具和 tool_search 一起调用，得到先调用 tool_search 的结果；下一次请求声明了它，模型重试成功", { timeout: 2_000 }, async () => {
  const { agent, model, catalog } = searchingAgent([
    calls(call("s1", "tool_search", { query: "weather forecast" }), call("w1", "weather_get_forecast", { city: "Berlin" })),
    calls(call("w2", "weather_get_forecast", { city: "Berlin" })),
    say("Berlin: sunny."),
  ]);
  const systemEvents: string[] = [];
  agent.subscribe((event) => {
    if ((event.type === "message_start" || event.type === "message_end") && event.message.role === "system") systemEvents.push(event.type);
  });
  await agent.prompt("What is the weather in Berlin?");
  assert.equal(agent.state.error, undefined);
  assert.deepEqual(systemEvents, ["message_start", "message_end"], "补丁和别的消息一样先 start 再 end");

  const [first, second, third] = model.requests;
  assert.deepEqual(declaredNames(first!.messages), ["read", "tool_search"], "第一次请求里没有 deferred 工具");
  assert.deepEqual(declaredNames(second!.messages), ["read", "tool_search", "weather_get_forecast"], "下一次请求声明了它");
  assert.deepEqual(declaredNames(third!.messages), declaredNames(second!.messages));

  const [searched, refused, retried] = results(agent.state.messages);
  assert.equal(searched?.isError, false);
  assert.equal(refused?.toolCallId, "w1");
  assert.equal(refused?.isError, true, "同一批里的 deferred 调用应当被拒：模型还没在请求里见过它");
  assert.match(textOf(refused!), /Call `tool_search` first/);
  assert.equal(retried?.toolCallId, "w2");
  assert.equal(retried?.isError, false);
  assert.deepEqual(catalog.weather.runs, [{ city: "Berlin" }], "被拒的那次一行都没执行，重试的那次执行了");

  // 补丁紧跟在这一批结果后面，是一条只带 toolsAdded 的 system 消息。
  const patchIndex = agent.state.messages.findIndex((message) => message.role === "system" && message.toolsAdded?.some((tool) => tool.name === "weather_get_forecast"));
  const patch = agent.state.messages[patchIndex] as SystemMessage;
  assert.equal(agent.state.messages[patchIndex - 1]?.role, "toolResult");
  assert.equal(patch.content, "");
  assert.deepEqual(patch.toolsAdded?.map((tool) => tool.name), ["weather_get_forecast"]);
  assert.equal(patch.toolsRemoved, undefined);
});

test("15.5 加载之后，请求 N 序列化出的消息逐字节是请求 N+1 的前缀，工具列表也只在末尾追加", { timeout: 2_000 }, async () => {
  const { agent, model } = searchingAgent([
    calls(call("s1", "tool_search", { query: "track parcel" })),
    calls(call("p1", "shipping-track-parcel", { city: "Hamburg" })),
    say("On its way."),
  ]);
  await agent.prompt("Where is my parcel?");
  const bodies = model.requests.map((context) => toChatRequest(context, "m"));
  assert.equal(bodies.length, 3);
  for (let n = 0; n + 1 < bodies.length; n += 1) {
    const messages = JSON.stringify(bodies[n]!.messages).slice(0, -1);
    assert.ok(JSON.stringify(bodies[n + 1]!.messages).startsWith(messages), `请求 ${n + 1} 的消息是请求 ${n + 2} 的前缀`);
    const tools = JSON.stringify(bodies[n]!.tools).slice(0, -1);
    assert.ok(JSON.stringify(bodies[n + 1]!.tools).startsWith(tools), `请求 ${n + 1} 的工具列表是请求 ${n + 2} 的前缀`);
  }
  assert.deepEqual(bodies[1]!.tools?.map((tool) => tool.function.name), ["read", "tool_search", "shipping-track-parcel"]);
});

test("15.5 从没声明过工具的 transcript（直接用第 07 章的循环）：不写补丁，下一次请求的 tools 直接带上新加载的工具", { timeout: 2_000 }, async () => {
  const { tools } = deferredCatalog();
  const activation = new ToolActivation(tools);
  const model = new ScriptedModel([calls(call("s1", "tool_search", { query: "weather forecast" })), say("ok")], clock);
  const run = await runAgentLoop({
    model,
    messages: [{ role: "system", content: "You are tiny-pi.", timestamp: 0 }, { role: "user", content: [text("weather?")], timestamp: 1 }],
    tools: new ToolRegistry([toolSearchTool(activation), ...activation.tools]),
    ...clock,
  });
  assert.equal(run.reason, "stop");
  assert.deepEqual(systems(run.messages), [], "transcript 里没有声明（system prompt 不算），就不写补丁");
  assert.deepEqual(model.requests[0]!.tools?.map((tool) => tool.name), ["tool_search"]);
  assert.deepEqual(model.requests[1]!.tools?.map((tool) => tool.name), ["tool_search", "weather_get_forecast"]);
});

test("15.5 补丁只写变化：transcript 声明了注册表里已经没有的工具，批次之后只用 toolsRemoved 撤下它", { timeout: 2_000 }, async () => {
  const { tool } = countingTool("weather");
  const stale: ToolDefinition = { name: "gone", description: "A tool that was removed.", parameters: { type: "object" } };
  const registry = new ToolRegistry([tool]);
  const model = new ScriptedModel([calls(call("w1", "weather", { city: "Rome" })), say("ok")], clock);
  const run = await runAgentLoop({
    model,
    messages: [
      { role: "system", content: "p", toolsAdded: [...registry.definitions(), stale], timestamp: 0 },
      { role: "user", content: [text("weather?")], timestamp: 1 },
    ],
    tools: registry,
    ...clock,
  });
  const [patch, ...more] = systems(run.messages);
  assert.deepEqual(more, []);
  assert.deepEqual(patch, { role: "system", content: "", toolsRemoved: [{ name: "gone" }], timestamp: 1_000 });
  assert.deepEqual(declaredNames(model.requests[1]!.messages), ["weather"]);
});

test("15.5 上限满了：新加载的挤掉最久没用的，下一次请求用 toolsRemoved 撤下它", { timeout: 2_000 }, async () => {
  const { agent, model, activation } = searchingAgent(
    [
      calls(call("s1", "tool_search", { query: "weather forecast" })),
      calls(call("s2", "tool_search", { query: "convert currency" })),
      say("Done."),
    ],
    { maxLoaded: 1 },
  );
  await agent.prompt("Weather, then money.");
  assert.deepEqual(declaredNames(model.requests[1]!.messages), ["read", "tool_search", "weather_get_forecast"]);
  assert.deepEqual(declaredNames(model.requests[2]!.messages), ["read", "tool_search", "currencyConvertRate"]);
  const last = systems(agent.state.messages).at(-1)!;
  assert.deepEqual(last.toolsRemoved, [{ name: "weather_get_forecast" }]);
  assert.deepEqual(last.toolsAdded?.map((tool) => tool.name), ["currencyConvertRate"]);
  assert.deepEqual(activation.loadedNames, ["currencyConvertRate"]);
});

test("15.5 续上的会话恢复同样的声明集：第一次请求的工具与上次最后一次相同，不再写新的补丁", { timeout: 2_000 }, async () => {
  const before = searchingAgent([calls(call("s1", "tool_search", { query: "weather forecast" })), say("Loaded.")]);
  await before.agent.prompt("Find the weather tool.");
  const saved = structuredClone(before.agent.state.messages);
  const lastTools = declaredNames(before.model.requests.at(-1)!.messages);

  const after = searchingAgent([calls(call("w1", "weather_get_forecast", { city: "Oslo" })), say("Oslo: snow.")], { messages: [...saved] });
  assert.deepEqual(after.activation.loadedNames, ["weather_get_forecast"]);
  await after.agent.prompt("Weather in Oslo?");
  assert.deepEqual(declaredNames(after.model.requests[0]!.messages), lastTools);
  assert.equal(systems(after.agent.state.messages).length, systems(saved).length, "没有新的 system 补丁");
  assert.equal(results(after.agent.state.messages).at(-1)?.isError, false, "续上之后直接调用就成功");
  assert.deepEqual(after.catalog.weather.runs, [{ city: "Oslo" }]);
});

test("15.5 工具的 schema 换了键序重新交给 Agent：下一次 prompt 不写补丁，请求的工具列表不变", { timeout: 2_000 }, async () => {
  // 同一个工具重新构造一次（例如扩展重新加载），两个可选参数写的先后不同：JSON.stringify 的字节不同。
  const tool = (reversed: boolean): AgentTool<any> =>
    defineTool({
      name: "lookup",
      description: "Look a word up.",
      parameters: reversed
        ? s.object({ lang: s.optional(s.string()), word: s.optional(s.string()) })
        : s.object({ word: s.optional(s.string()), lang: s.optional(s.string()) }),
      async execute() {
        return { content: [text("ok")] };
      },
    });
  const model = new ScriptedModel([say("one"), say("two")], clock);
  const agent = new Agent({ model, tools: [tool(false)], systemPrompt: "p", ...clock });
  await agent.prompt("first");
  agent.setTools([tool(true)]);
  assert.notEqual(JSON.stringify(new ToolRegistry([tool(true)]).definitions()), JSON.stringify(new ToolRegistry([tool(false)]).definitions()));
  await agent.prompt("second");
  assert.equal(systems(agent.state.messages).length, 1, "键序不同不算变化，不写补丁");
  const [one, two] = model.requests.map((context) => toChatRequest(context, "m"));
  assert.equal(JSON.stringify(two!.tools), JSON.stringify(one!.tools));
});

async function project(t: TestContext) {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-course-15-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const cwd = path.join(root, "project");
  await mkdir(path.join(cwd, "src"), { recursive: true });
  await writeFile(path.join(cwd, "README.md"), "# 星图\n");
  await writeFile(path.join(cwd, "src", "main.ts"), "export {};\n");
  return { cwd, agentDir: path.join(root, "agent") };
}

test("15.5 tiny-pi 提供 tool_search：ls 是 deferred 工具，找到之后下一次请求声明它；续上的会话里它仍然声明", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel(
    [calls(call("s1", "tool_search", { query: "list directory entries" })), calls(call("l1", "ls", { path: "src" })), say("src 里有 main.ts。")],
    clock,
  );
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model, ...clock });
  await runtime.session.prompt("src 里有什么？");
  await runtime.dispose();
  const [first, second] = model.requests;
  assert.deepEqual(declaredNames(first!.messages), ["read", "write", "edit", "bash", "tool_search"]);
  assert.deepEqual(declaredNames(second!.messages), ["read", "write", "edit", "bash", "tool_search", "ls"]);
  const listed = results(runtime.session.messages).at(-1)!;
  assert.equal(listed.isError, false);
  assert.equal(textOf(listed), "main.ts");

  const later = new ScriptedModel([say("还在。")], clock);
  const resumed = await createRuntime({ cwd, agentDir, env: {}, model: later, session: runtime.sessionFile, ...clock });
  await resumed.session.prompt("ls 还在吗？");
  await resumed.dispose();
  assert.deepEqual(declaredNames(later.requests[0]!.messages), declaredNames(second!.messages), "续上的会话声明同样的工具");
});

test("15.5 离线的 tiny-pi 也会先找再用：列出 src 时先调用 tool_search，下一次请求有了 ls 再调用它，最后说出目录里的文件", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const runtime = await createRuntime({ cwd, agentDir, env: {}, ...clock });
  assert.equal(runtime.model.provider, "offline");
  await runtime.session.prompt("列出 src 目录");
  await runtime.dispose();
  const calls = runtime.session.messages.flatMap((message) =>
    message.role === "assistant" ? message.content.flatMap((block) => (block.type === "toolCall" ? [block.name] : [])) : [],
  );
  assert.deepEqual(calls, ["tool_search", "ls"]);
  assert.deepEqual(results(runtime.session.messages).map((result) => result.isError), [false, false]);
  const answer = runtime.session.messages.at(-1);
  assert.equal(answer?.role === "assistant" ? textOf(answer) : "", "src 里有：main.ts。");

  // 几个边角：搜过了还是没有 ls 就直说；ls 失败就说出原因，不再重试；没说“列出”就交给第 13 章的规则。
  const search: ToolDefinition = { name: "tool_search", description: "", parameters: { type: "object" } };
  const ls: ToolDefinition = { name: "ls", description: "", parameters: { type: "object" } };
  const asked = userMessage("列出 docs", 1);
  const result = (toolName: string, body: string, isError: boolean): ToolResultMessage => ({ role: "toolResult", toolCallId: "x", toolName, content: [text(body)], isError, timestamp: 2 });
  assert.deepEqual(decideListing([asked], [search]), { kind: "call", name: "tool_search", arguments: { query: LISTING_QUERY }, say: "我手上没有列目录的工具，先找一个。" });
  assert.deepEqual(decideListing([asked, result("tool_search", "No deferred tool matches", false)], [search]), { kind: "answer", text: "这次请求里没有 ls 工具，我列不了 docs。" });
  assert.deepEqual(decideListing([asked, result("read", "别的工具的结果", false)], [search]), decideListing([asked], [search]), "读过别的文件不算搜过");
  assert.deepEqual(decideListing([asked], [search, ls]), { kind: "call", name: "ls", arguments: { path: "docs" }, say: "列一下 docs。" });
  assert.deepEqual(decideListing([asked, result("ls", "文件 docs 不存在。", true)], [search, ls]), { kind: "answer", text: "列不了 docs：文件 docs 不存在。" });
  assert.deepEqual(decideListing([userMessage("列出", 1), result("ls", "a\nb/", false)], [ls]), { kind: "answer", text: ". 里有：a、b/。" });
  assert.equal(decideListing([userMessage("请读取 README", 1)], [search, ls]), undefined);
});

test("15.5 ls 列出工作区里的一个目录：按名字排序、目录带 /；空目录和太长的目录都照实说", { timeout: 5_000 }, async (t) => {
  const { cwd } = await project(t);
  // tiny-pi 交给会话的那个 ls：登记在 activation 里的 deferred 工具。
  const ls = runtimeTools(await Workspace.open(cwd)).tools.find((tool) => tool.name === "ls")!;
  assert.equal(ls.exposure, "deferred");
  const context = { toolCallId: "l", signal: new AbortController().signal, onUpdate() {} };
  const listing = async (args: unknown) => (await ls.execute(args, context)).content.map((block) => block.text).join("");
  assert.equal(await listing({}), "README.md\nsrc/");
  await mkdir(path.join(cwd, "empty"));
  assert.equal(await listing({ path: "empty" }), "（空目录）");
  await mkdir(path.join(cwd, "many"));
  for (let i = 0; i < 201; i += 1) await writeFile(path.join(cwd, "many", `f${String(i).padStart(3, "0")}`), "");
  const many = await listing({ path: "many" });
  assert.equal(many.split("\n").length, 201, "200 项加一行说明");
  assert.ok(many.startsWith("f000\nf001\n"));
  assert.ok(many.endsWith("……还有 1 项没有列出。"), many.slice(-40));
  await assert.rejects(ls.execute({ path: "../outside" }, context), /工作区之外/);
});

test("15.5 eval 的 search-then-ls 在真正的 runtime 上通过；declaredFrom 抓得住从没声明和声明得太早", { timeout: 5_000 }, async () => {
  const task = VISIBLE_TASKS.find((visible) => visible.id === "search-then-ls")!;
  const report = await runEvalTask(task);
  assert.ok(report.ok, JSON.stringify(report));
  assert.equal(report.toolErrors, 1);
  const declaring = (names: string[]): AgentContext => ({ messages: [{ role: "system", content: "", toolsAdded: names.map((name) => ({ name, description: "", parameters: {} })), timestamp: 0 }] });
  const context = (requests: AgentContext[]) => ({ workspace: "", entries: [], requests, events: [], finalAnswer: "" });
  const check = declaredFrom(2, "ls");
  assert.equal((await check.run(context([declaring(["read"]), declaring(["read", "ls"])]))).ok, true);
  assert.deepEqual(await check.run(context([declaring(["read"]), declaring(["read"])])), { ok: false, reason: "2 次请求都没有声明 ls" });
  assert.deepEqual(await check.run(context([declaring(["ls"]), declaring(["ls"])])), { ok: false, reason: "ls 在第 1 次请求里第一次声明，应当是第 2 次" });
  assert.equal((await check.run(context([declaring(["read"]), declaring(["read"]), declaring(["ls"])]))).ok, false, "声明得太晚");
});
