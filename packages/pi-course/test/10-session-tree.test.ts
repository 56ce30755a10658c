import assert from "node:assert/strict";
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test, { type TestContext } from "node:test";

import { AgentSession } from "../src/agent-session.js";
import type { CustomMessage } from "../src/messages.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import {
  decodeLines,
  encodeEntry,
  SessionEntryError,
  type SessionEntry,
  type SessionMessageEntry,
} from "../src/session-entries.js";
import { InMemorySessionStore, JsonlSessionStore, type LoadedSession, type SessionStore } from "../src/session-store.js";
import { SessionTree } from "../src/session-tree.js";
import { text, userMessage, type AgentMessage } from "../src/types.js";

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

test("10.1 消息只查信封：认识的角色查 content 的形状，应用登记的角色原样放行", () => {
  const flat = messageEntry("a", null, { ...userMessage("你好", 1), content: "你好" } as unknown as AgentMessage);
  expectEntryError(() => decodeLines(lines(flat)), { line: 1, entryId: "a", field: "message.content" }, ["user", "数组"]);
  const noRole = { type: "message", id: "a", parentId: null, timestamp: STAMP, message: { content: [], timestamp: 1 } };
  expectEntryError(() => decodeLines(lines(noRole)), { field: "message.role" }, ["message.role"]);
  const audit = { type: "message", id: "a", parentId: null, timestamp: STAMP, message: { role: "auditNote", text: "跳过了 3 个文件", timestamp: 1 } };
  assert.deepEqual(decodeLines(lines(audit)), [audit], "应用自己的角色由 convertToLlm 决定去留，边界上不拦");
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
  tree.appendLabelChange("e1", "最后的名字");
  await tree.flush();
  const reopened = await SessionTree.open(store);
  assert.equal(reopened.getLabel("e1"), "最后的名字", "书签从文件里重放出来");
  assert.equal(reopened.getLeafId(), "e5");
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
  const model = new ScriptedModel([say("叫 tiny-pi。"), say("三个。"), say("用 TypeScript。")], { now });
  const session = new AgentSession({ tree: await SessionTree.open(store, { now }), model, systemPrompt: "你是 tiny-pi。", now });
  await session.prompt("项目叫什么？");
  const answer = session.tree.getLeafId()!;
  await session.prompt("它有几个文件？");
  session.branch(answer);
  await session.prompt("它用什么语言？");

  const sent = model.requests[2]?.messages ?? [];
  assert.deepEqual(roles(sent), ["system", "user", "assistant", "user"]);
  assert.ok(!JSON.stringify(sent).includes("它有几个文件？"), "被放下的分支不该出现在请求里");
  assert.equal((await store.load()).entries.length, 7, "旧分支的问答还在记录里");
});
