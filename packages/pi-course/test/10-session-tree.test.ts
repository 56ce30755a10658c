import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { appendFile, mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test, { type TestContext } from "node:test";

import { AgentSession } from "../src/agent-session.js";
import type { CustomMessage } from "../src/messages.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import {
  decodeLines,
  encodeEntry,
  SessionEntryError,
  type SessionEntry,
  type SessionMessageEntry,
} from "../src/session-entries.js";
import { InMemorySessionStore, JsonlSessionStore, type LoadedSession, type SessionStore } from "../src/session-store.js";
import { SessionTree, UNAVAILABLE_RESULT } from "../src/session-tree.js";
import { defineTool } from "../src/tools.js";
import { text, userMessage, type AgentMessage, type ToolCall } from "../src/types.js";

// ── 场景 ────────────────────────────────────────────────────────

const now = () => 1_000;
const STAMP = "1970-01-01T00:00:01.000Z";

/** 测试里的 id 可以预测：e1、e2、e3……（重新打开同一份会话时，撞上已有的 id 会自动往后找）。 */
function counter(): () => string {
  let next = 0;
  return () => `e${++next}`;
}

/** 每个测试自己的临时目录，测试结束时删掉。 */
async function tempDir(t: TestContext): Promise<{ file: (name: string) => string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-course-10-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return { file: (name) => path.join(dir, name) };
}

function messageEntry(id: string, parentId: string | null, message: AgentMessage): SessionMessageEntry {
  return { type: "message", id, parentId, timestamp: STAMP, message };
}

const q1 = messageEntry("a", null, userMessage("项目叫什么？", 1));
const a1 = messageEntry("b", "a", {
  role: "assistant",
  content: [text("叫 tiny-pi。")],
  provider: "scripted",
  model: "scripted-v1",
  usage: { input: 0, output: 0, totalTokens: 0 },
  stopReason: "stop",
  timestamp: 2,
});
const q2 = messageEntry("c", "b", userMessage("它有几个文件？", 3));

function lines(...entries: unknown[]): string[] {
  return entries.map((entry) => JSON.stringify(entry));
}

/** 断言一段代码抛出 SessionEntryError，并且错误说出了行、条目和字段。 */
function expectEntryError(run: () => unknown, expected: Partial<Pick<SessionEntryError, "code" | "line" | "field" | "entryId">>, says: string[]): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof SessionEntryError, `应当抛出 SessionEntryError，实际是 ${String(error)}`);
    for (const [key, value] of Object.entries(expected)) assert.equal(error[key as keyof SessionEntryError], value, `${key} 不对：${error.message}`);
    for (const words of says) assert.ok(error.message.includes(words), `错误信息应当包含「${words}」：${error.message}`);
    return true;
  });
}

async function rejectsWithEntryError(load: Promise<LoadedSession>, expected: Partial<Pick<SessionEntryError, "code" | "line" | "field">>): Promise<void> {
  await assert.rejects(load, (error: unknown) => {
    assert.ok(error instanceof SessionEntryError, `应当以 SessionEntryError 拒绝打开，实际是 ${String(error)}`);
    for (const [key, value] of Object.entries(expected)) assert.equal(error[key as keyof SessionEntryError], value, `${key} 不对：${error.message}`);
    return true;
  });
}

function say(words: string): ScriptedTurn {
  return { kind: "reply", content: [text(words)], stopReason: "stop" };
}

function roles(messages: readonly AgentMessage[]): string[] {
  return messages.map((message) => message.role);
}

/** 模型收到的一次请求里的全部文字，用来断言“某段数据没进请求”。 */
function requestText(model: ScriptedModel, index: number): string {
  return JSON.stringify(model.requests[index]);
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown }).code;
}

/** 断言一次失败带着稳定的 code，信息里有这些字样。 */
function checkFailure(error: unknown, code: string, says: string[]): true {
  assert.equal(codeOf(error), code, `code 不对：${String(error)}`);
  for (const words of says) assert.ok((error as Error).message.includes(words), `错误信息应当包含「${words}」：${(error as Error).message}`);
  return true;
}

function throwsWithCode(run: () => unknown, code: string, says: string[] = []): void {
  assert.throws(run, (error: unknown) => checkFailure(error, code, says));
}

async function rejectsWithCode(run: Promise<unknown>, code: string, says: string[] = []): Promise<void> {
  await assert.rejects(run, (error: unknown) => checkFailure(error, code, says));
}

function readCall(id: string, file: string): ToolCall {
  return { type: "toolCall", id, name: "read", arguments: { path: file } };
}

/** 一条请求工具的 assistant 消息。 */
function asking(calls: ToolCall[], timestamp: number): AgentMessage {
  return {
    role: "assistant",
    content: [text("我先读一下。"), ...calls],
    provider: "scripted",
    model: "scripted-v1",
    usage: { input: 0, output: 0, totalTokens: 0 },
    stopReason: "toolUse",
    timestamp,
  };
}

function readResult(toolCallId: string, body: string, timestamp: number): AgentMessage {
  return { role: "toolResult", toolCallId, toolName: "read", content: [text(body)], isError: false, timestamp };
}

// ── 10.1 条目与边界上的检查 ─────────────────────────────────────

test("10.1 四种条目各写成一行，读回来逐字段相同", () => {
  const entries: SessionEntry[] = [
    q1,
    { type: "custom", id: "b", parentId: "a", timestamp: STAMP, customType: "audit-note", data: { toolName: "read" } },
    { type: "custom", id: "c", parentId: "b", timestamp: STAMP, customType: "progress" },
    { type: "custom_message", id: "d", parentId: "c", timestamp: STAMP, customType: "hint", content: "先读 README。", display: false, details: { source: "lint" } },
    { type: "label", id: "e", parentId: "d", timestamp: STAMP, targetId: "a", label: "起点" },
  ];
  const text = entries.map(encodeEntry);
  for (const line of text) assert.ok(!line.includes("\n"), "一个条目必须只占一行");
  assert.deepEqual(decodeLines(text), entries);
  const cleared = decodeLines([...text, JSON.stringify({ type: "label", id: "f", parentId: "e", timestamp: STAMP, targetId: "a" })]).at(-1);
  assert.deepEqual(cleared, { type: "label", id: "f", parentId: "e", timestamp: STAMP, targetId: "a", label: undefined }, "没有 label 字段就是撤掉书签");
});

test("10.1 字段缺失或类型不对：错误说出第几行、哪个条目、哪个字段", () => {
  const base = { type: "custom", id: "b", parentId: "a", timestamp: STAMP, customType: "audit-note" };
  expectEntryError(() => decodeLines(lines(q1, { ...base, parentId: 42 })), { code: "invalid_entry", line: 2, entryId: "b", field: "parentId" }, ["第 2 行（条目 b）", "parentId", "42"]);
  expectEntryError(() => decodeLines(lines(q1, { ...base, customType: undefined })), { line: 2, field: "customType" }, ["customType", "缺失"]);
  expectEntryError(() => decodeLines(lines(q1, { ...base, timestamp: "昨天" })), { line: 2, field: "timestamp" }, ["ISO 8601"]);
  expectEntryError(() => decodeLines(lines(q1, { ...base, type: "compactio" })), { line: 2, field: "type" }, ["compactio"]);
  expectEntryError(
    () => decodeLines(lines(q1, { ...base, type: "custom_message", content: "看这里", display: "yes" })),
    { line: 2, field: "display" },
    ["true 或 false"],
  );
});

test("10.1 一行不是 JSON、不是对象或没有 id：错误照样说出行号", () => {
  expectEntryError(() => decodeLines([encodeEntry(q1), "{\"type\":\"mess"]), { code: "invalid_json", line: 2, field: undefined }, ["第 2 行", "不是合法的 JSON"]);
  expectEntryError(() => decodeLines(["[1, 2]"]), { code: "invalid_entry", line: 1, entryId: undefined }, ["第 1 行", "JSON 对象"]);
  expectEntryError(() => decodeLines(lines({ type: "custom", parentId: null, timestamp: STAMP, customType: "x" })), { line: 1, field: "id", entryId: undefined }, ["字段 id"]);
});

test("10.1 消息的角色：认识的角色查 content 的形状，应用登记的角色只查信封、原样放行", () => {
  const flat = messageEntry("a", null, { ...userMessage("你好", 1), content: "你好" } as unknown as AgentMessage);
  expectEntryError(() => decodeLines(lines(flat)), { line: 1, entryId: "a", field: "message.content" }, ["文字块的数组"]);
  const noRole = { type: "message", id: "a", parentId: null, timestamp: STAMP, message: { content: [], timestamp: 1 } };
  expectEntryError(() => decodeLines(lines(noRole)), { field: "message.role" }, ["message.role"]);
  const audit = { type: "message", id: "a", parentId: null, timestamp: STAMP, message: { role: "auditNote", text: "跳过了 3 个文件", timestamp: 1 } };
  assert.deepEqual(decodeLines(lines(audit)), [audit], "应用自己的角色由 convertToLlm 决定去留，边界上不拦");
});

test("10.1 消息查到每一块：空的内容块、缺 text 的块、坏的工具集在打开时就被拒绝，错误指到具体的字段", () => {
  const at = (message: unknown) => lines({ type: "message", id: "m", parentId: null, timestamp: STAMP, message });
  expectEntryError(() => decodeLines(at({ role: "user", content: [null], timestamp: 1 })), { code: "invalid_entry", line: 1, entryId: "m", field: "message.content[0]" }, ["第 1 行（条目 m）", "null"]);
  expectEntryError(() => decodeLines(at({ role: "user", content: [{ type: "text" }], timestamp: 1 })), { field: "message.content[0].text" }, ["缺失"]);
  expectEntryError(() => decodeLines(at({ role: "system", content: "你是 tiny-pi。", toolsAdded: 5, timestamp: 1 })), { field: "message.toolsAdded" }, ["5"]);
  expectEntryError(() => decodeLines(at({ role: "system", content: "", toolsAdded: [{ name: "read" }], timestamp: 1 })), { field: "message.toolsAdded[0].description" }, []);
  const answer = asking([readCall("c1", "README.md")], 2);
  const broken = (patch: Record<string, unknown>) => at({ ...answer, ...patch });
  expectEntryError(() => decodeLines(broken({ content: [{ type: "toolCall", name: "read", arguments: {} }] })), { field: "message.content[0].id" }, []);
  expectEntryError(() => decodeLines(broken({ stopReason: "done" })), { field: "message.stopReason" }, ["done"]);
  expectEntryError(() => decodeLines(broken({ usage: undefined })), { field: "message.usage" }, []);
  expectEntryError(() => decodeLines(at({ role: "toolResult", toolCallId: "c1", toolName: "read", content: [text("…")], timestamp: 3 })), { field: "message.isError" }, []);
  expectEntryError(() => decodeLines(at({ role: "custom", customType: "hint", content: [{ type: "image" }], display: true, timestamp: 3 })), { field: "message.content" }, []);
  assert.deepEqual(decodeLines(at(answer)).map((entry) => (entry as SessionMessageEntry).message), [answer], "完整的消息照常读回");
});

test("10.1 空行不是损坏：跳过它，后面的错误照样说出自己的行号", () => {
  assert.deepEqual(decodeLines([encodeEntry(q1), "", "  ", encodeEntry(a1)]), [q1, a1]);
  expectEntryError(() => decodeLines([encodeEntry(q1), "", JSON.stringify({ ...a1, id: "a" })]), { code: "broken_link", line: 3, field: "id" }, ["第 3 行", "与第 1 行重复"]);
  expectEntryError(() => decodeLines(["", encodeEntry(a1)]), { code: "broken_link", line: 2, field: "parentId" }, ["第 2 行"]);
});

test("10.1 encodeEntry 只写 JSON 原样存得下的值：BigInt、函数、循环引用、NaN、Date 当场失败并说出位置", () => {
  const custom = (data: unknown): SessionEntry => ({ type: "custom", id: "x", parentId: null, timestamp: STAMP, customType: "audit", data });
  const cycle: Record<string, unknown> = { name: "环" };
  cycle.self = cycle;
  const cases: [unknown, string][] = [
    [{ size: 10n }, "data.size"],
    [{ run: () => 1 }, "data.run"],
    [cycle, "data.self"],
    [{ ratio: Number.NaN }, "data.ratio"],
    [{ when: new Date(0) }, "data.when"],
    [[1, undefined], "data[1]"],
  ];
  for (const [data, where] of cases) throwsWithCode(() => encodeEntry(custom(data)), "unstorable", [where, "存不进会话文件"]);
  throwsWithCode(() => encodeEntry(custom({ run: () => 1 })), "unstorable", ["data.run 是一个函数"]);
  throwsWithCode(() => encodeEntry(custom({ tag: Symbol("x") })), "unstorable", ["data.tag 是一个 Symbol"]);
  // 同一个对象出现两次不是循环引用：它不是自己的祖先，JSON 把它写两遍就行。
  const shared = { path: "README.md" };
  assert.equal(encodeEntry(custom({ first: shared, again: [shared] })), JSON.stringify(custom({ first: shared, again: [shared] })));
  assert.equal(encodeEntry(custom({ note: undefined, kept: 1 })), JSON.stringify(custom({ kept: 1 })), "值为 undefined 的字段就是省略，读回来一样");
});

test("10.1 连接关系：id 不重复，parentId 与书签的 targetId 都指向写在前面的条目", () => {
  expectEntryError(() => decodeLines(lines(q1, { ...a1, id: "a" })), { code: "broken_link", line: 2, field: "id" }, ["与第 1 行重复"]);
  expectEntryError(() => decodeLines(lines(a1, q1)), { code: "broken_link", line: 1, entryId: "b", field: "parentId" }, ["第 1 行（条目 b）", "a"]);
  const label = { type: "label", id: "z", parentId: "a", timestamp: STAMP, targetId: "nope", label: "x" };
  expectEntryError(() => decodeLines(lines(q1, label)), { code: "broken_link", line: 2, field: "targetId" }, ["nope"]);
  assert.deepEqual(decodeLines(lines(q1, a1, q2)), [q1, a1, q2]);
});

// ── 10.2 两种存储 ───────────────────────────────────────────────

test("10.2 JSONL：一个条目一行，行尾是换行符；新的 store 重新打开读回同样的条目", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("s.jsonl");
  assert.deepEqual(await new JsonlSessionStore(file).load(), { entries: [], torn: undefined }, "文件还不存在就是一份空会话");
  const store = new JsonlSessionStore(file);
  for (const entry of [q1, a1, q2]) await store.append(entry);
  assert.equal(await readFile(file, "utf8"), [q1, a1, q2].map((entry) => `${encodeEntry(entry)}\n`).join(""));
  assert.deepEqual(await new JsonlSessionStore(file).load(), { entries: [q1, a1, q2], torn: undefined });
});

test("10.2 残行：末尾没有换行符的半行被报告并忽略；下一次追加先截掉它，从干净的行首开始", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("crashed.jsonl");
  const half = "{\"type\":\"message\",\"id\":\"c\",\"par";
  const crashed = `${encodeEntry(q1)}\n${encodeEntry(a1)}\n${half}`;
  await writeFile(file, crashed);

  const loaded = await new JsonlSessionStore(file).load();
  assert.deepEqual(loaded.entries, [q1, a1]);
  assert.deepEqual(loaded.torn, { line: 3, bytes: Buffer.byteLength(half), text: half });
  assert.equal(await readFile(file, "utf8"), crashed, "打开是只读的：残行只报告，不在这里修");

  await new JsonlSessionStore(file).append(q2);
  assert.deepEqual(await new JsonlSessionStore(file).load(), { entries: [q1, a1, q2], torn: undefined });
  assert.equal(await readFile(file, "utf8"), `${encodeEntry(q1)}\n${encodeEntry(a1)}\n${encodeEntry(q2)}\n`);
});

test("10.2 换行符才是提交标记：末尾一行就算是完整的 JSON，没有换行符也不算数", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("no-newline.jsonl");
  await writeFile(file, `${encodeEntry(q1)}\n${encodeEntry(a1)}`);
  const loaded = await new JsonlSessionStore(file).load();
  assert.deepEqual(loaded.entries, [q1]);
  assert.equal(loaded.torn?.line, 2);
  assert.equal(loaded.torn?.text, encodeEntry(a1));
});

test("10.2 中间坏了一行（或最后一行带着换行却坏了）就拒绝打开：说出行号，绝不悄悄跳过", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("corrupt.jsonl");
  const original = `${encodeEntry(q1)}\n{"type":"message","id":"b"\n${encodeEntry(a1)}\n`;
  await writeFile(file, original);
  await rejectsWithEntryError(new JsonlSessionStore(file).load(), { code: "invalid_json", line: 2 });
  assert.equal(await readFile(file, "utf8"), original, "拒绝打开时文件一个字节也不动");

  await writeFile(file, `${encodeEntry(q1)}\n${JSON.stringify({ ...a1, parentId: 7 })}\n${encodeEntry(q2)}\n`);
  await rejectsWithEntryError(new JsonlSessionStore(file).load(), { code: "invalid_entry", line: 2, field: "parentId" });

  await writeFile(file, `${encodeEntry(q1)}\n${encodeEntry(a1)}\n{"type":\n`);
  await rejectsWithEntryError(new JsonlSessionStore(file).load(), { code: "invalid_json", line: 3 });

  await writeFile(file, Buffer.concat([Buffer.from(`${encodeEntry(q1)}\n`), Buffer.from([0xff, 0xfe, 0x0a])]));
  await rejectsWithEntryError(new JsonlSessionStore(file).load(), { code: "invalid_json", line: 2 });
});

test("10.2 会话路径不是普通文件（目录、设备、FIFO）：打开和追加都一句话拒绝并说出路径，绝不卡住", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const folder = dir.file("a-folder");
  await mkdir(folder);
  const paths = [folder];
  if (process.platform !== "win32") {
    const fifo = dir.file("pipe.jsonl");
    execFileSync("mkfifo", [fifo]);
    paths.push("/dev/null", fifo);
  }
  for (const where of paths) {
    await rejectsWithCode(new JsonlSessionStore(where).load(), "not_a_file", [where, "不是普通文件"]);
    await rejectsWithCode(new JsonlSessionStore(where).append(q1), "not_a_file", [where, "不是普通文件"]);
  }
});

test("10.2 一行只用一次 write：2 MB 的条目也是追加句柄上的一次写入，别的写入者插不进它的中间", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("one-write.jsonl");
  const probe = await open(file, "a");
  const handles = Object.getPrototypeOf(probe) as { write: (...args: unknown[]) => Promise<{ bytesWritten: number }> };
  await probe.close();
  const original = handles.write;
  const writes: number[] = [];
  handles.write = async function (this: unknown, ...args: unknown[]) {
    const result = await original.apply(this, args);
    writes.push(result.bytesWritten);
    return result;
  };
  t.after(() => {
    handles.write = original;
  });
  const entry = messageEntry("big", null, userMessage("x".repeat(2 * 1024 * 1024), 1));
  await new JsonlSessionStore(file).append(entry);
  const line = Buffer.byteLength(`${encodeEntry(entry)}\n`);
  assert.ok(writes.includes(line), `整行应当一次写出（${line} 字节），实际的各次写入：${writes.join("、") || "没有一次写在句柄上"}`);
});

test("10.2 同一时刻只有一个写入者：两个 store 同时追加 2 MB 的条目，一个被拒绝，文件照样打得开", { timeout: 10_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("two.jsonl");
  const big = (id: string) => messageEntry(id, null, userMessage(id.repeat(2 * 1024 * 1024), 1));
  const first = new JsonlSessionStore(file);
  const second = new JsonlSessionStore(file);
  await first.load();
  await second.load();
  const results = await Promise.allSettled([first.append(big("x")), second.append(big("y"))]);
  const refused = results.flatMap((result) => (result.status === "rejected" ? [result.reason as unknown] : []));
  assert.equal(refused.length, 1, "恰好一个写入者被拒绝");
  assert.ok(["locked", "changed"].includes(codeOf(refused[0]) as string), String(refused[0]));
  assert.ok((refused[0] as Error).message.includes("另一个写入者"), (refused[0] as Error).message);
  assert.equal((await new JsonlSessionStore(file).load()).entries.length, 1, "文件打得开，里面是完整的一条");

  // 打开之后文件被别人写过：这个写入者见过的已经不是现在的文件，不能再往上追加。
  const stale = new JsonlSessionStore(file);
  await stale.load();
  const fresh = new JsonlSessionStore(file);
  await fresh.load();
  await fresh.append(messageEntry("z", null, userMessage("z", 2)));
  await rejectsWithCode(stale.append(q1), "changed", [file, "另一个写入者"]);
  assert.equal((await new JsonlSessionStore(file).load()).entries.length, 2);
});

test("10.2 写锁跨进程：别的进程持有锁时追加被拒绝并说出它的 pid；那个进程死了，留下的锁被认出并接管", { timeout: 10_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("shared.jsonl");
  const storeUrl = new URL("../src/session-store.js", import.meta.url).href;
  const script = [
    `const { lockForWriting } = await import(${JSON.stringify(storeUrl)});`,
    "await lockForWriting(process.env.SESSION_FILE);",
    'process.stdout.write("locked\\n");',
    "setInterval(() => {}, 60_000);",
  ].join("\n");
  const holder = spawn(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, SESSION_FILE: file },
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => void holder.kill("SIGKILL"));
  let stderr = "";
  holder.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = once(holder, "exit");
  await Promise.race([
    once(holder.stdout, "data"),
    exited.then(() => assert.fail(`持锁的子进程没拿到锁就退出了：${stderr}`)),
  ]);

  await rejectsWithCode(new JsonlSessionStore(file).append(q1), "locked", [file, `进程 ${holder.pid}`, "另一个写入者"]);
  holder.kill("SIGKILL");
  await exited;
  const store = new JsonlSessionStore(file);
  await store.append(q1);
  assert.deepEqual((await store.load()).entries, [q1], "死掉的进程留下的锁被接管，这一条照常写进去");
});

test("10.2 内存存储与 JSONL 接口相同：存的是同样的行，读回来过同一道检查", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const memory = new InMemorySessionStore();
  const jsonl = new JsonlSessionStore(dir.file("same.jsonl"));
  const stores: SessionStore[] = [memory, jsonl];
  const entry = structuredClone(q1);
  for (const store of stores) await store.append(entry);
  entry.id = "改过";
  assert.deepEqual(await memory.load(), { entries: [q1], torn: undefined }, "存下之后再改原对象，改不到已经存下的条目");
  assert.deepEqual(memory.text, (await readFile(jsonl.path, "utf8")).trimEnd().split("\n"));

  const seeded = new InMemorySessionStore([encodeEntry(q1), JSON.stringify({ ...a1, message: { role: "user", content: "x", timestamp: 1 } })]);
  await rejectsWithEntryError(seeded.load(), { code: "invalid_entry", line: 2, field: "message.content" });
});

// ── 10.3 会话树 ─────────────────────────────────────────────────

test("10.3 每个新条目挂在 leaf 下面，leaf 随之移动；getBranch 给出根到 leaf 的路径", { timeout: 5_000 }, async () => {
  const tree = await SessionTree.open(new InMemorySessionStore(), { now, newId: counter() });
  assert.equal(tree.getLeafId(), null);
  const first = tree.appendMessage(userMessage("项目叫什么？", 1));
  const second = tree.appendCustomEntry("audit-note", { toolName: "read" });
  const third = tree.appendMessage(userMessage("继续", 2));
  assert.deepEqual([first.parentId, second.parentId, third.parentId], [null, "e1", "e2"]);
  assert.equal(first.timestamp, STAMP);
  assert.equal(tree.getLeafId(), "e3");
  assert.deepEqual(tree.getBranch().map((entry) => entry.id), ["e1", "e2", "e3"]);
  assert.deepEqual(tree.getBranch("e2").map((entry) => entry.id), ["e1", "e2"]);
});

test("10.3 branch 只移动 leaf：新条目从分叉点长出，旧分支原样留在文件里；重新打开时 leaf 落在最后一行", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("fork.jsonl");
  const tree = await SessionTree.open(new JsonlSessionStore(file), { now, newId: counter() });
  tree.appendMessage(userMessage("项目叫什么？", 1)); // e1
  tree.appendMessage(userMessage("换个问法", 2)); // e2
  assert.throws(() => tree.branch("nope"), /nope/);
  tree.branch("e1");
  assert.equal(tree.getLeafId(), "e1");
  const fork = tree.appendMessage(userMessage("它有几个文件？", 3)); // e3
  assert.equal(fork.parentId, "e1");
  assert.deepEqual(tree.getBranch().map((entry) => entry.id), ["e1", "e3"]);
  await tree.flush();

  const reopened = await SessionTree.open(new JsonlSessionStore(file), { now, newId: counter() });
  assert.equal(reopened.torn, undefined);
  assert.deepEqual(reopened.getEntries().map((entry) => entry.id), ["e1", "e2", "e3"], "旧分支还在文件里");
  assert.equal(reopened.getLeafId(), "e3");
  assert.equal(reopened.appendMessage(userMessage("再问一句", 4)).id, "e4", "重新打开后的新 id 不与已有的重复");
  await reopened.flush(); // 这一行还在写：等它写完，临时目录才能删
});

test("10.3 上下文只沿当前路径：message 原样，custom_message 变回 custom 消息，custom 与书签条目什么也不贡献", { timeout: 5_000 }, async () => {
  const tree = await SessionTree.open(new InMemorySessionStore(), { now, newId: counter() });
  const question = userMessage("项目叫什么？", 1);
  tree.appendMessage(question); // e1
  tree.appendCustomEntry("audit-note", { secret: "不给模型" }); // e2
  tree.appendCustomMessageEntry("hint", "先读 README。", false, { source: "lint" }); // e3
  tree.appendLabelChange("e1", "起点"); // e4
  tree.appendMessage(userMessage("旁支", 2)); // e5
  tree.branch("e4");
  const hint: CustomMessage = { role: "custom", customType: "hint", content: "先读 README。", display: false, details: { source: "lint" }, timestamp: 1_000 };
  assert.deepEqual(tree.buildSessionContext(), [question, hint]);
});

test("10.3 书签：贴上、改写、撤掉；书签本身也是挂在 leaf 下的条目", { timeout: 5_000 }, async () => {
  const store = new InMemorySessionStore();
  const tree = await SessionTree.open(store, { now, newId: counter() });
  tree.appendMessage(userMessage("项目叫什么？", 1)); // e1
  assert.throws(() => tree.appendLabelChange("nope", "x"), /nope/);
  assert.equal(tree.appendLabelChange("e1", "起点").parentId, "e1");
  tree.appendLabelChange("e1", "改过的起点");
  assert.equal(tree.getLabel("e1"), "改过的起点");
  tree.appendLabelChange("e1", undefined);
  assert.equal(tree.getLabel("e1"), undefined);
  tree.appendLabelChange("e1", "临时的名字");
  tree.appendLabelChange("e1", "");
  assert.equal(tree.getLabel("e1"), undefined, "空串的 label 也是撤掉书签");
  tree.appendLabelChange("e1", "最后的名字");
  await tree.flush();
  const reopened = await SessionTree.open(store);
  assert.equal(reopened.getLabel("e1"), "最后的名字", "书签从文件里重放出来");
  assert.equal(reopened.getLeafId(), "e7");
});

test("10.3 新条目的 id 撞上已有的就再要一个：最多要 100 次，都撞上才换成 randomUUID", { timeout: 5_000 }, async () => {
  let asked = 0;
  const tree = await SessionTree.open(new InMemorySessionStore(), {
    now,
    newId: () => {
      asked += 1;
      return "same";
    },
  });
  assert.equal(tree.appendMessage(userMessage("第一问", 1)).id, "same");
  assert.equal(asked, 1);
  const second = tree.appendMessage(userMessage("第二问", 2)).id;
  assert.equal(asked, 101, "撞上之后应当再要，一共要 100 次");
  assert.match(second, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "100 次都撞上，就换成 randomUUID()");
});

/** 第一次写入故意慢：不排队的话，第二条会先落盘。 */
class SlowFirstStore implements SessionStore {
  readonly inner = new InMemorySessionStore();
  private delays = [30, 0, 0];
  load(): Promise<LoadedSession> {
    return this.inner.load();
  }
  async append(entry: SessionEntry): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, this.delays.shift() ?? 0));
    await this.inner.append(entry);
  }
}

test("10.3 写入按追加的顺序一条接一条：慢的那次写完之前，下一条不会先落盘", { timeout: 5_000 }, async () => {
  const store = new SlowFirstStore();
  const tree = await SessionTree.open(store, { now, newId: counter() });
  tree.appendMessage(userMessage("一", 1));
  tree.appendMessage(userMessage("二", 2));
  tree.appendMessage(userMessage("三", 3));
  await tree.flush();
  assert.deepEqual(store.inner.text.map((line) => JSON.parse(line).id), ["e1", "e2", "e3"], "落盘顺序应当与追加顺序相同");
  assert.deepEqual((await store.inner.load()).entries.length, 3);
});

test("10.3 一次写入失败：flush 报出那次的错误，之后的条目不再写", { timeout: 5_000 }, async () => {
  const inner = new InMemorySessionStore();
  let calls = 0;
  const flaky: SessionStore = {
    load: () => inner.load(),
    async append(entry) {
      calls += 1;
      if (calls === 2) throw new Error("磁盘满了");
      await inner.append(entry);
    },
  };
  const tree = await SessionTree.open(flaky, { now, newId: counter() });
  tree.appendMessage(userMessage("一", 1));
  tree.appendMessage(userMessage("二", 2));
  tree.appendMessage(userMessage("三", 3));
  await assert.rejects(tree.flush(), /磁盘满了/);
  assert.equal(calls, 2, "失败之后不再写：文件里不能出现缺了父条目的孩子");
  assert.deepEqual(inner.text.map((line) => JSON.parse(line).id), ["e1"]);
  throwsWithCode(() => tree.appendMessage(userMessage("四", 4)), "unwritable", ["磁盘满了"]);
});

test("10.3 存不下的值只让那一次追加当场失败：树不记它，写入队列不受影响，之后的条目照常落盘", { timeout: 5_000 }, async () => {
  const store = new InMemorySessionStore();
  const tree = await SessionTree.open(store, { now, newId: counter() });
  tree.appendMessage(userMessage("一", 1));
  throwsWithCode(() => tree.appendCustomEntry("audit", { size: 10n }), "unstorable", ["data.size", "BigInt"]);
  assert.equal(tree.getLeafId(), "e1", "失败的那一次没有进树");
  const next = tree.appendMessage(userMessage("二", 2));
  assert.equal(next.parentId, "e1");
  await tree.flush();
  assert.deepEqual(store.text.map((line) => JSON.parse(line).id), ["e1", next.id], "之后的条目照常写进去");
  assert.deepEqual((await store.load()).entries, tree.getEntries(), "存下的就是内存里的");
});

test("10.3 上下文里每个工具调用都配上结果：缺的补一条 isError 结果，找不到调用的结果丢掉", { timeout: 5_000 }, async () => {
  const tree = await SessionTree.open(new InMemorySessionStore(), { now, newId: counter() });
  const answered = readResult("c1", "a 的内容", 3);
  tree.appendMessage(readResult("early", "没有调用就来的结果", 1));
  tree.appendMessage(userMessage("读两个文件", 1));
  tree.appendMessage(asking([readCall("c1", "a"), readCall("c2", "b")], 2));
  tree.appendMessage(answered);
  tree.appendMessage(readResult("ghost", "谁也没要的结果", 4));
  tree.appendMessage(userMessage("继续", 5));
  const context = tree.buildSessionContext();
  assert.deepEqual(roles(context), ["user", "assistant", "toolResult", "toolResult", "user"]);
  assert.deepEqual(context[2], answered);
  assert.deepEqual(context[3], { role: "toolResult", toolCallId: "c2", toolName: "read", content: [text(UNAVAILABLE_RESULT)], isError: true, timestamp: 2 });
  assert.doesNotMatch(JSON.stringify(context), /ghost|early/);
  assert.equal(tree.getEntries().length, 6, "补上的结果只在上下文里，树里的条目一条没变");
});

// ── 10.4 AgentSession ──────────────────────────────────────────

test("10.4 新会话：system prompt 与每条定稿的消息依次写进文件，一条接一条连成路径", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("new.jsonl");
  const model = new ScriptedModel([say("叫 tiny-pi。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(new JsonlSessionStore(file), { now }), model, systemPrompt: "你是 tiny-pi。", now });
  await session.prompt("项目叫什么？");

  const written = decodeLines((await readFile(file, "utf8")).trimEnd().split("\n"));
  assert.deepEqual(written.map((entry) => entry.type), ["message", "message", "message"]);
  assert.deepEqual(roles(written.map((entry) => (entry as SessionMessageEntry).message)), ["system", "user", "assistant"]);
  assert.deepEqual(written.map((entry) => entry.parentId), [null, written[0]!.id, written[1]!.id]);
  assert.deepEqual(written.map((entry) => (entry as SessionMessageEntry).message), session.messages);
});

test("10.4 从崩溃过的会话文件续上：残行被报告，transcript 与 system prompt 都来自文件，下一次请求带着全部历史接着问", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("resume.jsonl");
  const first = new AgentSession({
    tree: await SessionTree.open(new JsonlSessionStore(file), { now }),
    model: new ScriptedModel([say("叫 tiny-pi。")], { now }),
    systemPrompt: "你是 tiny-pi。",
    now,
  });
  await first.prompt("项目叫什么？");
  // 模拟崩溃：进程死在写第 4 行的中途。
  await appendFile(file, '{"type":"message","id":"x","par');

  const model = new ScriptedModel([say("三个。")], { now });
  const tree = await SessionTree.open(new JsonlSessionStore(file), { now });
  assert.equal(tree.torn?.line, 4, "打开时报告残行");
  const resumed = new AgentSession({ tree, model, systemPrompt: "另一个 prompt", now });
  assert.deepEqual(resumed.messages, first.messages, "续上的 transcript 就是文件里的路径");
  assert.equal(resumed.agent.systemPrompt, "你是 tiny-pi。", "system prompt 属于记录：续接时以文件为准");
  await resumed.prompt("它有几个文件？");

  const sent = model.requests[0]?.messages ?? [];
  assert.deepEqual(roles(sent), ["system", "user", "assistant", "user"]);
  assert.deepEqual(sent.slice(0, 3), first.messages);
  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.equal(reopened.torn, undefined, "续写之前残行已被截掉");
  assert.equal(reopened.getEntries().length, 5, "文件里是 system、两问、两答");
  assert.deepEqual(reopened.buildSessionContext(), resumed.messages);
});

test("10.4 appendEntry 写下的 custom 条目进了文件，却不在 transcript 里，也不在模型收到的请求里", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("audit.jsonl");
  const model = new ScriptedModel([say("叫 tiny-pi。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(new JsonlSessionStore(file), { now }), model, systemPrompt: "你是 tiny-pi。", now });
  const entry = session.appendEntry("audit-note", { toolName: "read", note: "审计记录-7f3a" });
  await session.prompt("项目叫什么？");

  assert.ok(!requestText(model, 0).includes("审计记录-7f3a"), "custom 条目的数据出现在了请求里");
  assert.ok(!requestText(model, 0).includes("audit-note"));
  assert.deepEqual(roles(session.messages), ["system", "user", "assistant"]);
  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.deepEqual(reopened.getEntry(entry.id), entry, "条目保存在文件里，界面可以重放它");
  assert.ok(!JSON.stringify(reopened.buildSessionContext()).includes("审计记录-7f3a"));
});

test("10.4 sendMessage：content 以 user 身份到达模型，display 与 details 留在记录里、不进请求", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("custom.jsonl");
  const model = new ScriptedModel([say("好，我先读 README。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(new JsonlSessionStore(file), { now }), model, systemPrompt: "你是 tiny-pi。", now });
  const sent = session.sendMessage({ customType: "hint", content: "提示：先读 README。", display: false, details: { rule: "细节-91c2" } });
  await session.prompt("开始吧");

  const request = model.requests[0]?.messages ?? [];
  assert.deepEqual(request.slice(1), [userMessage("提示：先读 README。", 1_000), userMessage("开始吧", 1_000)]);
  assert.ok(!requestText(model, 0).includes("细节-91c2"), "details 出现在了请求里");
  assert.ok(!requestText(model, 0).includes("display"), "display 出现在了请求里");
  assert.deepEqual(roles(session.messages), ["system", "custom", "user", "assistant"]);

  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.deepEqual(reopened.getEntries()[1], {
    type: "custom_message",
    id: reopened.getEntries()[1]!.id,
    parentId: reopened.getEntries()[0]!.id,
    timestamp: STAMP,
    customType: "hint",
    content: "提示：先读 README。",
    display: false,
    details: { rule: "细节-91c2" },
  });
  assert.deepEqual(reopened.buildSessionContext()[1], sent, "重建上下文时它变回同一条 custom 消息");
});

test("10.4 在会话上分叉：从较早的回答接着问，请求里只有根到分叉点的历史，旧分支留在文件里", { timeout: 5_000 }, async () => {
  const store = new InMemorySessionStore();
  const model = new ScriptedModel([say("叫 tiny-pi。"), say("三个。"), say("四个。"), say("用 TypeScript。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(store, { now }), model, systemPrompt: "你是 tiny-pi。", now });
  await session.prompt("项目叫什么？");
  const answer = session.tree.getLeafId()!;
  await session.prompt("它有几个文件？");
  let refused = "";
  const unsubscribe = session.subscribe((event) => {
    if (event.type !== "turn_start") return;
    try {
      session.branch(answer);
      refused = "运行中的 branch 没有被拒绝";
    } catch (error) {
      refused = (error as Error).message;
    }
  });
  await session.prompt("它有几个文件？");
  unsubscribe();
  assert.match(refused, /运行中不能切换分支/);
  session.branch(answer);
  await session.prompt("它用什么语言？");

  const sent = model.requests[3]?.messages ?? [];
  assert.deepEqual(roles(sent), ["system", "user", "assistant", "user"]);
  assert.ok(!JSON.stringify(sent).includes("它有几个文件？"), "被放下的分支不该出现在请求里");
  assert.equal((await store.load()).entries.length, 9, "旧分支的问答还在记录里");
});

test("10.4 文件里哪怕只有一条 system 也是续接：system prompt 以文件为准，不再写第二条", { timeout: 5_000 }, async () => {
  const store = new InMemorySessionStore();
  const first = new AgentSession({ tree: await SessionTree.open(store, { now }), model: new ScriptedModel([], { now }), systemPrompt: "你是 tiny-pi。", now });
  await first.flush();
  assert.equal((await store.load()).entries.length, 1);
  const resumed = new AgentSession({ tree: await SessionTree.open(store, { now }), model: new ScriptedModel([], { now }), systemPrompt: "另一个 prompt", now });
  assert.equal(resumed.agent.systemPrompt, "你是 tiny-pi。", "只有一条 system 的文件也是一份要续上的记录");
  await resumed.flush();
  assert.equal((await store.load()).entries.length, 1, "续接时不该再写一条 system");
});

/** 一块会写满的磁盘：前 ok 次写入成功，之后每一次都以 ENOSPC 失败。 */
function fullDisk(ok: number): SessionStore & { inner: InMemorySessionStore } {
  const inner = new InMemorySessionStore();
  let left = ok;
  return {
    inner,
    load: () => inner.load(),
    async append(entry) {
      left -= 1;
      if (left < 0) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      await inner.append(entry);
    },
  };
}

test("10.4 写入失败之后会话失效：这次 prompt 报出原因，下一次 prompt 在调用模型之前就被拒绝", { timeout: 5_000 }, async () => {
  const silent = new ScriptedModel([say("不该有这一次。")], { now });
  const broken = new AgentSession({ tree: await SessionTree.open(fullDisk(0), { now }), model: silent, systemPrompt: "你是 tiny-pi。", now });
  await rejectsWithCode(broken.prompt("你好"), "unwritable", ["ENOSPC", "不再接受"]);
  assert.equal(silent.requests.length, 0, "第一条 system 就没写进去：模型一次也没被调用");

  const disk = fullDisk(2); // system 与第一问写得进去，第一答写不进去
  const model = new ScriptedModel([say("叫 tiny-pi。"), say("不该有这一次。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(disk, { now }), model, systemPrompt: "你是 tiny-pi。", now });
  await assert.rejects(session.prompt("项目叫什么？"), /ENOSPC/);
  assert.equal(model.requests.length, 1);
  await rejectsWithCode(session.prompt("它有几个文件？"), "unwritable", ["ENOSPC"]);
  assert.equal(model.requests.length, 1, "写不进去的会话不再调用模型");
  throwsWithCode(() => session.appendEntry("audit", { n: 1 }), "unwritable");
  assert.equal(disk.inner.text.length, 2);
});

test("10.4 同一个会话文件上的第二个 AgentSession：它的写入被拒绝，它的 prompt 不调用模型，文件里只有第一个会话的对话", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("shared.jsonl");
  // 两棵树在文件还空着的时候打开：两个会话都以为自己是新的。
  const trees = [await SessionTree.open(new JsonlSessionStore(file), { now }), await SessionTree.open(new JsonlSessionStore(file), { now })];
  const firstModel = new ScriptedModel([say("叫 tiny-pi。")], { now });
  const first = new AgentSession({ tree: trees[0]!, model: firstModel, systemPrompt: "你是 tiny-pi。", now });
  await first.prompt("项目叫什么？");
  const secondModel = new ScriptedModel([say("不该有这一次。")], { now });
  const second = new AgentSession({ tree: trees[1]!, model: secondModel, systemPrompt: "你是另一个会话。", now });
  await rejectsWithCode(second.prompt("它有几个文件？"), "unwritable", [file, "另一个写入者"]);
  assert.equal(secondModel.requests.length, 0, "第二个会话的 prompt 在调用模型之前就被拒绝");
  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.deepEqual(reopened.buildSessionContext(), first.messages, "文件里只有第一个会话的对话");
});

test("10.4 存不下的数据：appendEntry 与 sendMessage 当场抛出、什么也不多；工具的 details 存不下，这次 prompt 失败，会话不再调用模型", { timeout: 5_000 }, async () => {
  const store = new InMemorySessionStore();
  const sizeTool = defineTool({
    name: "size",
    description: "报告文件有多少字节",
    parameters: s.object({ path: s.string() }),
    async execute() {
      return { content: [text("12 字节")], details: { bytes: 12n } };
    },
  });
  const call: ToolCall = { type: "toolCall", id: "c1", name: "size", arguments: { path: "README.md" } };
  const model = new ScriptedModel([{ kind: "reply", content: [call], stopReason: "toolUse" }, say("12 字节。"), say("不该有这一次。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(store, { now }), model, systemPrompt: "你是 tiny-pi。", tools: [sizeTool], now });
  throwsWithCode(() => session.appendEntry("audit", { bytes: 12n }), "unstorable", ["data.bytes", "BigInt"]);
  throwsWithCode(() => session.sendMessage({ customType: "hint", content: "看看大小", display: true, details: { bytes: 12n } }), "unstorable", ["details.bytes"]);
  assert.deepEqual(roles(session.messages), ["system"], "transcript 没有多出任何一条");
  await session.flush();
  assert.equal(store.text.length, 1, "文件里也没有");

  await rejectsWithCode(session.prompt("README 多大？"), "unwritable", ["details.bytes", "BigInt"]);
  assert.equal(model.requests.length, 1, "记录缺了一条：这次运行就地停下，不再带着它去问模型");
  await rejectsWithCode(session.prompt("再问一次"), "unwritable");
  assert.equal(model.requests.length, 1, "之后的 prompt 也不再调用模型");
  const reopened = await SessionTree.open(store);
  assert.deepEqual(roles(reopened.buildSessionContext()), ["system", "user", "assistant", "toolResult"], "文件照样打得开");
});

test("10.4 续上一个死在工具中途的会话：没有结果的调用各补一条 isError 结果再发请求，找不到调用的结果不发", { timeout: 5_000 }, async (t) => {
  const dir = await tempDir(t);
  const file = dir.file("killed.jsonl");
  const written = [
    messageEntry("s", null, { role: "system", content: "你是 tiny-pi。", timestamp: 1 }),
    messageEntry("u", "s", userMessage("读 a 和 b", 2)),
    messageEntry("a", "u", asking([readCall("c1", "a"), readCall("c2", "b")], 3)),
    messageEntry("r1", "a", readResult("c1", "a 的内容", 4)),
    messageEntry("r9", "r1", readResult("ghost", "谁也没要的结果", 5)),
    // c2 的结果那一行没来得及写：进程在工具运行时被杀掉了。
  ];
  await writeFile(file, written.map((entry) => `${encodeEntry(entry)}\n`).join(""));

  const model = new ScriptedModel([say("a 读到了，b 没有结果。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(new JsonlSessionStore(file), { now }), model, now });
  await session.prompt("结果呢？");
  const sent = model.requests[0]?.messages ?? [];
  assert.deepEqual(roles(sent), ["system", "user", "assistant", "toolResult", "toolResult", "user"]);
  assert.deepEqual(sent[4], { role: "toolResult", toolCallId: "c2", toolName: "read", content: [text(UNAVAILABLE_RESULT)], isError: true, timestamp: 3 });
  assert.doesNotMatch(JSON.stringify(sent), /ghost/);
  const reopened = await SessionTree.open(new JsonlSessionStore(file));
  assert.deepEqual(reopened.buildSessionContext(), session.messages, "补上的结果每次都从同一条路径推出来");
});
