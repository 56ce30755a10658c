import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import test, { type TestContext } from "node:test";

import releaseSync from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant } from "quickjs-emscripten-core";

import { Agent } from "../src/agent.js";
import { runAgentLoop, type BeforeToolCall } from "../src/agent-loop.js";
import { main } from "../src/cli/main.js";
import { installBridge, prelude, replyJson, runnerSource, type BridgeHost } from "../src/codemode/bridge.js";
import { capOutput, CODEMODE_NAME, codemodeTool, MAX_RECORDED_CALLS, type CodemodeDetails } from "../src/codemode/codemode-tool.js";
import { codemodeDescription, toolDeclaration, typeOfSchema } from "../src/codemode/declarations.js";
import { quickJsModule, runSandboxed, SANDBOX_GRACE_MS, type SandboxLimits } from "../src/codemode/sandbox.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { defineTool, executeToolCall, ToolRegistry, type AgentTool, type ToolExposure } from "../src/tools.js";
import { formatEvalTable } from "../src/eval/report.js";
import { runEvalTask } from "../src/eval/run.js";
import { scriptCalled } from "../src/eval/checks.js";
import { VISIBLE_TASKS } from "../src/eval/tasks.js";
import { decideScript } from "../src/offline-model.js";
import { createRuntime } from "../src/runtime.js";
import { currentTools, text, textOf, userMessage, type AgentMessage, type ToolCall, type ToolDefinition, type ToolResultMessage } from "../src/types.js";

// ── 场景：几个小工具、一个脚本模型、很小的限制 ───────────────────

const clock = { now: () => 1_000 };
// 截止时刻从宿主开始运行算起，连 worker 的启动也算在里面：两核的机器很忙时，启动一个 worker 就可能要几百毫秒。
// 所以只有要等到超时的那几项用 400 ms（SHORT），别的都留足 3 秒，它们本来也远用不到。
const LIMITS: SandboxLimits = { timeoutMs: 3_000, memoryBytes: 4 * 1024 * 1024, stackBytes: 256 * 1024 };
const SHORT: SandboxLimits = { ...LIMITS, timeoutMs: 400 };

function call(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

function say(words: string): ScriptedTurn {
  return { kind: "reply", content: [text(words)], stopReason: "stop" };
}

function script(id: string, code: string): ScriptedTurn {
  return { kind: "reply", content: [call(id, CODEMODE_NAME, { code })], stopReason: "toolUse" };
}

/** 一个记着自己被调用了几次的工具：参数是 { city }，结果是一句话。 */
function cityTool(name: string, exposure?: ToolExposure) {
  const runs: unknown[] = [];
  const tool = defineTool({
    name,
    description: `Look up ${name} for a city.`,
    parameters: s.object({ city: s.string() }),
    exposure,
    async execute(args) {
      runs.push(args);
      return { content: [text(`${name}:${args.city}`)] };
    },
  });
  return { tool, runs };
}

function results(messages: readonly AgentMessage[]): ToolResultMessage[] {
  return messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
}

/** 模型发来一段脚本，循环执行它，模型再说一句话。交回 codemode 的那条结果。 */
async function runScript(code: string, tools: AgentTool<any>[], extra: { beforeToolCall?: BeforeToolCall; limits?: Partial<SandboxLimits>; maxOutputChars?: number } = {}) {
  const all: AgentTool<any>[] = [...tools];
  all.push(codemodeTool({ tools: () => all, limits: extra.limits ?? LIMITS, maxOutputChars: extra.maxOutputChars }));
  const model = new ScriptedModel([script("c1", code), say("done")], clock);
  const run = await runAgentLoop({ model, messages: [], tools: new ToolRegistry(all), beforeToolCall: extra.beforeToolCall, ...clock });
  const [result] = results(run.messages);
  return { result: result!, details: result!.details as CodemodeDetails, run };
}

// ── 16.1 从 JSON Schema 到声明 ──────────────────────────────────

test("16.1 JSON Schema 写成 TypeScript 类型：必填与可选、数组、嵌套对象、枚举；认不出的写 unknown", () => {
  assert.equal(typeOfSchema({ type: "string" }), "string");
  assert.equal(typeOfSchema({ type: "integer" }), "number");
  assert.equal(typeOfSchema({ type: "boolean" }), "boolean");
  assert.equal(typeOfSchema({ type: "array", items: { type: "number" } }), "number[]");
  assert.equal(typeOfSchema({ type: "array", items: { enum: ["a", "b"] } }), '("a" | "b")[]');
  assert.equal(typeOfSchema({ enum: ["low", "high"] }), '"low" | "high"');
  assert.equal(
    typeOfSchema({
      type: "object",
      properties: { path: { type: "string" }, offset: { type: "integer" }, "dry-run": { type: "boolean" }, edits: { type: "array", items: { type: "object", properties: { oldText: { type: "string" } }, required: ["oldText"] } } },
      required: ["path", "edits"],
    }),
    '{ path: string; offset?: number; "dry-run"?: boolean; edits: { oldText: string }[] }',
  );
  assert.equal(typeOfSchema({ type: "object" }), "Record<string, unknown>");
  assert.equal(typeOfSchema({ type: "object", properties: {} }), "{}");
  assert.equal(typeOfSchema({ anyOf: [{ type: "string" }] }), "unknown");
  assert.equal(typeOfSchema({ type: "array" }), "unknown[]");
});

test("16.1 每个工具一段声明：说明写成注释，名字不是标识符时加引号；codemode 的说明以 declare const tools 收尾", () => {
  const weather = { name: "weather", description: "Get the forecast.\nCities only.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
  const track = { name: "shipping-track", description: "Track a parcel.", parameters: { type: "object", properties: {}, required: [] } };
  assert.equal(toolDeclaration(weather), "  // Get the forecast.\n  // Cities only.\n  weather(args: { city: string }): Promise<string>;");
  assert.equal(toolDeclaration(track), '  // Track a parcel.\n  "shipping-track"(args: {}): Promise<string>;');
  const description = codemodeDescription([weather, track]);
  assert.match(description, /body of an async function/);
  assert.ok(description.endsWith(`declare const tools: {\n${toolDeclaration(weather)}\n${toolDeclaration(track)}\n};`));
  assert.ok(codemodeDescription([]).endsWith("declare const tools: {};"));
});

// ── 16.2 桥与序言（直接在这个线程里开一个 QuickJS） ─────────────

const RELEASE_SYNC = ((releaseSync as { default?: unknown }).default ?? releaseSync) as never;

/** 在一个新的 VM 里装上桥、跑序言与脚本，一直跑到脚本的结局出来；交回结局的 JSON 与宿主看到的一切。 */
async function inVm(code: string, answer: (name: string, argsJson: string) => string | Promise<string>) {
  const QuickJS = await newQuickJSWASMModuleFromVariant(RELEASE_SYNC);
  const runtime = QuickJS.newRuntime();
  const vm = runtime.newContext();
  const seen: { calls: [string, string][]; logs: [string, string][]; sleeps: number[] } = { calls: [], logs: [], sleeps: [] };
  const host: BridgeHost = {
    call: async (name, argsJson) => {
      seen.calls.push([name, argsJson]);
      return answer(name, argsJson);
    },
    log: (level, line) => void seen.logs.push([level, line]),
    sleep: async (ms) => void seen.sleeps.push(ms),
  };
  const bridge = installBridge(vm, host, () => {});
  vm.unwrapResult(vm.evalCode(prelude())).dispose();
  const finished = vm.unwrapResult(vm.evalCode(runnerSource(code)));
  try {
    for (let round = 0; round < 50; round += 1) {
      runtime.executePendingJobs();
      const state = vm.getPromiseState(finished);
      if (state.type === "fulfilled") {
        const outcome = JSON.parse(vm.getString(state.value)) as { ok: boolean; value?: string; error?: string };
        state.value.dispose();
        const globals = vm.unwrapResult(vm.evalCode("[typeof __piCall, typeof __piLog, typeof __piSleep].join()"));
        const leftovers = vm.getString(globals);
        globals.dispose();
        return { outcome, seen, leftovers, inFlight: bridge.inFlight };
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error("脚本没有结束");
  } finally {
    finished.dispose();
    bridge.dispose();
    vm.dispose();
    runtime.dispose();
  }
}

test("16.2 桥只过字符串：tools.<name>(args) 把参数写成 JSON 交给宿主，ok 的回答兑现为文字，失败的回答只让那一个调用 reject", { timeout: 5_000 }, async () => {
  const { outcome, seen, inFlight } = await inVm(
    `const a = await tools.weather({ city: "Berlin" });
     let b;
     try { await tools.broken({}); } catch (error) { b = error instanceof Error ? error.message : "not an Error"; }
     const c = await tools["shipping-track"]();
     return { a, b, c };`,
    (name, argsJson) => (name === "broken" ? replyJson({ ok: false, error: "no such city" }) : replyJson({ ok: true, value: `${name} got ${argsJson}` })),
  );
  assert.deepEqual(seen.calls, [["weather", '{"city":"Berlin"}'], ["broken", "{}"], ["shipping-track", "{}"]]);
  const thrown = await inVm(`try { await tools.explode({}); } catch (error) { return error.message; }`, () => {
    throw new Error("host side failed");
  });
  assert.deepEqual(thrown.outcome, { ok: true, value: '"host side failed"' }, "宿主这边失败了，脚本里也只是那一个调用 reject");
  assert.equal(outcome.ok, true);
  assert.deepEqual(JSON.parse(outcome.value!), { a: 'weather got {"city":"Berlin"}', b: "no such city", c: "shipping-track got {}" });
  assert.equal(inFlight, 0);
  // 脚本不等就返回：宿主的 Promise 还没兑现，deferred 还活着；桥的 dispose() 放掉它，运行时才释放得干净
  const abandoned = await inVm(`tools.slow({}); return "left"`, () => new Promise<string>(() => {}));
  assert.deepEqual([abandoned.outcome, abandoned.inFlight], [{ ok: true, value: '"left"' }, 1]);
});

test("16.2 序言拿走宿主函数；console 被捕获；setTimeout 给出点名 sleep 的英文错误，sleep 由宿主计时；返回值写不成 JSON 也是一句话", { timeout: 5_000 }, async () => {
  const logged = await inVm(`console.log("n =", 1, { k: [2] }); console.warn("careful"); await sleep(25); return null`, () => "");
  assert.equal(logged.leftovers, "undefined,undefined,undefined", "宿主的三个函数在序言之后不在全局里");
  assert.deepEqual(logged.seen.logs, [["log", 'n = 1 {"k":[2]}'], ["warn", "careful"]]);
  assert.deepEqual(logged.seen.sleeps, [25]);
  assert.deepEqual(logged.outcome, { ok: true, value: "null" });

  const timer = await inVm(`await new Promise((resolve) => setTimeout(resolve, 10)); return 1`, () => "");
  assert.equal(timer.outcome.ok, false);
  assert.match(timer.outcome.error!, /setTimeout is not available in a codemode script; use `await sleep\(ms\)` to wait\./);

  const cyclic = await inVm(`const a = {}; a.self = a; return a`, () => "");
  assert.equal(cyclic.outcome.ok, false);
  assert.match(cyclic.outcome.error!, /The returned value is not JSON-serialisable/);
});

// ── 16.3 worker 里的 QuickJS 与它的限制 ─────────────────────────

test("16.3 脚本在 worker 里的 QuickJS 中运行：return 的值写成 JSON 交回，console 一并交回；WebAssembly 只编译一次", { timeout: 5_000 }, async () => {
  const first = await runSandboxed(`console.log("hi"); return { sum: 1 + 2, list: [1, "two"] }`, { limits: LIMITS });
  assert.deepEqual(first, { ok: true, value: '{"sum":3,"list":[1,"two"]}', logs: [{ level: "log", line: "hi" }] });
  assert.equal(await quickJsModule(), await quickJsModule(), "每次运行共用同一个编译好的模块");
  const second = await runSandboxed(`return typeof globalThis.sum`, { limits: LIMITS });
  assert.deepEqual(second, { ok: true, value: '"undefined"', logs: [] }, "每次运行都是一个新的 VM");
  const noTools = await runSandboxed(`try { await tools.read({}); } catch (error) { return error.message; }`, { limits: LIMITS });
  assert.deepEqual(noTools, { ok: true, value: '"No tools are available here."', logs: [] });
  const failing = await runSandboxed(`try { await tools.read({}); } catch (error) { return error.message; }`, {
    limits: LIMITS,
    callTool: async () => {
      throw new Error("tool host broke");
    },
  });
  assert.deepEqual(failing, { ok: true, value: '"tool host broke"', logs: [] });
  const chatty = await runSandboxed(`for (let i = 0; i < 205; i++) console.log(i); return 0`, { limits: LIMITS, maxLogLines: 200 });
  assert.equal(chatty.logs.length, 201, "console 最多留 200 行，多出的只计数");
  assert.deepEqual(chatty.logs.at(-1), { level: "warn", line: "[5 more console lines dropped]" });
});

test("16.3 够不着宿主：process 不存在", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`return [typeof process, typeof globalThis.process].join()`, { limits: LIMITS });
  assert.deepEqual(result, { ok: true, value: '"undefined,undefined"', logs: [] });
});

test("16.3 够不着宿主：require 不存在", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`return [typeof require, typeof module].join()`, { limits: LIMITS });
  assert.deepEqual(result, { ok: true, value: '"undefined,undefined"', logs: [] });
});

test("16.3 够不着宿主：import() 加载不了任何模块", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`const fs = await import("node:fs"); return typeof fs.readFileSync`, { limits: LIMITS });
  assert.equal(result.ok, false);
  assert.equal(result.ok ? "" : result.kind, "script");
});

test("16.3 够不着宿主：顺着 globalThis.constructor.constructor 爬到的只是 VM 自己的 Function，拿不到 process", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`return typeof globalThis.constructor.constructor("return process")()`, { limits: LIMITS });
  assert.equal(result.ok, false, `constructor 逃逸拿到了宿主的 process：${JSON.stringify(result)}`);
  assert.match(result.ok ? "" : result.message, /process/);
});

test("16.3 够不着宿主：fetch 不存在", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`return [typeof fetch, typeof XMLHttpRequest, typeof WebSocket].join()`, { limits: LIMITS });
  assert.deepEqual(result, { ok: true, value: '"undefined,undefined,undefined"', logs: [] });
});

test("16.3 node:vm 不是边界：同一段逃逸交给 node-vm-worker 就拿到宿主的 process；它的 timeout 只停得下同步的死循环", { timeout: 5_000 }, async () => {
  const nodeVm = new URL("../src/codemode/node-vm-worker.js", import.meta.url);
  const escaped = await runSandboxed(`return typeof globalThis.constructor.constructor("return process")()`, { limits: LIMITS, workerUrl: nodeVm });
  assert.deepEqual(escaped, { ok: true, value: '"object"', logs: [] }, "node:vm 里顺着 constructor 爬到了宿主的 Function");
  const called = await runSandboxed(`return await tools.echo({ a: 1 })`, { limits: LIMITS, workerUrl: nodeVm, callTool: async (name, argsJson) => replyJson({ ok: true, value: `${name} ${argsJson}` }) });
  assert.deepEqual(called, { ok: true, value: '"echo {\\"a\\":1}"', logs: [] });
  const thrown = await runSandboxed(`throw new Error("x")`, { limits: LIMITS, workerUrl: nodeVm });
  assert.equal(thrown.ok ? "ok" : thrown.kind, "script");
  const unparsable = await runSandboxed("return (", { limits: LIMITS, workerUrl: nodeVm });
  assert.equal(unparsable.ok ? "ok" : unparsable.kind, "script");
  const spun = await runSandboxed("for (;;) {}", { limits: SHORT, workerUrl: nodeVm });
  assert.equal(spun.ok ? "ok" : spun.kind, "timeout");
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const waited = await runSandboxed("await sleep(2000); return 1", { limits: LIMITS, workerUrl: nodeVm, signal: controller.signal });
  assert.equal(waited.ok ? "ok" : waited.kind, "aborted");
});

test("16.3 截止时刻：for(;;){} 与 while (true) await null 都以 timeout 结束，不用宿主杀线程", { timeout: 5_000 }, async () => {
  for (const code of ["for (;;) {}", "while (true) await null"]) {
    const started = Date.now();
    const result = await runSandboxed(code, { limits: SHORT });
    assert.equal(result.ok ? "ok" : result.kind, "timeout", code);
    assert.match(result.ok ? "" : result.message, /did not finish within 400 ms/);
    assert.ok(Date.now() - started < SHORT.timeoutMs + SANDBOX_GRACE_MS, `${code} 应当由 VM 自己在截止时刻停下，而不是等宿主的后备`);
  }
});

test("16.3 截止时刻把等工具的时间也算进去：工具还没回来就 timeout，它的 signal 被触发", { timeout: 5_000 }, async () => {
  let called = false;
  let cancelled = false;
  // 截止时刻 1.5 秒：机器再忙，脚本也来得及发出这次调用；工具要 10 秒，截止时刻一定先到。
  const result = await runSandboxed(`return await tools.slow({})`, {
    limits: { ...LIMITS, timeoutMs: 1_500 },
    callTool: (_name, _args, signal) =>
      new Promise((resolve) => {
        called = true;
        const timer = setTimeout(() => resolve(replyJson({ ok: true, value: "late" })), 10_000);
        signal.addEventListener("abort", () => {
          cancelled = true;
          clearTimeout(timer);
          resolve(replyJson({ ok: false, error: "cancelled" }));
        });
      }),
  });
  assert.equal(called, true, "脚本发出了这次工具调用");
  assert.equal(result.ok ? "ok" : result.kind, "timeout");
  assert.equal(cancelled, true, "还没回来的工具调用经 signal 取消");
});

test("16.3 内存上限：失控的分配以 out of memory 结束，下一次运行照常", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`const rows = []; for (let i = 0; i < 2e6; i++) rows.push({ i, label: "row " + i }); return rows.length`, { limits: LIMITS });
  assert.equal(result.ok ? "ok" : result.kind, "script");
  assert.match(result.ok ? "" : result.message, /out of memory/);
  const later = await runSandboxed(`await 0; const rows = []; for (let i = 0; i < 2e6; i++) rows.push({ i, label: "row " + i }); return rows.length`, { limits: LIMITS });
  assert.deepEqual(later.ok ? ["ok"] : [later.kind, later.message], ["script", "InternalError: out of memory"], "在 await 之后用光内存也是 script 的 out of memory");
  assert.deepEqual(await runSandboxed(`return "still here"`, { limits: LIMITS }), { ok: true, value: '"still here"', logs: [] });
  const buffers = await runSandboxed(`return [typeof ArrayBuffer, typeof Uint8Array].join()`, { limits: LIMITS });
  assert.deepEqual(buffers, { ok: true, value: '"undefined,undefined"', logs: [] }, "类型化数组的缓冲区绕得过内存上限，所以不给");
});

test("16.3 栈的上限：深递归以 stack overflow 结束，深度由 stackBytes 决定", { timeout: 5_000 }, async () => {
  const result = await runSandboxed(`const down = (n) => (n === 0 ? 0 : 1 + down(n - 1)); return down(1e6)`, { limits: LIMITS });
  assert.equal(result.ok ? "ok" : result.kind, "script");
  assert.match(result.ok ? "" : result.message, /stack overflow/);
  const depth = async (stackBytes: number) => {
    const counted = await runSandboxed(`let depth = 0; const down = () => { depth++; down(); }; try { down(); } catch { return depth; }`, { limits: { ...LIMITS, stackBytes } });
    return counted.ok ? Number(counted.value) : Number.NaN;
  };
  const [small, large] = [await depth(64 * 1024), await depth(256 * 1024)];
  assert.ok(small > 50 && small < large, `64 KB 的栈（${small} 层）应当比 256 KB 的（${large} 层）浅`);
});

test("16.3 worker 崩溃、不再回话都报 sandbox；调用方取消报 aborted；等一个谁也不会兑现的 Promise 立刻报 script", { timeout: 5_000 }, async (t: TestContext) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-16-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const crashing = path.join(dir, "crash.mjs");
  await writeFile(crashing, "process.exit(7);\n");
  const crashed = await runSandboxed("return 1", { limits: LIMITS, workerUrl: pathToFileURL(crashing) });
  assert.equal(crashed.ok ? "ok" : crashed.kind, "sandbox");
  assert.match(crashed.ok ? "" : crashed.message, /exited \(code 7\)/);
  const throwing = path.join(dir, "throw.mjs");
  await writeFile(throwing, 'throw new Error("boom");\n');
  const thrownCrash = await runSandboxed("return 1", { limits: LIMITS, workerUrl: pathToFileURL(throwing) });
  assert.equal(thrownCrash.ok ? "ok" : thrownCrash.kind, "sandbox");
  assert.match(thrownCrash.ok ? "" : thrownCrash.message, /The sandbox worker crashed: boom/);

  const silent = path.join(dir, "silent.mjs");
  await writeFile(silent, "setInterval(() => {}, 1000);\n");
  const started0 = Date.now();
  const hung = await runSandboxed("return 1", { limits: { ...LIMITS, timeoutMs: 100 }, workerUrl: pathToFileURL(silent) });
  assert.equal(hung.ok ? "ok" : hung.kind, "sandbox");
  assert.match(hung.ok ? "" : hung.message, /stopped answering 1000 ms after its deadline/);
  assert.ok(Date.now() - started0 < 100 + SANDBOX_GRACE_MS + 1_000, "不回话的 worker 在截止时刻加宽限之后被 terminate");

  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  const aborted = await runSandboxed("for (;;) {}", { limits: LIMITS, signal: controller.signal });
  assert.equal(aborted.ok ? "ok" : aborted.kind, "aborted");

  const started = Date.now();
  const stuck = await runSandboxed("await new Promise(() => {})", { limits: LIMITS });
  assert.equal(stuck.ok ? "ok" : stuck.kind, "script");
  assert.match(stuck.ok ? "" : stuck.message, /nothing will ever settle/);
  assert.ok(Date.now() - started < LIMITS.timeoutMs - 500, "不白等到截止时刻");

  // QuickJS 的 wasm 编译不出来：一份新加载的 sandbox 模块（它还没缓存编译好的 wasm）报 sandbox。
  const fresh = new URL("../src/codemode/sandbox.js", import.meta.url);
  fresh.search = "?unloadable";
  const { runSandboxed: runUnloadable } = (await import(fresh.href)) as typeof import("../src/codemode/sandbox.js");
  const wasmApi = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<unknown> } }).WebAssembly;
  const compile = t.mock.method(wasmApi, "compile", () => Promise.reject(new Error("no wasm here")));
  const unloadable = await runUnloadable("return 1", { limits: LIMITS });
  compile.mock.restore();
  assert.deepEqual(unloadable, { ok: false, kind: "sandbox", message: "QuickJS could not be loaded: Error: no wasm here", logs: [] });
});

// ── 16.4 codemode 工具 ──────────────────────────────────────────

test("16.4 脚本调用两个工具、交回 JSON：嵌套调用的 id 是 <父>/<n>，参数照样检查，只记在 details 里、不进 transcript", { timeout: 5_000 }, async () => {
  const weather = cityTool("weather");
  const time = cityTool("local_time");
  const { result, details, run } = await runScript(
    `const [w, t] = await Promise.all([tools.weather({ city: "Oslo" }), tools.local_time({ city: "Oslo" })]);
     let bad;
     try { await tools.weather({ town: "Oslo" }); } catch (error) { bad = error.message; }
     return { w, t, bad };`,
    [weather.tool, time.tool],
  );
  assert.equal(result.isError, false);
  const value = JSON.parse(textOf(result).replace(/^Result: /, "")) as { w: string; t: string; bad: string };
  assert.deepEqual([value.w, value.t], ["weather:Oslo", "local_time:Oslo"]);
  assert.match(value.bad, /参数不合法/, "嵌套调用照样按 schema 检查参数");
  assert.deepEqual(weather.runs, [{ city: "Oslo" }]);
  assert.deepEqual(
    details.calls.map(({ id, name, isError }) => [id, name, isError]),
    [["c1/1", "weather", false], ["c1/2", "local_time", false], ["c1/3", "weather", true]],
  );
  assert.equal(details.callCount, 3);
  assert.equal(details.argumentBytes, '{"city":"Oslo"}'.length * 2 + '{"town":"Oslo"}'.length);
  assert.equal(details.outcome, "ok");
  assert.equal(results(run.messages).length, 1, "嵌套调用不是 transcript 里单独的消息");
});

test("16.4 嵌套调用过第 12 章的钩子：被拦下的只让它自己的 Promise reject；model-only 工具在脚本里被拒，deferred 工具不必先声明", { timeout: 5_000 }, async () => {
  const weather = cityTool("weather");
  const secret = cityTool("secret");
  const searchOnly = cityTool("model_only_tool", "model-only");
  const later = cityTool("later_tool", "deferred");
  const seen: string[] = [];
  const beforeToolCall: BeforeToolCall = async ({ toolCall }) => {
    seen.push(toolCall.id);
    return toolCall.name === "secret" ? { block: true, reason: "secret is not allowed" } : undefined;
  };
  const { result } = await runScript(
    `const out = [];
     for (const name of ["secret", "model_only_tool", "later_tool", "weather"]) {
       try { out.push(await tools[name]({ city: "Rome" })); } catch (error) { out.push("rejected: " + error.message); }
     }
     return out;`,
    [weather.tool, secret.tool, searchOnly.tool, later.tool],
    { beforeToolCall },
  );
  const out = JSON.parse(textOf(result).replace(/^Result: /, "")) as string[];
  assert.equal(out[0], "rejected: secret is not allowed");
  assert.match(out[1]!, /can only be called directly by the model, not from a script/);
  assert.equal(out[2], "later_tool:Rome", "deferred 工具在脚本里随时能调用");
  assert.equal(out[3], "weather:Rome", "一个调用失败不影响后面的调用");
  assert.deepEqual(seen, ["c1", "c1/1", "c1/2", "c1/3", "c1/4"], "模型的调用与脚本里的调用都过 beforeToolCall");
  assert.deepEqual(secret.runs, []);
});

test("16.4 输出有上限：交给模型（也写进会话）的文字截断并写明截掉多少；details 最多记 20 个调用", { timeout: 5_000 }, async () => {
  const weather = cityTool("weather");
  const { result, details } = await runScript(
    `for (let i = 0; i < 25; i++) await tools.weather({ city: "c" + i }); console.log("x".repeat(500)); return "y".repeat(500)`,
    [weather.tool],
    { maxOutputChars: 300 },
  );
  assert.equal(result.isError, false);
  const body = textOf(result);
  assert.ok(body.startsWith(`Result: "${"y".repeat(290)}`));
  const marker = /\n\[… (\d+) more characters truncated\]$/.exec(body);
  assert.ok(marker, "截断的地方写明截掉了多少");
  assert.equal(body.length, 300 + marker[0].length);
  assert.equal(details.truncatedChars, Number(marker[1]));
  assert.ok(details.truncatedChars > 600);
  assert.equal(details.calls.length, MAX_RECORDED_CALLS);
  assert.deepEqual(capOutput("x".repeat(10), 10), { text: "x".repeat(10), cut: 0 }, "恰好等于上限不截");
  assert.deepEqual(capOutput("x".repeat(11), 10), { text: `${"x".repeat(10)}\n[… 1 more characters truncated]`, cut: 1 });
  assert.equal(details.callCount, 25);
});

test("16.4 每种失败都是配对的 isError 结果，details 写着种类；调用方取消时脚本停下、运行以 aborted 结束", { timeout: 5_000 }, async () => {
  const thrown = await runScript(`console.warn("about to fail"); throw new TypeError("bad input")`, []);
  assert.equal(thrown.result.isError, true);
  assert.equal(thrown.result.toolCallId, "c1");
  assert.equal(textOf(thrown.result), "Script failed (script): TypeError: bad input\nConsole:\n[warn] about to fail");
  assert.equal(thrown.details.outcome, "script");

  const slow = await runScript(`for (;;) {}`, [], { limits: SHORT });
  assert.equal(slow.result.isError, true);
  assert.equal(slow.details.outcome, "timeout");
  assert.match(textOf(slow.result), /^Script failed \(timeout\): The script did not finish within 400 ms/);

  const all: AgentTool<any>[] = [];
  all.push(codemodeTool({ tools: () => all, limits: LIMITS }));
  const controller = new AbortController();
  const model = new ScriptedModel([script("c9", "await sleep(2000); return 1"), say("never")], clock);
  setTimeout(() => controller.abort(), 100);
  const started = Date.now();
  const run = await runAgentLoop({ model, messages: [], tools: new ToolRegistry(all), signal: controller.signal, ...clock });
  assert.equal(run.reason, "aborted");
  assert.ok(Date.now() - started < 1_900, "取消之后脚本马上停下，不等 sleep(2000) 到点");
  const [aborted] = results(run.messages);
  assert.equal(aborted?.isError, true);
  assert.equal((aborted?.details as CodemodeDetails).outcome, "aborted");
});

test("16.4 没有循环给的 callTool（直接 executeToolCall）：脚本里的调用得到一句说明，只让那一个调用 reject", { timeout: 5_000 }, async () => {
  const weather = cityTool("weather");
  const tool = codemodeTool({ tools: () => [weather.tool], limits: LIMITS });
  const result = await executeToolCall(new ToolRegistry([tool]), call("d1", CODEMODE_NAME, { code: `try { await tools.weather({ city: "Oslo" }); } catch (error) { return error.message; }` }), { signal: new AbortController().signal, ...clock });
  assert.equal(result.isError, false, textOf(result));
  assert.equal(textOf(result), 'Result: "This host cannot run tool calls from a script."');
  assert.deepEqual(weather.runs, []);
});

test("16.4 说明列出脚本能调用的工具：model-only、hidden 与 codemode 自己不在；工具集变了，下一次 prompt 重新声明 codemode", { timeout: 5_000 }, async () => {
  const weather = cityTool("weather");
  const helper = cityTool("script_helper", "codemode");
  const hidden = cityTool("hidden_tool", "hidden");
  const only = cityTool("model_only_tool", "model-only");
  const tools: AgentTool<any>[] = [weather.tool, helper.tool, hidden.tool, only.tool];
  const box: { agent?: Agent } = {};
  const codemode = codemodeTool({ tools: () => box.agent?.tools ?? tools, limits: LIMITS });
  const model = new ScriptedModel([say("one"), say("two")], clock);
  const agent = new Agent({ model, systemPrompt: "s", tools: [...tools, codemode], ...clock });
  box.agent = agent;
  assert.match(codemode.description, /weather\(args: \{ city: string \}\)/);
  assert.match(codemode.description, /script_helper\(args/);
  assert.doesNotMatch(codemode.description, /hidden_tool|model_only_tool|codemode\(/);
  await agent.prompt("first");
  const later = cityTool("timezone");
  agent.setTools([...agent.tools, later.tool]);
  await agent.prompt("second");
  const [first, second] = model.requests;
  const described = (messages: readonly AgentMessage[]) => currentTools(messages).find((tool) => tool.name === CODEMODE_NAME)?.description ?? "";
  assert.doesNotMatch(described(first!.messages), /timezone/);
  assert.match(described(second!.messages), /timezone\(args: \{ city: string \}\)/, "可调用的工具变了，codemode 的说明跟着变");
});

async function project(t: TestContext) {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-course-16-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const cwd = path.join(root, "project");
  await mkdir(path.join(cwd, "src"), { recursive: true });
  await writeFile(path.join(cwd, "README.md"), "# 星图\n\n一个画星座的小工具。\n");
  await writeFile(path.join(cwd, "src", "main.ts"), "export {};\n");
  return { cwd, agentDir: path.join(root, "agent") };
}

test("16.4 离线的 tiny-pi 用 codemode：提示说“用脚本”，它交一段调用 read 与 ls 的脚本（ls 没有声明也能调），再说出脚本交回的 JSON", { timeout: 8_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const runtime = await createRuntime({ cwd, agentDir, env: {}, codemode: true, ...clock });
  assert.ok(runtime.session.agent.tools.some((tool) => tool.name === CODEMODE_NAME), "createRuntime 给了 codemode 选项就有 codemode 工具");
  await runtime.session.prompt("用脚本看看这个项目");
  await runtime.dispose();
  const ran = results(runtime.session.messages);
  assert.deepEqual(ran.map((result) => [result.toolName, result.isError]), [["codemode", false]], "脚本里的调用不是单独的消息");
  const details = ran[0]!.details as CodemodeDetails;
  assert.deepEqual(details.calls.map((nested) => [nested.name, nested.isError]), [["read", false], ["ls", false]]);
  const answer = runtime.session.messages.at(-1);
  assert.equal(answer?.role === "assistant" ? textOf(answer) : "", '脚本交回：{"title":"星图","entries":["README.md","src/"]}');

  // tiny-pi 命令总是打开 codemode：-p 打印的就是离线模型的那句回答。
  const stdout = new PassThrough();
  const printed: Buffer[] = [];
  stdout.on("data", (chunk: Buffer) => printed.push(chunk));
  const code = await main(["-p", "用脚本看看这个项目"], { stdin: new PassThrough(), stdout, stderr: new PassThrough(), env: { PI_COURSE_AGENT_DIR: agentDir }, cwd });
  assert.equal(code, 0);
  assert.equal(Buffer.concat(printed).toString("utf8"), '脚本交回：{"title":"星图","entries":["README.md","src/"]}\n');

  const codemodeDef: ToolDefinition = { name: CODEMODE_NAME, description: "", parameters: { type: "object" } };
  const asked = userMessage("用脚本数一数", 1);
  const toolResult = (toolName: string, body: string, isError: boolean): ToolResultMessage => ({ role: "toolResult", toolCallId: "x", toolName, content: [text(body)], isError, timestamp: 2 });
  assert.equal(decideScript([userMessage("请读取 README", 1)], [codemodeDef]), undefined, "没说“用脚本”就交给后面的规则");
  assert.equal(decideScript([asked, toolResult("read", "别的结果", false)], [codemodeDef])?.kind, "call", "别的工具的结果不算脚本跑过");
  assert.deepEqual(decideScript([asked, toolResult(CODEMODE_NAME, "Result: 3", false)], [codemodeDef]), { kind: "answer", text: "脚本交回：3" });
  assert.deepEqual(decideScript([asked, toolResult(CODEMODE_NAME, "Script failed (timeout): late", true)], [codemodeDef]), { kind: "answer", text: "脚本没有跑通：Script failed (timeout): late" });

  const without = await createRuntime({ cwd, agentDir, env: {}, ...clock });
  await without.session.prompt("用脚本看看这个项目");
  await without.dispose();
  const last = without.session.messages.at(-1);
  assert.equal(last?.role === "assistant" ? textOf(last) : "", "这次请求里没有 codemode 工具，我写不了脚本。", "没给 codemode 选项就没有这个工具");
});

test("16.4 eval 的 script-two-tools 在真正的 runtime 上通过；scriptCalled 抓得住调用错了的脚本", { timeout: 8_000 }, async () => {
  const task = VISIBLE_TASKS.find((candidate) => candidate.id === "script-two-tools");
  assert.ok(task, "eval 里有 script-two-tools 这个任务");
  const report = await runEvalTask(task);
  assert.ok(report.ok, formatEvalTable([report]));
  const twice = 'await tools.read({ path: "package.json" }); return await tools.read({ path: "CHANGELOG.md" })';
  const wrong = await runEvalTask({ ...task, id: "script-wrong", turns: [script("x1", twice), say("orbit 1.4.0")] });
  const failed = wrong.checks.filter((check) => !check.ok).map((check) => check.reason);
  assert.deepEqual(failed, ["脚本调用的是 read、read，应当是 read、bash"]);

  // 只数 codemode 的结果：会话里别的工具结果不算；codemode 的结果多了一条也要报出来。
  const check = scriptCalled("read");
  const entry = (message: ToolResultMessage) => ({ type: "message", message }) as never;
  const codemodeResult = (calls: { name: string; isError?: boolean }[]): ToolResultMessage => ({ role: "toolResult", toolCallId: "c", toolName: CODEMODE_NAME, content: [text("Result: 1")], isError: false, details: { calls }, timestamp: 1 });
  const other: ToolResultMessage = { role: "toolResult", toolCallId: "r", toolName: "read", content: [text("x")], isError: false, timestamp: 1 };
  const judge = async (entries: never[]) => check.run({ workspace: "", entries, requests: [], events: [], finalAnswer: "" });
  assert.deepEqual(await judge([entry(other), entry(codemodeResult([{ name: "read", isError: false }]))]), { ok: true, reason: "脚本调用了 read，都成功了" });
  assert.deepEqual(await judge([entry(codemodeResult([{ name: "read", isError: false }])), entry(codemodeResult([{ name: "read", isError: false }]))]), { ok: false, reason: "会话里 codemode 的结果有 2 条，应当是 1 条" });
  assert.deepEqual(await judge([entry(codemodeResult([{ name: "read" }]))]), { ok: false, reason: "脚本里有工具调用出错或没有回来" });
});
