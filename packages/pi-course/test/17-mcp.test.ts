import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { mkdtempSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import test, { after, type TestContext } from "node:test";

import { blockText, mcpToolName, McpToolSet, resultContent, schemaFromJson, TOOL_NAME_PATTERN } from "../src/mcp/adapter.js";
import { loadMcpConfig, parseMcpConfig } from "../src/mcp/config.js";
import { encodeLine, LineDecoder } from "../src/mcp/lines.js";
import { METHOD_NOT_FOUND, RpcClient, RpcError } from "../src/mcp/rpc.js";
import { McpSession, PROTOCOL_VERSION, type McpSessionOptions, type McpSessionState } from "../src/mcp/session.js";
import { childEnv, StdioTransport, TextTail } from "../src/mcp/stdio.js";
import { mcpResult } from "../src/eval/checks.js";
import { formatEvalTable } from "../src/eval/report.js";
import { runEvalTask } from "../src/eval/run.js";
import { say, use, VISIBLE_TASKS } from "../src/eval/tasks.js";
import type { EvalContext } from "../src/eval/types.js";
import { decideMcp } from "../src/offline-model.js";
import { createRuntime } from "../src/runtime.js";
import { toJsonSchema } from "../src/schema.js";
import { executeToolCall, ToolRegistry } from "../src/tools.js";
import { textOf, userMessage, type ToolResultMessage } from "../src/types.js";

// ── 场景：官方的两个服务器，和一个做它们不做的事的小服务器 ─────────

const require = createRequire(import.meta.url);

/** 一个 npm 包的可执行入口：读它 package.json 的 bin，不联网、不经过 npx。 */
function binOf(name: string): string {
  const manifest = require.resolve(`${name}/package.json`);
  const bin = (require(manifest) as { bin: Record<string, string> }).bin;
  return path.join(path.dirname(manifest), Object.values(bin)[0]!);
}

const FILESYSTEM = binOf("@modelcontextprotocol/server-filesystem");
const EVERYTHING = binOf("@modelcontextprotocol/server-everything");

/**
 * 小服务器：一个不用 SDK 的 Node 脚本，第一个参数是它的脾气。
 *   silent-init   initialize 永远不回答        old-version   回答 2024-11-05
 *   repeat-cursor tools/list 的游标绕回来      deaf          不理 stdin 的 EOF（SIGTERM 照常生效）
 *   stubborn      不理 stdin 的 EOF 与 SIGTERM，自己再开一个同样倔的子进程
 *   endless       tools/list 永远有新的下一页，每页往 stderr 写一句 page N
 *   twice         第二个参数是计数文件：前两次启动照常，之后一启动就退出（重启也会失败）
 * 工具：echo、crash（写一句 stderr 再退出）、never（永远不回答）、slow（报进度）、huge（先写一行超长的）、
 * last-ping（服务器问过的 ping 得到了什么）、cancelled（收到过的 notifications/cancelled）、add-extra / drop-extra（工具变了）、
 * fail（isError 的结果）、break-list（此后 tools/list 的回答坏掉，再通知工具变了）。
 */
const FIXTURE = String.raw`
const mode = process.argv[2] ?? "normal";
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
// 测试进程没了（被杀、超时）还没人来关：成了孤儿 5 秒之后自己退出，不在机器上留进程。
// 5 秒比测试等进程消失的 3 秒长：SIGKILL 漏掉了谁，测试照样看得见。
const ORPHAN = "const parent = process.ppid; let orphaned = 0; setInterval(() => { if (process.ppid !== parent && (orphaned ||= Date.now()) < Date.now() - 5000) process.exit(0); }, 500).unref();";
eval(ORPHAN);
if (mode === "twice") {
  const fs = await import("node:fs");
  const starts = fs.existsSync(process.argv[3]) ? Number(fs.readFileSync(process.argv[3], "utf8")) + 1 : 1;
  fs.writeFileSync(process.argv[3], String(starts));
  if (starts > 2) { process.stderr.write("fixture: start " + starts + " refused\n"); process.exit(1); }
}
if (mode === "stubborn") {
  process.on("SIGTERM", () => {});
  const { spawn } = await import("node:child_process");
  const child = spawn(process.execPath, ["-e", ORPHAN + " process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
  send({ method: "pids", params: { pid: process.pid, child: child.pid } });
  setInterval(() => {}, 1000);
}
let tools = ["echo", "crash", "never", "slow", "huge", "last-ping", "cancelled", "add-extra", "drop-extra", "weird", "nocontent", "fail", "break-list"];
let lastPing = "none";
let brokenList = false;
let pages = 0;
const cancelled = [];
const schema = { type: "object", properties: { text: { type: "string" }, steps: { type: "number" }, ms: { type: "number" } } };
const info = (name) => ({ name, description: "fixture tool " + name, inputSchema: name === "weird" ? { type: "object", properties: { x: { anyOf: [{ type: "string" }, { type: "number" }] } } } : schema });
const reply = (id, text) => send({ id, result: { content: [{ type: "text", text }] } });
function handle(message) {
  if (message.id === "s1") { lastPing = JSON.stringify(message); return; }
  if (message.method === "notifications/cancelled") { cancelled.push(message.params.requestId); return; }
  if (message.method === "notifications/initialized") {
    if (mode === "ping") send({ id: "s1", method: "ping" });
    return;
  }
  if (message.method === "initialize") {
    if (mode === "silent-init") { process.stderr.write("fixture: thinking about initialize forever\n"); return; }
    const version = mode === "old-version" ? "2024-11-05" : message.params.protocolVersion;
    return send({ id: message.id, result: { protocolVersion: version, capabilities: { tools: { listChanged: true } }, serverInfo: { name: "fixture", version: "1" } } });
  }
  if (message.method === "tools/list") {
    const cursor = message.params?.cursor;
    if (mode === "bad-list" || brokenList) return send({ id: message.id, result: { tools: "none" } });
    if (mode === "endless") { pages += 1; process.stderr.write("page " + pages + "\n"); return send({ id: message.id, result: { tools: [], nextCursor: "c" + pages } }); }
    if (mode === "repeat-cursor") return send({ id: message.id, result: { tools: [info("echo")], nextCursor: cursor === "a" ? "b" : "a" } });
    if (cursor === undefined) return send({ id: message.id, result: { tools: tools.slice(0, 2).map(info), nextCursor: "page-2" } });
    return send({ id: message.id, result: { tools: tools.slice(2).map(info) } });
  }
  if (message.method === "tools/call") {
    const { name, arguments: args } = message.params;
    const token = message.params._meta?.progressToken;
    if (name === "echo") return reply(message.id, "echo:" + args.text);
    if (name === "nocontent") return send({ id: message.id, result: {} });
    if (name === "fail") return send({ id: message.id, result: { content: [{ type: "text", text: "fixture says no" }], isError: true } });
    if (name === "break-list") { brokenList = true; reply(message.id, "ok"); return send({ method: "notifications/tools/list_changed" }); }
    if (name === "crash") { process.stderr.write("boom: fixture crashed on purpose\n"); setTimeout(() => process.exit(3), 10); return; }
    if (name === "never") return;
    if (name === "huge") { process.stdout.write("x".repeat(5000) + "\n"); return reply(message.id, "after the huge line"); }
    if (name === "last-ping") return reply(message.id, lastPing);
    if (name === "cancelled") return reply(message.id, JSON.stringify(cancelled));
    if (name === "add-extra" || name === "drop-extra") {
      tools = name === "add-extra" ? [...tools, "extra"] : tools.filter((tool) => tool !== "extra" && tool !== "echo");
      reply(message.id, "ok");
      return send({ method: "notifications/tools/list_changed" });
    }
    if (name === "slow") {
      let step = 0;
      const timer = setInterval(() => {
        step += 1;
        send({ method: "notifications/progress", params: { progressToken: token, progress: step, total: args.steps } });
        if (step === args.steps) { clearInterval(timer); reply(message.id, "slow done"); }
      }, args.ms);
      return;
    }
    return send({ id: message.id, error: { code: -32602, message: "unknown tool " + name } });
  }
}
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (line.trim() !== "") handle(JSON.parse(line));
  }
});
if (mode === "deaf") setInterval(() => {}, 1000);
process.stdin.on("end", () => { if (mode !== "stubborn" && mode !== "deaf") process.exit(0); });
`;

// 文件级的临时目录：钩子挂在整个文件上（在某个测试里调用 after 只挂在那个测试上）。
const fixtureDir = mkdtempSync(path.join(os.tmpdir(), "pi-course-17-fixture-"));
after(() => rm(fixtureDir, { recursive: true, force: true }));

let fixtureFile: Promise<string> | undefined;
function fixture(): Promise<string> {
  fixtureFile ??= (async () => {
    const file = path.join(fixtureDir, "fixture-server.mjs");
    await writeFile(file, FIXTURE);
    await mkdir(path.join(fixtureDir, "fs"));
    await writeFile(path.join(fixtureDir, "fs", "notes.txt"), "第一行\n第二行\n");
    return file;
  })();
  return fixtureFile;
}

/**
 * 安全网：测试启动的每个进程组都记下来，文件结束时一律 SIGKILL。正常时它们早已不在；
 * 断言半路失败、或者被测的 close() 本身坏了，子进程（它们自成进程组，不随测试进程退出）也不会留在机器上。
 */
const spawned = new Set<number>();
function track(pid: number | undefined): void {
  if (pid !== undefined) spawned.add(pid);
}
after(() => {
  for (const pid of spawned) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // 已经不在了
    }
  }
});

function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** 一个小服务器的会话；测试结束时关掉，并确认子进程真的没了。 */
async function fixtureSession(t: TestContext, mode: string, extra: Partial<McpSessionOptions> = {}): Promise<McpSession> {
  const onState = extra.onState;
  const session: McpSession = new McpSession({
    name: "fx",
    command: process.execPath,
    args: [await fixture(), mode],
    timeoutMs: 2_000,
    graceMs: 200,
    ...extra,
    onState: (state) => {
      track(session.pid);
      onState?.(state);
    },
  });
  const start = session.start.bind(session);
  session.start = () => {
    const started = start();
    track(session.pid);
    return started;
  };
  t.after(async () => {
    const pid = session.pid;
    await session.close();
    assert.equal(isAlive(pid), false, "会话关闭之后子进程不在了");
  });
  return session;
}

/** 官方服务器：每个文件只连一次（启动要零点几秒），最后一起关。 */
const shared: McpSession[] = [];
after(async () => {
  const pids = shared.map((session) => session.pid);
  await Promise.all(shared.map((session) => session.close()));
  for (const pid of pids) assert.equal(isAlive(pid), false, "官方服务器的子进程不在了");
});

let everythingSession: Promise<McpSession> | undefined;
function everything(): Promise<McpSession> {
  everythingSession ??= (async () => {
    const session = new McpSession({
      name: "everything",
      command: process.execPath,
      args: [EVERYTHING, "stdio"],
      parentEnv: { ...process.env, PI_COURSE_API_KEY: "sk-course-secret" },
      timeoutMs: 8_000,
    });
    shared.push(session);
    const started = session.start();
    track(session.pid);
    await started;
    return session;
  })();
  return everythingSession;
}

const filesystemRoot = path.join(fixtureDir, "fs");
let filesystemSession: Promise<McpSession> | undefined;
function filesystem(): Promise<McpSession> {
  filesystemSession ??= (async () => {
    await fixture();
    const session = new McpSession({ name: "fs", command: process.execPath, args: [FILESYSTEM, filesystemRoot], cwd: filesystemRoot, timeoutMs: 8_000 });
    shared.push(session);
    const started = session.start();
    track(session.pid);
    await started;
    return session;
  })();
  return filesystemSession;
}

function until(condition: () => boolean, ms = 3_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const timer = setInterval(() => {
      if (condition()) {
        clearInterval(timer);
        resolve();
      } else if (Date.now() - started > ms) {
        clearInterval(timer);
        reject(new Error("等不到期望的状态"));
      }
    }, 10);
  });
}

/** 一个不接传输的 RpcClient：发出去的消息记在 sent 里。 */
function loopback() {
  const sent: Record<string, unknown>[] = [];
  const notifications: string[] = [];
  const rpc = new RpcClient({ send: (message) => sent.push(message), onNotification: (method) => notifications.push(method) });
  return { rpc, sent, notifications };
}

// ── 17.1 一行一条消息与 JSON-RPC ────────────────────────────────

test("17.1 一行一条消息：半行留到下一块补完，一块里的几行各交一条，坏行报告后跳过，超长的行丢到下一个换行为止", () => {
  assert.equal(encodeLine({ a: "x\ny" }), '{"a":"x\\ny"}\n', "消息里的换行写成 \\n，一条消息就是一行");
  const decoder = new LineDecoder(32);
  assert.deepEqual(decoder.push('{"id":1,'), { messages: [], problems: [] }, "半行留在缓冲里");
  assert.deepEqual(decoder.push('"ok":true}\n{"id":2}\n{"id"'), { messages: [{ id: 1, ok: true }, { id: 2 }], problems: [] });
  assert.deepEqual(decoder.push(":3}\n\n"), { messages: [{ id: 3 }], problems: [] }, "空行不算问题");
  decoder.push('{"a"');
  decoder.push(":");
  assert.deepEqual(decoder.push("7}\n").messages, [{ a: 7 }], "三块才凑成的一行");
  decoder.push('{"b":1}');
  assert.deepEqual(decoder.push('\n{"c":2}\n').messages, [{ b: 1 }, { c: 2 }], "换行正好在一块的开头");
  const exact = `{"k":"${"q".repeat(24)}"}`;
  assert.equal(Buffer.byteLength(exact), 32);
  assert.deepEqual(decoder.push(exact), { messages: [], problems: [] }, "正好 32 字节的半行不算超长");
  assert.deepEqual(decoder.push("\n").messages, [{ k: "q".repeat(24) }]);
  assert.deepEqual(decoder.push(`${exact}\n`), { messages: [{ k: "q".repeat(24) }], problems: [] }, "正好 32 字节的一行不算超长");
  const bad = decoder.push('Server listening on stdio\n{"id":4}\n');
  assert.deepEqual(bad.messages, [{ id: 4 }]);
  assert.match(bad.problems[0] ?? "", /跳过一行不是 JSON 的输出：Server listening/);
  assert.deepEqual(new LineDecoder().push(`${"日志".repeat(50)}\n`).problems, [`跳过一行不是 JSON 的输出：${"日志".repeat(40)}`], "问题里只带这一行的前 80 个字符");
  const long = decoder.push("y".repeat(40));
  assert.deepEqual(long.messages, []);
  assert.deepEqual(long.problems, ["丢弃一行超过 32 字节的消息。"], "缓冲超过上限就丢掉，不等换行");
  assert.deepEqual(decoder.push("yyyy\n"), { messages: [], problems: [] }, "这一行剩下的部分也丢掉");
  assert.deepEqual(decoder.push('{"id":5}\n'), { messages: [{ id: 5 }], problems: [] }, "下一行照常");
  assert.deepEqual(decoder.push(`${"z".repeat(40)}\n{"id":6}\n`).problems, ["丢弃一行超过 32 字节的消息。"], "一块里完整的超长行也丢掉");
});

test("17.1 请求按 id 配对；服务器的 ping 得到空结果 {}，不认识的请求得到 -32601；通知交给 onNotification", async () => {
  const { rpc, sent, notifications } = loopback();
  const first = rpc.request("tools/list", {}, { timeoutMs: 1_000 });
  const second = rpc.request("tools/call", { name: "x" }, { timeoutMs: 1_000 });
  assert.deepEqual(sent.map((message) => [message.id, message.method]), [[1, "tools/list"], [2, "tools/call"]]);
  rpc.handle({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } });
  rpc.handle({ jsonrpc: "2.0", id: 2, result: { content: [] } });
  rpc.handle({ jsonrpc: "2.0", id: 1, error: { code: -32000, message: "nope" } });
  assert.deepEqual(await second, { content: [] }, "回答按 id 找到自己的请求，先后无所谓");
  await assert.rejects(first, (error: RpcError) => error.code === "remote" && error.rpcCode === -32000 && /nope/.test(error.message));
  rpc.handle({ jsonrpc: "2.0", id: "s1", method: "ping" });
  rpc.handle({ jsonrpc: "2.0", id: 9, method: "sampling/createMessage", params: {} });
  assert.deepEqual(sent.slice(2), [
    { jsonrpc: "2.0", id: "s1", result: {} },
    { jsonrpc: "2.0", id: 9, error: { code: METHOD_NOT_FOUND, message: "Method not found: sampling/createMessage" } },
  ]);
  rpc.handle({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  rpc.handle("not an object");
  assert.deepEqual(notifications, ["notifications/tools/list_changed"]);
  assert.equal(rpc.pendingCount, 0);
});

test("17.1 超时发出 notifications/cancelled、只拒绝这一个请求，迟到的回答被忽略，连接照旧能用", { timeout: 3_000 }, async () => {
  const { rpc, sent } = loopback();
  const slow = rpc.request("tools/call", { name: "slow" }, { timeoutMs: 40 });
  const other = rpc.request("tools/list", {}, { timeoutMs: 1_000 });
  await assert.rejects(slow, (error: RpcError) => error.code === "timeout" && error.message === "请求 tools/call 在 40 ms 内没有回答。");
  assert.deepEqual(sent[2], { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1, reason: "请求 tools/call 在 40 ms 内没有回答。" } });
  assert.equal(rpc.pendingCount, 1, "超时的那一项已经离开待决表");
  rpc.handle({ jsonrpc: "2.0", id: 1, result: { late: true } });
  rpc.handle({ jsonrpc: "2.0", id: 2, result: { tools: [] } });
  assert.deepEqual(await other, { tools: [] }, "别的请求不受影响");
  assert.equal(rpc.pendingCount, 0);
});

test("17.1 进度让期限重新开始，但不超过 maxTimeoutMs；调用方取消同样发 cancelled；close 一次拒绝所有待决的请求", { timeout: 3_000 }, async () => {
  const { rpc, sent } = loopback();
  const progress: unknown[] = [];
  const started = Date.now();
  // 期限 200 ms、上限 500 ms，每 25 ms 一条进度：机器再忙，两条进度之间也隔不到 200 ms，期限只会被进度延到上限
  const long = rpc.request("tools/call", { name: "long" }, { timeoutMs: 200, maxTimeoutMs: 500, onProgress: (params) => progress.push(params.progress) });
  assert.deepEqual(sent[0]?.params, { name: "long", _meta: { progressToken: 1 } }, "带 onProgress 的请求给出 progressToken");
  let ticks = 0;
  const ticker = setInterval(() => rpc.handle({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: ++ticks } }), 25);
  await assert.rejects(long, (error: RpcError) => error.code === "timeout");
  clearInterval(ticker);
  const waited = Date.now() - started;
  assert.ok(waited >= 480 && waited < 2_500, `进度延了期，但停在上限附近（等了 ${waited} ms）`);
  assert.ok(ticks >= 2 && progress.length >= ticks - 1, `每条进度都交给了 onProgress（发了 ${ticks} 条，收到 ${progress.length} 条）`);

  const controller = new AbortController();
  const aborted = rpc.request("tools/call", { name: "a" }, { timeoutMs: 1_000, signal: controller.signal });
  controller.abort();
  await assert.rejects(aborted, (error: RpcError) => error.code === "aborted");
  assert.deepEqual(sent.at(-1), { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2, reason: "请求 tools/call 被调用方取消了。" } });
  const kept = new AbortController();
  const answered = rpc.request("tools/list", {}, { timeoutMs: 1_000, signal: kept.signal });
  assert.equal(getEventListeners(kept.signal, "abort").length, 1);
  rpc.handle({ jsonrpc: "2.0", id: 3, result: { tools: [] } });
  await answered;
  assert.equal(getEventListeners(kept.signal, "abort").length, 0, "回答了就摘掉 signal 上的监听：一个一直用着的 signal 不会越挂越多");

  const pending = [rpc.request("a", {}, { timeoutMs: 1_000 }), rpc.request("b", {}, { timeoutMs: 1_000 })];
  rpc.close("连接断了");
  for (const request of pending) await assert.rejects(request, (error: RpcError) => error.code === "closed" && error.message === "连接断了");
  await assert.rejects(rpc.request("c", {}, { timeoutMs: 1_000 }), (error: RpcError) => error.code === "closed", "关了之后的请求立刻失败");
  assert.equal(rpc.pendingCount, 0);
});

// ── 17.2 stdio：子进程、环境、stderr、关闭 ───────────────────────

test("17.2 子进程只拿到允许名单上的环境变量和配置写明的：PI_COURSE_API_KEY 到不了服务器", { timeout: 5_000 }, async () => {
  const parent = { PATH: "/usr/bin", HOME: "/home/me", PI_COURSE_API_KEY: "sk-secret", AWS_SECRET_ACCESS_KEY: "x" };
  assert.deepEqual(childEnv(parent, { FS_ROOT: "/tmp" }), { PATH: "/usr/bin", HOME: "/home/me", FS_ROOT: "/tmp" });
  const messages: unknown[] = [];
  const transport = new StdioTransport({
    command: process.execPath,
    args: ["-e", "process.stdout.write(JSON.stringify(process.env) + '\\n')"],
    parentEnv: { ...process.env, PI_COURSE_API_KEY: "sk-secret" },
    env: { GIVEN: "yes" },
    onMessage: (message) => messages.push(message),
  });
  track(transport.pid);
  await transport.exited;
  const env = messages[0] as Record<string, string>;
  assert.equal(env.PI_COURSE_API_KEY, undefined, "密钥不在子进程的环境里");
  assert.equal(env.GIVEN, "yes");
  assert.equal(env.PATH, process.env.PATH);
});

test("17.2 stderr 只留最后一段；关闭先关 stdin，不理 EOF 的收到 SIGTERM，连 SIGTERM 也不理的整个进程组收到 SIGKILL", { timeout: 12_000 }, async () => {
  const tail = new TextTail(8);
  tail.push("0123456");
  tail.push("789ab");
  assert.equal(tail.toString(), "456789ab");

  const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;
  const before = timers();
  // 宽限给足 6 秒：机器忙时小服务器光启动就要几百毫秒，它读到 EOF 退出也远远用不了 4 秒；真等了宽限才是错。
  const polite = new StdioTransport({ command: process.execPath, args: [await fixture(), "normal"], graceMs: 6_000, onMessage: () => {} });
  track(polite.pid);
  const started = Date.now();
  await polite.close();
  assert.ok(Date.now() - started < 4_000, "读到 EOF 就退出的服务器不用等宽限");
  assert.equal(timers(), before, "进程退出了，宽限的计时器也清掉了：关完之后不留计时器");

  const deafExits: unknown[] = [];
  const deaf = new StdioTransport({ command: process.execPath, args: [await fixture(), "deaf"], graceMs: 150, onMessage: () => {}, onExit: (exit) => deafExits.push(exit) });
  track(deaf.pid);
  await deaf.close();
  assert.deepEqual(deafExits, [{ code: null, signal: "SIGTERM" }], "不理 EOF 的服务器在宽限之后收到 SIGTERM");

  const pids: { pid: number; child: number }[] = [];
  const exits: unknown[] = [];
  const stubborn = new StdioTransport({
    command: process.execPath,
    args: [await fixture(), "stubborn"],
    graceMs: 150,
    onMessage: (message) => pids.push((message as { params: { pid: number; child: number } }).params),
    onExit: (exit) => exits.push(exit),
  });
  track(stubborn.pid);
  await until(() => pids.length === 1);
  const closing = Date.now();
  await stubborn.close();
  const took = Date.now() - closing;
  assert.ok(took >= 280, `等了两次宽限（${took} ms）`);
  assert.deepEqual(exits, [{ code: null, signal: "SIGKILL" }]);
  await until(() => !isAlive(pids[0]!.child));
  assert.equal(isAlive(pids[0]!.pid), false);
  assert.equal(stubborn.running, false);
});

// ── 17.3 会话：握手、翻页、调用、变化、崩溃与重启 ──────────────

test("17.3 与官方 server-everything 握手（2025-11-25）、列出工具、调用 echo；get-env 证明 PI_COURSE_API_KEY 不在服务器里", { timeout: 20_000 }, async () => {
  const session = await everything();
  assert.equal(session.state.kind, "ready");
  const names = session.tools.map((tool) => tool.name);
  for (const name of ["echo", "get-env", "get-sum", "get-tiny-image"]) assert.ok(names.includes(name), `列出了 ${name}`);
  const echoed = await session.callTool("echo", { message: "你好" });
  assert.match(JSON.stringify(echoed.content), /你好/);
  const env = await session.callTool("get-env", {});
  const body = JSON.stringify(env.content);
  assert.match(body, /PATH/, "get-env 交回了服务器的环境");
  assert.doesNotMatch(body, /PI_COURSE_API_KEY|sk-course-secret/);
  assert.equal(PROTOCOL_VERSION, "2025-11-25");
});

test("17.3 tools/list 跟着 nextCursor 翻页；同一个游标第二次出现就报错，不是死循环", { timeout: 8_000 }, async (t) => {
  const paged = await fixtureSession(t, "normal");
  await paged.start();
  assert.deepEqual(paged.tools.map((tool) => tool.name).slice(0, 4), ["echo", "crash", "never", "slow"], "两页的工具都在");
  assert.equal(paged.tools.length, 13);
  const looping = await fixtureSession(t, "repeat-cursor");
  await assert.rejects(looping.start(), /tools\/list 第二次给出游标 a：停止翻页/);
  const bad = await fixtureSession(t, "bad-list");
  await assert.rejects(bad.start(), /MCP 服务器 fx 的 tools\/list 回答里没有 tools。/);
  // 游标从不重复的服务器：正好翻 100 页就停（stderr 的最后一行是它写下的页数）。
  const endless = await fixtureSession(t, "endless");
  await assert.rejects(endless.start(), (error: Error) => /MCP 服务器 fx 的工具超过 100 页：停止翻页。/.test(error.message) && error.message.endsWith("\npage 100"));
  await assert.rejects(paged.callTool("nocontent", {}), /MCP 服务器 fx 的 tools\/call 回答里没有 content。/);
  await paged.close();
  await assert.rejects(paged.listTools(), /MCP 服务器 fx 现在不可用：会话已经关闭。/);
  await assert.rejects(paged.callTool("echo", { text: "x" }), /MCP 服务器 fx 现在不可用：会话已经关闭。/);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual([paged.state.kind, paged.restarts], ["closed", 0], "自己关掉的会话不重启");
});

test("17.3 initialize 不回答就超时、版本不对就断开；错误带着 stderr 的尾巴，子进程被关掉", { timeout: 8_000 }, async (t) => {
  // 超时留足 1.5 秒：小服务器要先启动、读到 initialize、写下那句 stderr，机器忙时启动一个 node 就要几百毫秒。
  const silent = await fixtureSession(t, "silent-init", { timeoutMs: 1_500 });
  await assert.rejects(silent.start(), (error: Error) => /没能启动：请求 initialize 在 1500 ms 内没有回答/.test(error.message) && /thinking about initialize forever/.test(error.message));
  assert.equal(isAlive(silent.pid), false);
  const old = await fixtureSession(t, "old-version");
  await assert.rejects(old.start(), /服务器说的协议版本是 2024-11-05，本客户端只说 2025-11-25/);
});

test("17.3 调用带着进度、超时发 cancelled 而连接照旧；服务器发来的 ping 得到 {}；超长的一行报告后跳过", { timeout: 20_000 }, async (t) => {
  const problems: string[] = [];
  const session = await fixtureSession(t, "ping", { maxTimeoutMs: 8_000, maxLineBytes: 3_000, onProblem: (problem) => problems.push(problem) });
  await session.start();
  // 启动留足时间（机器忙时启动一个 node 就要几百毫秒），之后每个请求只等 1 秒。
  // 进度每 250 ms 一条、一共 1.25 秒：长过期限，只有进度让期限重新开始才等得到；两条进度之间
  // 还差 750 ms 才到期限，两个 npm test 同时跑在两个核上时小服务器卡一下也不会误判超时。
  session.options.timeoutMs = 1_000;
  assert.deepEqual((await session.callTool("slow", { steps: 5, ms: 250 })).content, [{ type: "text", text: "slow done" }], "每 250 ms 一条进度，1.25 秒也等得到");
  await assert.rejects(session.callTool("never", {}), /请求 tools\/call 在 1000 ms 内没有回答/);
  const cancelled = await session.callTool("cancelled", {});
  assert.equal(cancelled.content[0]?.text, "[5]", "服务器收到了那个请求的 notifications/cancelled");
  const ping = JSON.parse(String((await session.callTool("last-ping", {})).content[0]?.text));
  assert.deepEqual(ping, { jsonrpc: "2.0", id: "s1", result: {} });
  assert.equal((await session.callTool("huge", {})).content[0]?.text, "after the huge line");
  assert.deepEqual(problems, ["MCP 服务器 fx：丢弃一行超过 3000 字节的消息。"]);
  // 没给 maxTimeoutMs：报着进度的调用最多等 timeoutMs 的 4 倍。
  const requests = t.mock.method(RpcClient.prototype, "request");
  session.options.maxTimeoutMs = undefined;
  await session.callTool("echo", { text: "期限" });
  const options = requests.mock.calls.find((call) => call.arguments[0] === "tools/call")?.arguments[2];
  assert.deepEqual([options?.timeoutMs, options?.maxTimeoutMs], [1_000, 4_000], "maxTimeoutMs 默认是 timeoutMs 的 4 倍");
});

test("17.3 崩溃：待决的调用一次全被拒绝、原因带着 stderr；此刻调用立刻失败；有限次地重启，工具又能调用", { timeout: 8_000 }, async (t) => {
  const states: McpSessionState["kind"][] = [];
  const problems: string[] = [];
  let early: Promise<string> | undefined;
  // 重启的间隔：restartDelayMs × 2^次数。记下会话排的每个短计时器（RPC 的超时是 2 秒、宽限是 200 ms，不混进来）。
  const delays: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  t.mock.method(globalThis, "setTimeout", ((callback: () => void, ms?: number) => {
    if (ms !== undefined && ms < 150) delays.push(ms);
    return realSetTimeout(callback, ms);
  }) as typeof setTimeout);
  const session = await fixtureSession(t, "twice", {
    args: [await fixture(), "twice", path.join(fixtureDir, "twice-starts")],
    maxRestarts: 3,
    restartDelayMs: 20,
    onProblem: (p) => problems.push(p),
    onState: (state) => {
      states.push(state.kind);
      // 正在重启（还没握手）时的调用也立刻失败，不会抢在 initialize 前面发出去。
      if (state.kind === "starting") early ??= session.callTool("echo", { text: "early" }).then(() => "answered", (error: Error) => error.message);
    },
  });
  await session.start();
  const waiting = session.callTool("never", {});
  const crashing = session.callTool("crash", {});
  for (const call of [waiting, crashing]) await assert.rejects(call, /MCP 服务器 fx 退出了（退出码 3）。\nstderr 的最后几行：\nboom: fixture crashed on purpose/);
  assert.equal(session.state.kind, "down");
  await assert.rejects(session.callTool("echo", { text: "x" }), /MCP 服务器 fx 现在不可用：MCP 服务器 fx 退出了/);
  await assert.rejects(session.listTools(), /MCP 服务器 fx 现在不可用：MCP 服务器 fx 退出了/);
  await until(() => session.state.kind === "ready");
  assert.equal((await session.callTool("echo", { text: "又来了" })).content[0]?.text, "echo:又来了");
  assert.equal(await early, "MCP 服务器 fx 现在不可用：它还没有就绪（正在启动或重启）。");
  // 第三次启动起小服务器一启动就退出：起不来的重启也算一次，会话回到 down，隔着翻倍的间隔再试，用完次数就停下。
  await assert.rejects(session.callTool("crash", {}), /退出了/);
  await until(() => problems.length > 0);
  assert.deepEqual(problems, ["MCP 服务器 fx 已经重启了 3 次，不再重启。"]);
  assert.deepEqual(states, ["ready", "down", "starting", "ready", "down", "starting", "down", "starting", "down"]);
  assert.deepEqual(delays, [20, 40, 80], "每次重启前的间隔翻倍");
  assert.match(session.state.kind === "down" ? session.state.reason : "", /没能启动：MCP 服务器 fx 退出了（退出码 1）。\nstderr 的最后几行：\nfixture: start 4 refused/);
});

test("17.3 list_changed：重新列出工具交给 onToolsChanged；列不出来只报一句，工具照旧", { timeout: 8_000 }, async (t) => {
  const changes: string[][] = [];
  const problems: string[] = [];
  const session = await fixtureSession(t, "normal", { onToolsChanged: (tools) => changes.push(tools.map((tool) => tool.name)), onProblem: (problem) => problems.push(problem) });
  await session.start();
  await session.callTool("add-extra", {});
  await until(() => changes.length === 1);
  assert.ok(changes[0]!.includes("extra"));
  await session.callTool("break-list", {});
  await until(() => problems.length === 1);
  assert.deepEqual(problems, ["MCP 服务器 fx 没能重新列出工具：MCP 服务器 fx 的 tools/list 回答里没有 tools。"]);
  assert.equal(changes.length, 1, "列不出来就不通知 onToolsChanged");
  assert.ok(session.tools.some((tool) => tool.name === "extra"), "工具还是上一次列出的");
});

// ── 17.4 进注册表：名字、参数、结果、配置、tiny-pi ───────────────

test("17.4 名字：mcp__<服务器>__<工具>，不合规的字符换成 _，过长或撞名时接上 8 位哈希，同一个原名总得到同一个名字", () => {
  assert.equal(mcpToolName("fs", "read_text_file"), "mcp__fs__read_text_file");
  assert.equal(mcpToolName("fs", "read.file v2"), "mcp__fs__read_file_v2");
  const collided = mcpToolName("fs", "read file", new Set(["mcp__fs__read_file"]));
  assert.match(collided, /^mcp__fs__read_file_[0-9a-f]{8}$/);
  assert.equal(mcpToolName("fs", "read file", new Set(["mcp__fs__read_file"])), collided, "稳定：同一个原名同一个哈希");
  const long = mcpToolName("server", "t".repeat(80));
  assert.equal(long.length, 64);
  assert.match(long, TOOL_NAME_PATTERN);
  assert.match(long, /_[0-9a-f]{8}$/);
  assert.notEqual(mcpToolName("server", `${"t".repeat(80)}a`), long, "截短之后也分得开");
  assert.equal(mcpToolName("s", "x".repeat(56)), `mcp__s__${"x".repeat(56)}`, "正好 64 个字符不截");
});

test("17.4 inputSchema 翻译成课程的 schema（必填、可选、数组、范围）；写不出来的类型说明是哪一处", () => {
  const schema = schemaFromJson({
    type: "object",
    properties: { path: { type: "string", description: "where" }, head: { type: "number", minimum: 1, maximum: 9 }, tags: { type: "array", items: { type: "string" } }, all: { type: "boolean" }, n: { type: "integer" } },
    required: ["path"],
  });
  assert.deepEqual(toJsonSchema(schema), {
    type: "object",
    properties: {
      path: { type: "string", description: "where" },
      head: { type: "number", minimum: 1, maximum: 9 },
      tags: { type: "array", items: { type: "string" } },
      all: { type: "boolean" },
      n: { type: "integer" },
    },
    required: ["path"],
    additionalProperties: false,
  });
  assert.throws(() => schemaFromJson({ type: "object", properties: { x: { anyOf: [] } } }), /参数\.x 的类型 undefined 课程的 schema 写不出来/);
  assert.throws(() => schemaFromJson(null), /^Error: 参数 不是一个 schema。$/);
  assert.throws(() => schemaFromJson({ type: "array" }), /参数\[\] 不是一个 schema。/);
  assert.deepEqual(toJsonSchema(schemaFromJson({ type: "object" })), { type: "object", properties: {}, required: [], additionalProperties: false }, "没写 properties 的对象没有字段");
});

test("17.4 结果映射成文字：text 原样，image 只写占位，只有 structuredContent 时写 JSON，resource_link 写成“名字: uri”", { timeout: 20_000 }, async () => {
  assert.equal(blockText({ type: "text", text: "hi" }), "hi");
  assert.equal(blockText({ type: "image", mimeType: "image/png", data: "AAAA" }), "[image image/png, 3 bytes: not shown, this model reads text only]");
  assert.equal(blockText({ type: "resource_link", name: "notes", uri: "file:///notes.txt" }), "notes: file:///notes.txt");
  assert.equal(blockText({ type: "audio", mimeType: "audio/wav" }), "[audio audio/wav, 0 bytes: not shown, this model reads text only]");
  assert.equal(blockText({ type: "resource", resource: { uri: "file:///a", text: "inline" } }), "inline");
  assert.deepEqual(resultContent({ content: [], structuredContent: { temp: 3 } }), [{ type: "text", text: '{"temp":3}' }]);

  const set = new McpToolSet(await everything(), { exposure: "direct" });
  const registry = new ToolRegistry();
  set.sync(registry);
  const run = (name: string, args: unknown) => executeToolCall(registry, { type: "toolCall", id: name, name, arguments: args }, { signal: new AbortController().signal });
  const image = await run("mcp__everything__get-tiny-image", {});
  assert.equal(image.isError, false);
  assert.ok(image.content.some((block) => /^\[image image\/png, \d+ bytes: not shown/.test(block.text)), textOf(image));
  assert.ok(image.content.every((block) => block.text.length < 500), "base64 没有倒进文字里");
  const links = await run("mcp__everything__get-resource-links", { count: 2 });
  assert.match(textOf(links), /: (demo|test|file|https?):\/\//);
  const sum = await run("mcp__everything__get-sum", { a: 2, b: 3 });
  assert.match(textOf(sum), /5/);
  const invalid = await run("mcp__everything__get-sum", { a: "2" });
  assert.equal(invalid.isError, true, "参数照样先检查");
});

test("17.4 官方 server-filesystem 的工具进注册表：默认 deferred，脚本范围能调用；sync 跟着服务器登记新工具，去掉的调用失败并说明原因", { timeout: 20_000 }, async (t) => {
  const set = new McpToolSet(await filesystem());
  const registry = new ToolRegistry();
  const first = set.sync(registry);
  assert.ok(first.added.includes("mcp__fs__read_text_file"));
  const read = registry.get("mcp__fs__read_text_file")!;
  assert.equal(read.exposure, "deferred");
  assert.equal(registry.definitions().length, 0, "deferred 工具先不声明");
  const call = { type: "toolCall" as const, id: "r1", name: "mcp__fs__read_text_file", arguments: { path: path.join(filesystemRoot, "notes.txt") } };
  const refused = await executeToolCall(registry, call, { signal: new AbortController().signal });
  assert.match(textOf(refused), /Call `tool_search` first/);
  const result: ToolResultMessage = await executeToolCall(registry, call, { signal: new AbortController().signal, scope: "script" });
  assert.equal(textOf(result), "第一行\n第二行\n");
  assert.deepEqual(result.details, { kind: "mcp", server: "fs", tool: "read_text_file", structuredContent: { content: "第一行\n第二行\n" } }, "structuredContent 记在 details 里");

  const problems: string[] = [];
  const session = await fixtureSession(t, "normal");
  const fx = new McpToolSet(session, { exposure: "direct", onProblem: (problem) => problems.push(problem) });
  await session.start();
  const fxRegistry = new ToolRegistry();
  fx.sync(fxRegistry);
  assert.deepEqual(problems, ["跳过 MCP 服务器 fx 的工具 weird：参数.x 的类型 undefined 课程的 schema 写不出来。"]);
  const refusedByServer = await executeToolCall(fxRegistry, { type: "toolCall", id: "f", name: "mcp__fx__fail", arguments: {} }, { signal: new AbortController().signal });
  assert.deepEqual([refusedByServer.isError, textOf(refusedByServer)], [true, "fixture says no"], "服务器的 isError: true 照样是出错的工具结果");
  const synced = new Promise<{ added: string[]; removed: string[] }>((resolve) => {
    session.options.onToolsChanged = () => resolve(fx.sync(fxRegistry));
  });
  await session.callTool("drop-extra", {});
  assert.deepEqual(await synced, { added: [], removed: ["mcp__fx__echo"] });
  const gone = await executeToolCall(fxRegistry, { type: "toolCall", id: "e", name: "mcp__fx__echo", arguments: { text: "x" } }, { signal: new AbortController().signal });
  assert.equal(textOf(gone), "工具 mcp__fx__echo 执行失败：MCP 服务器 fx 已经不再提供工具 echo。");
  const again = new Promise<{ added: string[]; removed: string[] }>((resolve) => {
    session.options.onToolsChanged = () => resolve(fx.sync(fxRegistry));
  });
  await session.callTool("add-extra", {});
  assert.deepEqual(await again, { added: ["mcp__fx__extra"], removed: [] });
  assert.ok(fxRegistry.get("mcp__fx__extra"), "新工具登记进了注册表");
});

async function project(t: TestContext) {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-course-17-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const cwd = path.join(root, "project");
  const agentDir = path.join(root, "agent");
  await mkdir(path.join(cwd, ".pi"), { recursive: true });
  await mkdir(agentDir, { recursive: true });
  await writeFile(path.join(cwd, "notes.txt"), "MCP 读到的第一行\n第二行\n");
  return { cwd, agentDir };
}

test("17.4 配置：agent 目录的 mcp.json 总是读，项目的只在信任时读、同名以它为准；名字、command、exposure 写错的项跳过", async (t) => {
  const { cwd, agentDir } = await project(t);
  await writeFile(
    path.join(agentDir, "mcp.json"),
    JSON.stringify({ mcpServers: { fs: { command: "node", args: ["a.js"], env: { FS_MODE: "ro" }, timeoutMs: 5_000 }, "bad name": { command: "x" }, nocmd: {}, odd: { command: "x", exposure: "everywhere" } } }),
  );
  await writeFile(path.join(cwd, ".pi", "mcp.json"), JSON.stringify({ mcpServers: { fs: { command: "node", args: ["b.js"], exposure: "direct", cwd: "." } } }));
  const untrusted = await loadMcpConfig({ agentDir, cwd, trusted: false });
  assert.deepEqual(untrusted.servers.map((server) => [server.name, server.args, server.env, server.timeoutMs, server.exposure]), [["fs", ["a.js"], { FS_MODE: "ro" }, 5_000, "deferred"]]);
  assert.deepEqual(untrusted.problems.map((problem) => problem.replace(/^.*mcp\.json：/, "")), [
    "跳过服务器 bad name：名字只能用字母、数字、_ 与 -。",
    "跳过服务器 nocmd：command 应当是非空的字符串。",
    "跳过服务器 odd：exposure 应当是 direct、model-only、codemode、deferred、hidden 之一。",
  ]);
  for (const body of [{}, { mcpServers: [] }, { mcpServers: null }]) assert.deepEqual(parseMcpConfig(body, "x.json", cwd).problems, ["x.json：没有 mcpServers 对象。"], "数组与 null 也不是 mcpServers 对象");
  assert.deepEqual(
    parseMcpConfig({ mcpServers: { a: 5, b: { command: "x", args: "y" }, c: { command: "x", env: { K: 1 } }, d: { command: "x", timeoutMs: 0 }, e: { command: "x", timeoutMs: 1 } } }, "x.json", cwd).problems,
    ["x.json：跳过服务器 a：应当是一个对象。", "x.json：跳过服务器 b：args 应当是字符串的数组。", "x.json：跳过服务器 c：env 应当是值为字符串的对象。", "x.json：跳过服务器 d：timeoutMs 应当是正数。"],
  );
  assert.deepEqual(await loadMcpConfig({ agentDir: path.join(agentDir, "none"), cwd, trusted: false }), { servers: [], problems: [] }, "没有 mcp.json 不是问题");
  await mkdir(path.join(agentDir, "dir", "mcp.json"), { recursive: true });
  await mkdir(path.join(agentDir, "bad"));
  await writeFile(path.join(agentDir, "bad", "mcp.json"), "{ nope");
  assert.match((await loadMcpConfig({ agentDir: path.join(agentDir, "dir"), cwd, trusted: false })).problems[0] ?? "", /mcp\.json：读不了（/);
  assert.match((await loadMcpConfig({ agentDir: path.join(agentDir, "bad"), cwd, trusted: false })).problems[0] ?? "", /mcp\.json：不是 JSON（/);
  const trusted = await loadMcpConfig({ agentDir, cwd, trusted: true });
  assert.deepEqual(trusted.servers.map((server) => [server.name, server.args, server.exposure, server.cwd]), [["fs", ["b.js"], "direct", cwd]]);
});

test("17.4 组合根：项目的 .pi/mcp.json 只在 --trust（或记下的信任）时读；写错的项与起不来的服务器都只是警告", { timeout: 10_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await writeFile(path.join(agentDir, "mcp.json"), JSON.stringify({ mcpServers: { "bad name": { command: "x" } } }));
  await writeFile(path.join(cwd, ".pi", "mcp.json"), JSON.stringify({ mcpServers: { ghost: { command: path.join(cwd, "no-such-mcp-server") } } }));
  const warningsOf = async (trust: { once?: boolean } | undefined) => {
    const warnings: string[] = [];
    const runtime = await createRuntime({ cwd, agentDir, env: {}, trust, onWarning: (message) => warnings.push(message), now: () => 1_000 });
    await runtime.dispose();
    return warnings.filter((warning) => /MCP|服务器/.test(warning)).map((warning) => warning.replace(/^.*mcp\.json：/, "").replace(/退出了.*$/s, "退出了"));
  };
  assert.deepEqual(await warningsOf({ once: true }), ["跳过服务器 bad name：名字只能用字母、数字、_ 与 -。", "MCP 服务器 ghost 没能启动：MCP 服务器 ghost 退出了"]);
  assert.deepEqual(await warningsOf({}), ["跳过服务器 bad name：名字只能用字母、数字、_ 与 -。"], "还没决定过的项目不读");
  assert.deepEqual(await warningsOf(undefined), ["跳过服务器 bad name：名字只能用字母、数字、_ 与 -。"], "没给 trust 选项也不读");
});

test("17.4 tiny-pi 读 mcp.json：离线模型先 tool_search，再调用 filesystem 服务器的 read_text_file；关闭时服务器一起关", { timeout: 20_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await writeFile(path.join(agentDir, "mcp.json"), JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM, "."] } } }));
  const runtime = await createRuntime({ cwd, agentDir, env: { PI_COURSE_API_KEY: "sk-nope" }, now: () => 1_000 });
  await runtime.session.prompt("用 MCP 读 notes.txt");
  await runtime.dispose();
  const results = runtime.session.messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
  assert.deepEqual(results.map((result) => [result.toolName, result.isError]), [["tool_search", false], ["mcp__fs__read_text_file", false]]);
  const answer = runtime.session.messages.at(-1);
  assert.equal(answer?.role === "assistant" ? textOf(answer) : "", "MCP 服务器交回的第一行：MCP 读到的第一行");

  const ask = userMessage("用 MCP 读 a.txt", 1);
  const none = "这次请求里没有 MCP 服务器的 read_text_file，我读不了。";
  assert.deepEqual(decideMcp([ask], []), { kind: "answer", text: none }, "没有 tool_search 也没有读文件的工具");
  const searched: ToolResultMessage = { role: "toolResult", toolCallId: "s", toolName: "tool_search", content: [], isError: false, timestamp: 1 };
  const search = { name: "tool_search", description: "", parameters: {} };
  assert.deepEqual(decideMcp([ask, searched], [search]), { kind: "answer", text: none }, "找过一次还是没有，就不再找");
  assert.equal(decideMcp([ask], [search])?.kind, "call");
  const other: ToolResultMessage = { ...searched, toolName: "read" };
  const next = decideMcp([ask, other], [search]);
  assert.deepEqual([next?.kind, next?.kind === "call" ? next.name : undefined], ["call", "tool_search"], "别的工具的结果不算找过");
  assert.equal(decideMcp([userMessage("读 a.txt", 1)], [search]), undefined, "不是“用 MCP 读”的提示留给别的规则");
});

test("17.4 eval 的 mcp-read 在真正的 runtime 上通过（server-filesystem 真的启动）；mcpResult 抓得住没经过 MCP 的读", { timeout: 20_000 }, async () => {
  const task = VISIBLE_TASKS.find((candidate) => candidate.id === "mcp-read");
  assert.ok(task, "eval 里有 mcp-read 这个任务");
  const report = await runEvalTask(task);
  assert.ok(report.ok, formatEvalTable([report]));
  const wrong = await runEvalTask({ ...task, id: "mcp-wrong", turns: [use(["x1", "read", { path: "notes.txt" }]), say("发布日期是 3 月 14 日。")] });
  const failed = wrong.checks.filter((check) => !check.ok).map((check) => check.reason);
  assert.deepEqual(failed, ["2 次请求都没有声明 mcp__fs__read_text_file", "会话里没有 mcp__fs__read_text_file 的结果"]);
  const impostor: ToolResultMessage = { role: "toolResult", toolCallId: "x", toolName: "mcp__fs__read_text_file", content: [{ type: "text", text: "发布日期：3 月 14 日" }], isError: false, timestamp: 1 };
  const context = { workspace: "", entries: [{ type: "message", id: "e1", parentId: null, timestamp: 1, message: impostor }], requests: [], events: [], finalAnswer: "" } as unknown as EvalContext;
  assert.deepEqual(await mcpResult("mcp__fs__read_text_file", "发布日期").run(context), { ok: false, reason: "mcp__fs__read_text_file 的结果不是 MCP 服务器交回的" }, "同名却不是 MCP 服务器交回的结果不算");
  // 名字与 reason 里的片段只留前 30 个字符。
  const long = "发布日期：3 月 14 日，地点是二号会议室，主持人是王工，记录人是李工";
  const genuine = (body: string) => ({ ...context, entries: [{ type: "message", id: "e1", parentId: null, timestamp: 1, message: { ...impostor, content: [{ type: "text", text: body }], details: { kind: "mcp", server: "fs", tool: "read_text_file" } } }] }) as unknown as EvalContext;
  const check = mcpResult("mcp__fs__read_text_file", long);
  assert.equal(check.name, "MCP 工具 mcp__fs__read_text_file 交回了 “发布日期：3 月 14 日，地点是二号会议室，主持人是王工，…”");
  assert.deepEqual(await check.run(genuine(long)), { ok: true, reason: "mcp__fs__read_text_file 交回了 “发布日期：3 月 14 日，地点是二号会议室，主持人是王工，…”" });
  assert.deepEqual(await check.run(genuine("发布日期：3 月 14 日")), {
    ok: false,
    reason: "mcp__fs__read_text_file 交回的是 “发布日期：3 月 14 日”，里面没有 “发布日期：3 月 14 日，地点是二号会议室，主持人是王工，…”",
  });
});
