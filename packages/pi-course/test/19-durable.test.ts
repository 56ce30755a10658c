import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import { existsSync } from "node:fs";
import { appendFile, mkdir, mkdtemp, open, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { planTurn, runAgentLoop } from "../src/agent-loop.js";
import { context, MISSING_RESULT_TEXT, orderChanged, pairResults, placeSystem, rangeOf, systemDraft, systemPatch } from "../src/durable/context.js";
import { contribute, EXCLUDED_STOP_REASONS, newestEdits, type EntryDraft, type EntryRecord } from "../src/durable/entries.js";
import { danglingCalls, DurableSession, interruptedText, RECOVERED_PARTIAL } from "../src/durable/session.js";
import { DurableLog, DurableStoreError, JsonlDurableStore, loadSqlite, PoisonedSessionError, SqliteDurableStore, type DurableStore } from "../src/durable/store.js";
import { parseCliArgs } from "../src/cli/args.js";
import { main } from "../src/cli/main.js";
import { ABORTED_MARK, displayLine, openProjectStore } from "../src/durable/durable-mode.js";
import { AssistantMessageEventStream } from "../src/event-stream.js";
import { runEvalTask } from "../src/eval/run.js";
import { asSessionEntries, DURABLE_RECOVERY, DURABLE_TASKS, recoveredAs, runDurableTask } from "../src/eval/durable.js";
import { VISIBLE_TASKS } from "../src/eval/tasks.js";
import type { EvalContext, EvalTask } from "../src/eval/types.js";
import type { SessionEntry } from "../src/session-entries.js";
import { formatEvalTable } from "../src/eval/report.js";
import { sessionFolderName } from "../src/runtime.js";
import { s } from "../src/schema.js";
import { ScriptedModel } from "../src/scripted-model.js";
import { defineTool, ToolRegistry } from "../src/tools.js";
import {
  assistantMessage,
  text,
  userMessage,
  type AgentContext,
  type AssistantMessage,
  type Message,
  type Model,
  type ToolCall,
  type ToolResultMessage,
} from "../src/types.js";

// ── 帮手 ────────────────────────────────────────────────────────

const sqlite = await loadSqlite();
const NO_SQLITE = `Node ${process.version} 没有内置的 node:sqlite（22.13 起才有）`;

function record(id: number, draft: EntryDraft, commitSeq = id): EntryRecord {
  return { ...draft, id, commitSeq };
}

function call(id: string, name = "read", args: unknown = { path: id }): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

function reply(words: string, calls: ToolCall[] = [], stopReason: AssistantMessage["stopReason"] = calls.length > 0 ? "toolUse" : "stop"): AssistantMessage {
  return assistantMessage([...(words === "" ? [] : [text(words)]), ...calls], stopReason, { timestamp: 1 });
}

function result(id: string, body: string, name = "read"): ToolResultMessage {
  return { role: "toolResult", toolCallId: id, toolName: name, content: [text(body)], isError: false, timestamp: 1 };
}

function user(words: string): Message {
  return userMessage(words, 1);
}

function message(...model: Message[]): EntryDraft {
  return { kind: "message", model };
}

/** 一条消息的简写：测试按它比较顺序。 */
function show(item: Message): string {
  switch (item.role) {
    case "system":
      return `system ${JSON.stringify(item.sections ?? {})}`;
    case "user":
      return `user「${item.content.map((block) => block.text).join("")}」`;
    case "assistant": {
      const words = item.content.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
      const calls = item.content.flatMap((block) => (block.type === "toolCall" ? [` ->${block.id}`] : [])).join("");
      return `assistant「${words}」${calls}`;
    }
    case "toolResult":
      return `result<-${item.toolCallId}`;
  }
}

/** 开头的九个条目（id 从 1 起）：带错字的话、被打断的回复、两个调用、倒着写的两条结果、系统条目、最后的回复、修改、备注。 */
function nineEntries(): EntryRecord[] {
  const drafts: EntryDraft[] = [
    message(user("read a and b")),
    message(reply("I crashed", [], "aborted")),
    message(reply("reading", [call("a"), call("b")])),
    message(result("b", "file b")),
    { kind: "pi.system", model: [{ role: "system", content: "", sections: { cwd: "<cwd>/repo</cwd>" }, timestamp: 1 }] },
    message(result("a", "file a")),
    message(reply("a and b look fine")),
    { kind: "edit", data: "user fixed a typo", edits: [{ target: 1, action: "replace", messages: [user("read files a and b")] }] },
    { kind: "note", data: "display only" },
  ];
  return drafts.map((draft, index) => record(index + 1, draft));
}

async function tempDir(t: test.TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-durable-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** 一个只记在内存里的存储，可以让提交停住或失败。 */
class MemoryStore implements DurableStore {
  readonly kind = "jsonl" as const;
  readonly batches: EntryRecord[][] = [];
  gate: Promise<void> | undefined;
  failWith: Error | undefined;
  inCommit = false;
  /** 每次提交要花的毫秒数：让“没等提交就往下走”的代码露出来。 */
  delayMs = 0;
  async load(): Promise<EntryRecord[]> {
    return this.batches.flat();
  }
  async commit(records: readonly EntryRecord[]): Promise<void> {
    this.inCommit = true;
    try {
      if (this.gate !== undefined) await this.gate;
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      if (this.failWith !== undefined) throw this.failWith;
      this.batches.push([...records]);
    } finally {
      this.inCommit = false;
    }
  }
  async close(): Promise<void> {}
}

// ── 19.1 条目交出什么 ──────────────────────────────────────────

test("19.1 每个条目交出自己的消息、最新一次修改的替换，或者什么也不交；edit、note 与没有 model 的条目自己不交", () => {
  const original = record(1, message(user("helo")));
  assert.deepEqual(contribute(original, undefined).map(show), ["user「helo」"]);
  assert.ok(Object.isFrozen(contribute(original, undefined)), "交回的数组是冻住的");

  const entries = [
    original,
    record(2, { kind: "edit", edits: [{ target: 1, action: "replace", messages: [user("hello")] }] }),
    record(3, { kind: "edit", edits: [{ target: 1, action: "replace", messages: [user("hello there")] }] }),
    record(4, { kind: "edit", edits: [{ target: 5, action: "omit" }] }),
    record(5, message(user("later"))),
  ];
  const edits = newestEdits(entries);
  assert.deepEqual(contribute(original, edits.get(1)).map(show), ["user「hello there」"], "同一个条目的修改，最新的那次算数");
  assert.equal(edits.get(5), undefined, "修改只能指向更早的条目");
  const selfEdit = record(6, { kind: "message", model: [user("mine")], edits: [{ target: 6, action: "omit" }] });
  assert.equal(newestEdits([selfEdit]).get(6), undefined, "指向自己的修改也不算数");
  assert.deepEqual(contribute(entries[1]!, edits.get(2)), [], "edit 条目自己什么也不交");
  assert.deepEqual(contribute(original, { target: 1, action: "omit" }), [], "omit 让条目什么也不交");

  assert.deepEqual(contribute(record(6, { kind: "note", data: "for the UI", model: [user("not for the model")] }), undefined), [], "note 不进上下文");
  assert.deepEqual(contribute(record(7, { kind: "pi.partial", data: { partial: reply("half") } }), undefined), [], "没有 model 的条目什么也不交");
  assert.equal(original.model?.length, 1, "原来的条目一个字节也没变");
  assert.deepEqual(context(entries).messages.map(show), ["user「hello there」", "user「later」"]);
});

test("19.1 aborted、error、deferred 的回复不进上下文，记录里原样留着；deferred 的回复不执行它的调用", async () => {
  assert.deepEqual([...EXCLUDED_STOP_REASONS].sort(), ["aborted", "deferred", "error"]);
  const entries = [
    record(1, message(user("go"))),
    record(2, message(reply("half", [], "aborted"))),
    record(3, message(reply("boom", [], "error"))),
    record(4, message(reply("later", [call("x")], "deferred"))),
    record(5, message(reply("", [], "length"))),
    record(6, message(reply("done"))),
  ];
  assert.deepEqual(context(entries).messages.map(show), ["user「go」", "assistant「」", "assistant「done」"]);
  assert.equal(entries.length, 6, "排除的回复仍在记录里");

  const deferred = reply("later", [call("x")], "deferred");
  assert.deepEqual(planTurn(deferred), { kind: "finish", unexecuted: [call("x")], end: { reason: "deferred" } });
  let ran = 0;
  const tool = defineTool({ name: "read", description: "Read.", parameters: s.object({}), execute: async () => ((ran += 1), { content: [text("x")] }) });
  const model: Model = {
    provider: "fixed",
    id: "fixed",
    stream() {
      const stream = new AssistantMessageEventStream();
      queueMicrotask(() => stream.push({ type: "done", reason: "deferred", message: deferred }));
      return stream;
    },
  };
  const run = await runAgentLoop({ model, messages: [user("go")], tools: new ToolRegistry([tool]), now: () => 1 });
  assert.equal(run.reason, "deferred");
  assert.equal(ran, 0, "推迟的回复不是回答，它的调用不执行");
  const unexecuted = run.messages[1] as ToolResultMessage;
  assert.equal(unexecuted.isError, true);
  assert.match(unexecuted.content[0]!.text, /推迟/);
});

// ── 19.2 结果配对 ──────────────────────────────────────────────

test("19.2 工具结果挪到调用它的回复后面，按调用的顺序，排在中间写下的任何东西前面", () => {
  const messages: Message[] = [
    user("look"),
    reply("two calls", [call("p"), call("q")]),
    user("also check the tests"),
    result("q", "file q"),
    result("p", "file p"),
    reply("p and q ok"),
  ];
  assert.deepEqual(pairResults(messages).map(show), [
    "user「look」",
    "assistant「two calls」 ->p ->q",
    "result<-p",
    "result<-q",
    "user「also check the tests」",
    "assistant「p and q ok」",
  ]);
});

test("19.2 同一个调用只认第一条结果；前面没有调用的结果丢掉；没有结果的调用补一条 isError 的结果", () => {
  const paired = pairResults([
    result("early", "before any call"),
    reply("one", [call("k"), call("m")]),
    result("k", "first"),
    result("k", "second"),
    result("stray", "nobody asked"),
    result("early", "after its call? no: its call never came"),
  ]);
  assert.deepEqual(paired.map(show), ["assistant「one」 ->k ->m", "result<-k", "result<-m"]);
  const [, first, missing] = paired as [Message, ToolResultMessage, ToolResultMessage];
  assert.equal(first.content[0]!.text, "first");
  assert.equal(missing.isError, true);
  assert.equal(missing.toolName, "read");
  assert.equal(missing.content[0]!.text, "Tool result unavailable: history ends before this call completed.");
  assert.equal(MISSING_RESULT_TEXT, missing.content[0]!.text);

  const twice = pairResults([reply("one", [call("k")]), result("k", "first"), reply("again", [call("k")])]);
  assert.deepEqual(twice.map(show), ["assistant「one」 ->k", "result<-k", "assistant「again」 ->k"], "同一个调用 id 又出现一次：结果只跟在第一次后面");

  const late = pairResults([result("z", "too early"), reply("now", [call("z")])]);
  assert.equal((late[1] as ToolResultMessage).content[0]!.text, MISSING_RESULT_TEXT, "写在调用之前的结果不算它的结果");
});

// ── 19.3 系统基线与补丁 ────────────────────────────────────────

test("19.3 开头的场景：九个条目拼出六条消息；从调用处分叉得到两条补上的结果", () => {
  const entries = nineEntries();
  const view = context(entries);
  assert.deepEqual(view.messages.map(show), [
    'system {"cwd":"<cwd>/repo</cwd>"}',
    "user「read files a and b」",
    "assistant「reading」 ->a ->b",
    "result<-a",
    "result<-b",
    "assistant「a and b look fine」",
  ]);
  assert.equal(entries.length, 9, "九个条目都还在");
  assert.equal((entries[0]!.model![0] as { content: { text: string }[] }).content[0]!.text, "read a and b", "带错字的原话没被删");

  const fork = context(entries, { until: 3 });
  assert.deepEqual(fork.messages.map(show), ["user「read a and b」", "assistant「reading」 ->a ->b", "result<-a", "result<-b"]);
  for (const missing of fork.messages.slice(2) as ToolResultMessage[]) {
    assert.equal(missing.isError, true);
    assert.equal(missing.content[0]!.text, MISSING_RESULT_TEXT);
  }
});

test("19.3 之后的系统条目只写变了的段（null 删掉，没变不写），留在原位；第二次请求的前缀与第一次逐字节相同", () => {
  assert.deepEqual(systemPatch({ preamble: "p", cwd: "/repo", rules: "r" }, { preamble: "p", cwd: "/repo/packages", extra: "e" }), {
    cwd: "/repo/packages",
    rules: null,
    extra: "e",
  });
  assert.equal(systemPatch({ preamble: "p" }, { preamble: "p" }), undefined);

  const desired = { preamble: "You are terse.", cwd: "<cwd>/repo</cwd>", rules: "<rules>run the tests</rules>" };
  const entries: EntryRecord[] = [record(1, message(user("first question")))];
  const baseline = systemDraft(entries, desired, 1);
  assert.deepEqual(baseline?.model?.[0], { role: "system", content: "", sections: desired, timestamp: 1 }, "第一次：整份基线");
  entries.push(record(2, baseline!), record(3, message(reply("first answer"))));
  const firstRequest = context(entries).messages;
  assert.deepEqual(firstRequest.map(show)[0], `system ${JSON.stringify(desired)}`, "基线写在问题之后，发送时在最前");

  assert.equal(systemDraft(entries, desired, 2), undefined, "一段都没变：不写条目");
  entries.push(record(4, message(user("second question"))));
  const patch = systemDraft(entries, { ...desired, cwd: "<cwd>/repo/packages</cwd>" }, 2);
  assert.deepEqual(patch?.model?.[0], { role: "system", content: "", sections: { cwd: "<cwd>/repo/packages</cwd>" }, timestamp: 2 });
  entries.push(record(5, patch!));
  const secondRequest = context(entries).messages;
  assert.deepEqual(secondRequest.map(show).slice(-2), ["user「second question」", 'system {"cwd":"<cwd>/repo/packages</cwd>"}'], "补丁留在这次提问之后");

  const serialized = (messages: readonly Message[]) => messages.map((item) => JSON.stringify(item)).join("\n");
  assert.ok(serialized(secondRequest).startsWith(`${serialized(firstRequest)}\n`), "第二次请求以第一次请求的全部字节开头");
  assert.deepEqual(placeSystem([user("u"), firstRequest[0]!]).map(show), [show(firstRequest[0]!), "user「u」"]);

  const reordered = systemDraft(entries, { cwd: "<cwd>/repo/packages</cwd>", preamble: "You are terse.", rules: "<rules>run the tests</rules>" }, 3);
  assert.deepEqual(reordered?.model?.map(show), [
    'system {"preamble":null,"cwd":null,"rules":null}',
    'system {"cwd":"<cwd>/repo/packages</cwd>","preamble":"You are terse.","rules":"<rules>run the tests</rules>"}',
  ], "段的先后变了：先全部删掉，再整份写一遍");
  assert.equal(orderChanged({ a: "1", b: "2" }, { a: "1", b: "2", c: "3" }), false, "新段接在后面不算换了先后");
});

test("19.3 带 head 的条目开始新的范围；它后面没有系统条目时，下一次请求之前写一份完整的基线", () => {
  const desired = { preamble: "Be brief.", cwd: "/w" };
  const entries: EntryRecord[] = [
    record(1, message(user("old question"))),
    record(2, systemDraft([], desired, 1)!),
    record(3, message(reply("old answer"))),
    record(4, { kind: "message", head: "compaction", model: [user("Summary: we talked about /w.")] }),
    record(5, message(user("new question"))),
  ];
  assert.deepEqual(rangeOf(entries).map((entry) => entry.id), [4, 5]);
  assert.deepEqual(rangeOf(entries, 3).map((entry) => entry.id), [1, 2, 3], "截在 head 之前：还是旧的范围");
  assert.deepEqual(context(entries).messages.map(show), ["user「Summary: we talked about /w.」", "user「new question」"], "head 之前的系统条目不在这段上下文里");

  const rebase = systemDraft(entries, desired, 2);
  assert.deepEqual(rebase?.model?.[0], { role: "system", content: "", sections: desired, timestamp: 2 }, "head 之后没有系统条目：整份基线");
  entries.push(record(6, rebase!));
  assert.deepEqual(context(entries).messages.map(show)[0], `system ${JSON.stringify(desired)}`);
  assert.equal(systemDraft(entries, desired, 3), undefined);
});

// ── 19.4 存储：提交之后才看得见 ────────────────────────────────

/** 记下 work 期间写过东西的文件句柄依次做了什么（write 的是整行还是换行符、sync），最后它们关掉了没有。 */
async function watchFileHandles(t: test.TestContext, work: () => Promise<unknown>): Promise<string[]> {
  const probe = await open(os.devNull, "r");
  const proto = Object.getPrototypeOf(probe) as Record<"write" | "sync", (this: { fd: number }, ...args: unknown[]) => Promise<unknown>>;
  await probe.close();
  const original = { write: proto.write, sync: proto.sync };
  const writers = new Set<{ fd: number }>();
  const steps: string[] = [];
  proto.write = function (...args: unknown[]) {
    writers.add(this);
    steps.push(args[0] === "\n" ? "write 换行符" : "write 一行");
    return original.write.apply(this, args);
  };
  proto.sync = function (...args: unknown[]) {
    if (writers.has(this)) steps.push("sync");
    return original.sync.apply(this, args);
  };
  const restore = () => Object.assign(proto, original);
  t.after(restore);
  try {
    await work();
  } finally {
    restore();
  }
  // 关掉的文件句柄 fd 是 -1。
  steps.push([...writers].every((handle) => handle.fd === -1) ? "close" : "没关");
  return steps;
}

test("19.4 JSONL：一批条目一行，换行符之前的残行不算提交、下一次提交之前截掉；坏掉的已提交行说出行号", async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, "session.jsonl");
  const log = await DurableLog.open(new JsonlDurableStore(file));
  const steps = await watchFileHandles(t, () => log.append([message(user("one")), message(reply("two"))]));
  assert.deepEqual(steps, ["write 一行", "write 换行符", "sync", "close"], "一次提交：先写这一行，换行符最后写，写完 sync，再关掉文件");
  await log.append([{ kind: "note", data: "three" }]);
  await assert.rejects(log.append([{ kind: "note", data: 10n }]), (error) => error instanceof DurableStoreError && error.nothingWritten, "编码不成 JSON：什么也没写，会话照常可用");
  const lines = (await readFile(file, "utf8")).split("\n");
  assert.equal(lines.length, 3, "两次提交，两行（最后是换行符之后的空串）");
  assert.deepEqual(JSON.parse(lines[0]!).entries.map((entry: EntryRecord) => entry.id), [1, 2]);
  assert.equal(JSON.parse(lines[1]!).commitSeq, 2);

  await appendFile(file, '{"commitSeq":3,"entries":[{"id":4,"kind":"no');
  const reopened = await DurableLog.open(new JsonlDurableStore(file));
  assert.deepEqual(reopened.entries.map((entry) => [entry.id, entry.commitSeq]), [[1, 1], [2, 1], [3, 2]]);
  await reopened.append([{ kind: "note", data: "four" }]);
  const after = (await readFile(file, "utf8")).split("\n");
  assert.equal(after.length, 4);
  assert.doesNotMatch(after.join("\n"), /"no[^t]/, "残行被截掉了");
  assert.deepEqual((await new JsonlDurableStore(file).load()).map((entry) => entry.id), [1, 2, 3, 4]);

  await writeFile(file, `${after[0]}\nnot json\n`);
  await assert.rejects(new JsonlDurableStore(file).load(), /第 2 行/);
});

test("19.4 SQLite：entries 表按 id 存 JSON 记录与 commit_seq，WAL 模式，一批一个事务；Node 20 上说明要哪一版", async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, "session.sqlite");
  if (sqlite === undefined) {
    await assert.rejects(SqliteDurableStore.open(file), /node:sqlite.*22\.13/);
    t.diagnostic(`${NO_SQLITE}：SQLite 的这一项只检查拒绝的说明，真正的存取在 Node 22 及更新的版本上跑`);
    return;
  }
  const store = await SqliteDurableStore.open(file);
  const log = await DurableLog.open(store);
  const nine = nineEntries().map(({ id: _id, commitSeq: _seq, ...draft }) => draft);
  await log.append(nine.slice(0, 3));
  await log.append(nine.slice(3));
  await store.close();

  const db = new sqlite.DatabaseSync(file);
  t.after(() => db.close());
  assert.equal((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode, "wal");
  const rows = db
    .prepare("SELECT id, commit_seq, json_extract(record, '$.kind') AS kind, json_extract(record, '$.model[0].role') AS role FROM entries ORDER BY id")
    .all() as { id: number; commit_seq: number; kind: string; role: string | null }[];
  assert.deepEqual(rows.map((row) => [row.id, row.commit_seq, row.kind, row.role]), [
    [1, 1, "message", "user"],
    [2, 1, "message", "assistant"],
    [3, 1, "message", "assistant"],
    [4, 2, "message", "toolResult"],
    [5, 2, "pi.system", "system"],
    [6, 2, "message", "toolResult"],
    [7, 2, "message", "assistant"],
    [8, 2, "edit", null],
    [9, 2, "note", null],
  ]);
  const reopened = await DurableLog.open(await SqliteDurableStore.open(file));
  assert.deepEqual(context(reopened.entries).messages.map(show), context(nineEntries()).messages.map(show), "读回来拼出的还是那六条");
  await reopened.store.close();

  // 事务里出错：ROLLBACK，这一批一行也不留，同一个连接接着能提交下一批。
  let failOnce = true;
  const flaky = await SqliteDurableStore.open(path.join(dir, "rollback.sqlite"), {
    crashPoint: () => {
      if (failOnce) {
        failOnce = false;
        throw new Error("disk I/O error");
      }
    },
  });
  await assert.rejects(flaky.commit([record(1, { kind: "note", data: "lost" })]), /disk I\/O error/);
  await flaky.commit([record(1, { kind: "note", data: "kept" })]);
  assert.deepEqual((await flaky.load()).map((entry) => entry.data), ["kept"], "出错的那一批回滚了");
  await flaky.close();
});

test("19.4 提交返回之后才看得见；一批要么全在要么全不在；结局不确定的失败让会话停用，之后每个操作都是同一句错误", async () => {
  const store = new MemoryStore();
  const log = await DurableLog.open(store);
  const seen: number[][] = [];
  log.subscribe((batch) => seen.push(batch.map((entry) => entry.id)));
  let release = () => {};
  store.gate = new Promise((resolve) => (release = resolve));
  const pending = log.append([message(user("a")), message(user("b")), message(user("c"))]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(log.entries, [], "提交还没返回：谁也看不见");
  assert.deepEqual(seen, []);
  release();
  await pending;
  assert.deepEqual(seen, [[1, 2, 3]], "一批一次通知");
  assert.deepEqual(store.batches.map((batch) => batch.length), [3], "一批一次提交");

  store.gate = undefined;
  store.failWith = new DurableStoreError("条目编码不成 JSON：什么也没写。", true);
  await assert.rejects(log.append([message(user("d"))]), DurableStoreError);
  store.failWith = undefined;
  await log.append([message(user("d"))]);
  assert.equal(log.entries.length, 4, "确定什么也没写的失败不让会话停用");

  // 存储自己的错误，只要不是确定什么也没写（nothingWritten 为假），也一样停用会话。
  store.failWith = new DurableStoreError("disk I/O error", false);
  const first = await log.append([message(user("e"))]).then(() => undefined, (error: unknown) => error);
  assert.ok(first instanceof PoisonedSessionError);
  assert.match(first.message, /会话记录已停用：第 3 次提交的结局不确定（disk I\/O error）/);
  store.failWith = undefined;
  await assert.rejects(log.append([message(user("f"))]), (error) => error === first);
  assert.throws(() => log.entries, (error) => error === first);
  assert.deepEqual(seen.at(-1), [4], "结局不确定的那一批从没显示过");
});

// ── 19.4 SIGKILL：真正的子进程，真正的信号 ─────────────────────

const here = path.dirname(fileURLToPath(import.meta.url));
const storeUrl = pathToFileURL(path.join(here, "../src/durable/store.js")).href;

const CHILD = `
import { writeSync } from "node:fs";
import { DurableLog, openStore } from ${JSON.stringify(storeUrl)};
const [kind, file, point] = process.argv.slice(2);
const say = (word) => writeSync(1, word + "\\n");
// 停在这里等父进程的 SIGKILL；20 秒后自己退出，父进程出了意外也不留下进程。
const block = () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20000); process.exit(3); };
let crash = false;
const store = await openStore(kind, file, { crashPoint: () => { if (crash) { say("during"); block(); } } });
const log = await DurableLog.open(store);
const note = (data) => ({ kind: "note", data });
await log.append([note("a1"), note("a2")]);
log.subscribe((batch) => { if (point === "after" && batch.length === 3) { say("after"); block(); } });
if (point === "before") { say("before"); block(); }
crash = point === "during";
await log.append([note("b1"), note("b2"), note("b3")]);
say("shown");
`;

async function killAt(script: string, kind: "jsonl" | "sqlite", file: string, point: string): Promise<void> {
  const child = spawn(process.execPath, ["--no-warnings", script, kind, file, point], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk;
      if (out.includes(`${point}\n`)) resolve();
    });
    child.on("exit", () => reject(new Error(`子进程没停在 ${point} 就退出了：${out}${err}`)));
  });
  child.kill("SIGKILL");
  assert.equal(await exited, "SIGKILL");
}

async function sigkillScenario(t: test.TestContext, kind: "jsonl" | "sqlite"): Promise<void> {
  const dir = await tempDir(t);
  const script = path.join(dir, "child.mjs");
  await writeFile(script, CHILD);
  const file = (point: string) => path.join(dir, `${point}.${kind}`);
  const points = ["before", "during", "after"] as const;
  await Promise.all(points.map((point) => killAt(script, kind, file(point), point)));
  const open = (point: string) => (kind === "sqlite" ? SqliteDurableStore.open(file(point)) : Promise.resolve(new JsonlDurableStore(file(point))));
  const expected = { before: ["a1", "a2"], during: ["a1", "a2"], after: ["a1", "a2", "b1", "b2", "b3"] };
  for (const point of points) {
    const store = await open(point);
    const log = await DurableLog.open(store);
    assert.deepEqual(log.entries.map((entry) => entry.data), expected[point], `${kind}：杀在 ${point}`);
    // 杀掉之后照样能接着写，id 接着已提交的编号。
    await log.append([{ kind: "note", data: "c1" }]);
    await store.close();
    const again = await open(point);
    assert.deepEqual((await again.load()).map((entry) => [entry.id, entry.data]).at(-1), [expected[point].length + 1, "c1"]);
    await again.close();
  }
  if (kind === "jsonl") {
    assert.doesNotMatch(await readFile(file("during"), "utf8"), /b1/, "中途被杀的那一行在下一次提交之前截掉了");
  }
}

test("19.4 SIGKILL（JSONL）：提交之前、提交中途、提交之后显示之前杀掉子进程，重新打开既不多出未提交的，也不丢掉已提交的", async (t) => {
  await sigkillScenario(t, "jsonl");
});

test("19.4 SIGKILL（SQLite）：同样三个时刻，事务没有 COMMIT 的一批不在，COMMIT 过的一批都在；Node 20 上说明要哪一版", async (t) => {
  if (sqlite === undefined) {
    await assert.rejects(SqliteDurableStore.open(path.join(os.tmpdir(), "never.sqlite")), /node:sqlite/);
    t.diagnostic(`${NO_SQLITE}：SQLite 的 SIGKILL 在 Node 22 及更新的版本上跑`);
    return;
  }
  await sigkillScenario(t, "sqlite");
});

// ── 19.5 Agent 跑在记录上 ──────────────────────────────────────

const read = (runs: string[], log?: () => DurableLog, seenIntent?: boolean[]) =>
  defineTool({
    name: "read",
    description: "Read a file.",
    parameters: s.object({ path: s.string() }),
    execute: async ({ path: file }, context) => {
      runs.push(file);
      if (log !== undefined) {
        const entries = log().entries;
        seenIntent?.push(entries.some((entry) => entry.model?.some((item) => item.role === "assistant" && item.content.some((block) => block.type === "toolCall" && block.id === context.toolCallId))));
      }
      return { content: [text(`contents of ${file}`)] };
    },
  });

test("19.5 Agent 跑在记录上：用户的话与系统基线一批提交；带着调用的回复提交之后工具才跑；请求只从记录拼出，前缀逐字节不变", async () => {
  const store = new MemoryStore();
  store.delayMs = 5;
  const log = await DurableLog.open(store);
  const runs: string[] = [];
  const intent: boolean[] = [];
  let commitDuringTool = false;
  const tool = read(runs, () => log, intent);
  const watched = defineTool({ ...tool, execute: async (args, ctx) => ((commitDuringTool ||= store.inCommit), tool.execute(args, ctx)) });
  const model = new ScriptedModel([
    { kind: "reply", content: [text("reading"), call("c1", "read", { path: "a.txt" })], stopReason: "toolUse" },
    { kind: "reply", content: [text("a.txt is fine")], stopReason: "stop" },
    { kind: "reply", content: [text("in packages now")], stopReason: "stop" },
  ], { now: () => 5 });
  let cwd = "/repo";
  const session = await DurableSession.open({ log, model, tools: [watched], system: () => ({ preamble: "Be terse.", cwd }), now: () => 5 });
  await session.prompt("check a.txt");

  assert.deepEqual(runs, ["a.txt"]);
  assert.deepEqual(intent, [true], "工具开始时，带着这个调用的回复已经提交");
  assert.equal(commitDuringTool, false, "工具不在提交里跑");
  assert.deepEqual(store.batches[0]!.map((entry) => entry.kind), ["message", "pi.system"], "用户的话与系统基线同一批，系统条目写在后面");
  assert.deepEqual(model.requests[0]!.messages.map(show), ['system {"preamble":"Be terse.","cwd":"/repo"}', "user「check a.txt」"]);
  assert.deepEqual(model.requests[1]!.messages.map(show).slice(2), ["assistant「reading」 ->c1", "result<-c1"]);
  assert.equal((model.requests[1]!.messages.at(-1) as ToolResultMessage).content[0]!.text, "contents of a.txt", "下一次请求等结果提交完才拼：不是补上的那条");
  assert.deepEqual(session.entries.map((entry) => entry.kind), ["message", "pi.system", "pi.partial", "message", "message", "message"]);

  cwd = "/repo/packages";
  await session.prompt("and now?");
  const serialized = (request: AgentContext) => request.messages.map((item) => JSON.stringify(item)).join("\n");
  assert.ok(serialized(model.requests[2]!).startsWith(`${serialized(model.requests[1]!)}\n`), "第三次请求以第二次请求的全部字节开头");
  assert.deepEqual(model.requests[2]!.messages.map(show).slice(-2), ["user「and now?」", 'system {"cwd":"/repo/packages"}']);

  // 带着调用的回复没能提交（结局不确定）：会话停用，工具不跑，prompt 抛出那一句。
  const failing = new MemoryStore();
  const failingLog = await DurableLog.open(failing);
  failingLog.subscribe(() => (failing.failWith = new Error("disk I/O error")));
  const blocked: string[] = [];
  const again = await DurableSession.open({
    log: failingLog,
    model: new ScriptedModel([{ kind: "reply", content: [call("c2", "read", { path: "b.txt" })], stopReason: "toolUse" }]),
    tools: [read(blocked)],
    system: () => ({ preamble: "p" }),
  });
  await assert.rejects(again.prompt("check b.txt"), PoisonedSessionError);
  assert.deepEqual(blocked, [], "意图没有提交，工具就不跑");
});

/** 一段一段慢慢说的模型：每段之前把时钟拨快 30 毫秒；hang 为真时说完也不收尾（进程在这里“死掉”）。 */
function slowModel(clock: { now: number }, words: string[], hang: boolean): Model {
  return {
    provider: "slow",
    id: "slow-v1",
    stream() {
      const stream = new AssistantMessageEventStream();
      const partial = assistantMessage([text("")], "stop", { provider: "slow", model: "slow-v1", timestamp: clock.now });
      void (async () => {
        stream.push({ type: "start", partial: structuredClone(partial) });
        for (const word of words) {
          await new Promise((resolve) => setImmediate(resolve));
          clock.now += 30;
          (partial.content[0] as { text: string }).text += word;
          stream.push({ type: "text_delta", contentIndex: 0, delta: word, partial: structuredClone(partial) });
        }
        if (hang) return;
        stream.push({ type: "done", reason: "stop", message: structuredClone(partial) });
      })();
      return stream;
    },
  };
}

test("19.5 流式回复至多每 100 毫秒存一个检查点；重新打开时最后一个检查点成了 aborted 的回复：记录里看得到，上下文里没有", async () => {
  const store = new MemoryStore();
  const clock = { now: 0 };
  const words = ["al", "pha ", "be", "ta ", "gam", "ma ", "del", "ta ", "eps", "ilon"];
  const first = await DurableSession.open({ log: await DurableLog.open(store), model: slowModel(clock, words, false), system: () => ({ preamble: "p" }), now: () => clock.now });
  await first.prompt("count");
  const checkpointTexts = (entries: readonly EntryRecord[]) =>
    entries
      .filter((entry) => entry.kind === "pi.partial")
      .map((entry) => (entry.data as { partial: AssistantMessage }).partial.content.map((block) => (block.type === "text" ? block.text : "")).join(""));
  assert.deepEqual(checkpointTexts(first.entries), ["al", "alpha beta gam", "alpha beta gamma delta eps"], "第 30、150、270 毫秒各一个：间隔不少于 100 毫秒");
  assert.equal(first.entries.at(-1)!.model![0]!.role, "assistant");
  const tight = await DurableSession.open({ log: await DurableLog.open(new MemoryStore()), model: slowModel(clock, words, false), system: () => ({ preamble: "p" }), now: () => clock.now, checkpointMs: 60 });
  await tight.prompt("count");
  assert.deepEqual(
    checkpointTexts(tight.entries),
    ["al", "alpha be", "alpha beta gam", "alpha beta gamma del", "alpha beta gamma delta eps"],
    "checkpointMs 是 60：第 30、90、150、210、270 毫秒各一个，正好隔满 60 毫秒也存",
  );

  const crashed = new MemoryStore();
  const dying = await DurableSession.open({ log: await DurableLog.open(crashed), model: slowModel(clock, words.slice(0, 5), true), system: () => ({ preamble: "p" }), now: () => clock.now });
  void dying.prompt("count again");
  while (crashed.batches.flat().filter((entry) => entry.kind === "pi.partial").length < 2) await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 5));

  // 同一份存储再打开一次：相当于进程死了、重新启动。
  const reopened = await DurableSession.open({ log: await DurableLog.open(crashed), model: new ScriptedModel([]), system: () => ({ preamble: "p" }) });
  assert.equal(reopened.recovery.aborted.length, 1);
  const last = reopened.entries.at(-1)!;
  const aborted = last.model![0] as AssistantMessage;
  assert.equal(aborted.stopReason, "aborted");
  assert.equal(aborted.errorMessage, RECOVERED_PARTIAL);
  assert.equal((aborted.content[0] as { text: string }).text, "alpha beta gam", "最后一个检查点的文字");
  assert.deepEqual(reopened.context().messages.map(show), ['system {"preamble":"p"}', "user「count again」"], "模型看不到半截回复");
  const again = await DurableSession.open({ log: await DurableLog.open(crashed), model: new ScriptedModel([]), system: () => ({ preamble: "p" }) });
  assert.equal(again.recovery.aborted.length, 0, "恢复过一次的检查点不再恢复");
});

test("19.5 重新打开时没有结果的调用：safe 的工具再跑一次，其余的记一条 interrupted 的错误结果；resume 让模型接着回答", async () => {
  const store = new MemoryStore();
  const log = await DurableLog.open(store);
  await log.append([message(user("read it, then pay")), systemDraft([], { preamble: "p" }, 1)!]);
  await log.append([message(reply("doing both", [call("r1", "read", { path: "bill.txt" }), call("p1", "pay", { amount: 5 })]))]);
  assert.deepEqual(danglingCalls(log.entries).map((item) => item.id), ["r1", "p1"]);

  const runs: string[] = [];
  let paid = 0;
  const pay = defineTool({ name: "pay", description: "Pay.", parameters: s.object({ amount: s.number() }), execute: async () => ((paid += 1), { content: [text("paid")] }) });
  const model = new ScriptedModel([{ kind: "reply", content: [text("read ok; payment needs a check")], stopReason: "stop" }]);
  const session = await DurableSession.open({ log: await DurableLog.open(store), model, tools: [read(runs), pay], safeTools: ["read"], system: () => ({ preamble: "p" }), now: () => 9 });

  assert.deepEqual(runs, ["bill.txt"], "safe 的工具重跑一次");
  assert.equal(paid, 0, "unsafe 的工具不再跑");
  assert.deepEqual(session.recovery.rerun.map((item) => item.id), ["r1"]);
  assert.deepEqual(session.recovery.interrupted.map((item) => item.id), ["p1"]);
  const results = session.context().messages.slice(-2) as ToolResultMessage[];
  assert.deepEqual(results.map((item) => [item.toolCallId, item.isError, item.content[0]!.text]), [
    ["r1", false, "contents of bill.txt"],
    ["p1", true, interruptedText("pay")],
  ]);
  assert.equal(interruptedText("pay"), "Tool pay was interrupted: the process stopped before it reported a result. It was not run again, because running it twice may not be safe; check its effect before retrying.");
  assert.deepEqual(danglingCalls(session.entries), []);

  await session.resume();
  assert.equal(model.requests.length, 1);
  assert.deepEqual(model.requests[0]!.messages.map(show).slice(-2), ["result<-r1", "result<-p1"]);
  assert.equal(show(session.context().messages.at(-1)!), "assistant「read ok; payment needs a check」");
  await session.resume();
  assert.equal(model.requests.length, 1, "记录不以工具结果结尾时 resume 什么也不做");
});

// ── 19.5 tiny-pi --durable：真正的进程，真正的 SIGKILL ──────────

/** tiny-pi 子进程：模型每 20 毫秒说一个 tick，永远不说完（20 秒后自己退出，出了意外也不留下进程）。 */
function tinyPiChild(cwd: string): string {
  const url = (relative: string) => new URL(relative, import.meta.url).href;
  return [
    `import { main, processIo } from ${JSON.stringify(url("../src/cli/main.js"))};`,
    `import { AssistantMessageEventStream } from ${JSON.stringify(url("../src/event-stream.js"))};`,
    "setTimeout(() => process.exit(3), 20000).unref();",
    "const model = { provider: 'ticker', id: 'ticker-v1', stream() {",
    "  const stream = new AssistantMessageEventStream();",
    "  const partial = { role: 'assistant', content: [{ type: 'text', text: '' }], provider: 'ticker', model: 'ticker-v1', usage: { input: 0, output: 0, totalTokens: 0 }, stopReason: 'stop', timestamp: Date.now() };",
    "  stream.push({ type: 'start', partial: structuredClone(partial) });",
    "  let n = 0;",
    "  setInterval(() => { const delta = `tick ${n++} `; partial.content[0].text += delta; stream.push({ type: 'text_delta', contentIndex: 0, delta, partial: structuredClone(partial) }); }, 20);",
    "  return stream;",
    "} };",
    `await main(process.argv.slice(2), { ...processIo(), cwd: ${JSON.stringify(cwd)}, model });`,
    "",
  ].join("\n");
}

test("19.5 tiny-pi --durable：流到一半被 SIGKILL，再启动时续上已提交的历史，半截回复标成中断；eval 的 durable-crash-in-read 通过", async (t) => {
  const root = await tempDir(t);
  const cwd = path.join(root, "project");
  const agentDir = path.join(root, "agent");
  await mkdir(cwd);
  const script = path.join(root, "tiny-pi-durable.mjs");
  await writeFile(script, tinyPiChild(cwd));
  const loader = process.execArgv.filter((arg, index, all) => arg.startsWith("--import") || all[index - 1] === "--import");
  const child = spawn(process.execPath, [...loader, "--no-warnings", script, "--durable", "count for me"], {
    env: { ...process.env, PI_COURSE_AGENT_DIR: agentDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => child.kill("SIGKILL"));
  let out = "";
  let err = "";
  child.stderr.on("data", (chunk: Buffer) => (err += chunk));
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk;
      if (/tick 4 /.test(out)) resolve();
    });
    child.once("exit", () => reject(new Error(`tiny-pi 没流到 tick 4 就退出了：${out}${err}`)));
  });
  child.kill("SIGKILL");
  assert.equal(await exited, "SIGKILL");
  const shownBeforeKill = out.slice(out.indexOf("> count for me\n") + "> count for me\n".length);
  assert.match(shownBeforeKill, /^tick 0 tick 1 /, "屏幕上只有提交过的检查点");

  const { code, out: again, err: notes } = await runMain(["--durable"], agentDir, cwd);
  assert.equal(code, 0, notes);
  if (sqlite !== undefined) assert.equal(notes, "", "有 node:sqlite 时 stderr 什么也不说");
  const lines = again.split("\n");
  assert.match(lines[0]!, /^续上持久会话 .*\.(sqlite|jsonl)（\d+ 个条目）$/);
  assert.match(lines[0]!, sqlite === undefined ? /\.jsonl/ : /\.sqlite/, "有 node:sqlite 就存进 SQLite");
  if (sqlite === undefined) assert.match(notes, /没有内置的 node:sqlite，持久会话改存 JSONL/);
  assert.equal(lines[1], "> count for me");
  assert.ok(lines[2]!.startsWith(`${ABORTED_MARK} ${shownBeforeKill.trimEnd()}`), `半截回复标成中断，至少有被杀之前显示的那些：${lines[2]}`);

  assert.deepEqual(parseCliArgs(["--durable", "--yolo", "--trust", "t"]), { mode: "interactive", messages: ["t"], session: "new", allow: [], yolo: true, trust: true, help: false, durable: true });
  assert.deepEqual(parseCliArgs(["t"]), { mode: "interactive", messages: ["t"], session: "new", allow: [], yolo: false, trust: false, help: false }, "没给 --durable 就没有这个字段，其余字段照旧");

  // 屏幕上的样子：调用写成 [调用 read]，工具结果只显示第一行，出错的标上“出错”。
  assert.equal(displayLine(reply("reading", [call("a")])), "reading [调用 read]");
  assert.equal(displayLine(result("a", "line one\nline two")), "[read] line one");
  assert.equal(displayLine({ ...result("a", "line one\nline two"), isError: true }), "[read 出错] line one");

  // 一个新项目上跑完一个任务：没有“续上”那一行；检查点先显示，回复提交时补齐剩下的；工具结果一行。
  const fresh = path.join(root, "fresh");
  await mkdir(fresh);
  await writeFile(path.join(fresh, "notes.txt"), "first line\nsecond line\n");
  const scripted = new ScriptedModel([
    { kind: "reply", content: [text("reading"), call("n1", "read", { path: "notes.txt" })], stopReason: "toolUse" },
    { kind: "reply", content: [text("the notes start with first line")], stopReason: "stop" },
  ]);
  const done = await runMain(["--durable", "what do the notes say?"], agentDir, fresh, { model: scripted, now: () => 42 });
  assert.equal(done.code, 0, done.err);
  const screen = done.out.split("\n");
  assert.deepEqual([screen[0], screen[1], screen[3], screen.length], ["> what do the notes say?", "reading [调用 read]", "the notes start with first line", 5], done.out);
  assert.match(screen[2]!, /^\[read\] .*first line/);
  const freshFile = path.join(agentDir, "durable", `${sessionFolderName(fresh)}.sqlite`);
  if (sqlite !== undefined) assert.deepEqual([existsSync(freshFile), existsSync(`${freshFile}-wal`)], [true, false], "退出之前关掉了存储（SQLite 关掉最后一个连接时收掉 -wal 文件）");
  const freshStore = await openProjectStore(agentDir, fresh);
  const freshEntries = await freshStore.store.load();
  await freshStore.store.close();
  assert.equal(freshEntries[0]!.model![0]!.timestamp, 42, "注入的时钟也交给了持久会话");

  // 只有一个条目的记录也要“续上”。
  const single = path.join(root, "single");
  await mkdir(single);
  const singleStore = await openProjectStore(agentDir, single);
  await (await DurableLog.open(singleStore.store)).append([{ kind: "note", data: "only one" }]);
  await singleStore.store.close();
  const one = await runMain(["--durable"], agentDir, single);
  assert.equal(one.out, `续上持久会话 ${singleStore.file}（1 个条目）\n`);

  // 打不开的记录：stderr 说出原因，退出码 1。
  const broken = path.join(root, "broken");
  await mkdir(broken);
  const brokenStore = await openProjectStore(agentDir, broken);
  await brokenStore.store.close();
  if (sqlite === undefined) await writeFile(brokenStore.file, "not json\n");
  else {
    const db = new sqlite.DatabaseSync(brokenStore.file);
    db.prepare("INSERT INTO entries (id, commit_seq, record) VALUES (1, 1, 'not json')").run();
    db.close();
  }
  const refused = await runMain(["--durable"], agentDir, broken);
  assert.equal(refused.code, 1);
  assert.match(refused.err.split("\n").at(-2)!, /^tiny-pi：.*拒绝打开。$/, "最后一行说出打不开的原因");

  const report = await runEvalTask(DURABLE_TASKS[0]!);
  assert.ok(report.ok, formatEvalTable([report]));
  assert.equal(report.toolErrors, 0);
  assert.equal("error" in report, false, "跑完了的报告没有 error");
  await checkDurableEval(root);
});

/** 持久任务的评测：死在一个会改动工作区的工具里、记成 interrupted；报告的规矩与第 14 章相同。 */
async function checkDurableEval(root: string): Promise<void> {
  const crashInWrite: EvalTask = {
    id: "durable-crash-in-write",
    title: "写文件时进程死掉，重新打开：write 不重跑，记成 interrupted",
    files: {},
    prompts: ["write done.txt", "and now?"],
    turns: [
      { kind: "reply", content: [call("w1", "write", { path: "done.txt", content: "ok\n" })], stopReason: "toolUse" },
      { kind: "reply", content: [text("the write was interrupted; check done.txt")], stopReason: "stop" },
      { kind: "reply", content: [text("still here")], stopReason: "stop" },
    ],
    durable: { crashIn: "write", safeTools: ["read"] },
    checks: [recoveredAs("write", "interrupted")],
  };
  const workspace = path.join(root, "eval-workspace");
  const storeDir = path.join(root, "eval-store");
  await mkdir(workspace);
  await mkdir(storeDir);
  const run = await runDurableTask(crashInWrite, workspace, storeDir, new ScriptedModel(crashInWrite.turns));
  assert.equal(run.error, undefined);
  assert.equal(await readFile(path.join(workspace, "done.txt"), "utf8"), "ok\n", "工具真的做完了它的事，才死掉");
  const storeFile = path.join(storeDir, sqlite === undefined ? "session.jsonl" : "session.sqlite");
  assert.equal(existsSync(storeFile), true, "有 node:sqlite 就存进 SQLite，否则 JSONL");
  if (sqlite !== undefined) assert.equal(existsSync(`${storeFile}-wal`), false, "跑完关掉了存储");
  const said = run.entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "user" ? [show(entry.message)] : []));
  assert.deepEqual(said, ["user「write done.txt」", "user「and now?」"], "第一句在死掉之前问，后面的话在恢复之后接着问");

  // agent 目录里已经写好了文件（任务的 agentFiles）也照样跑。
  const interrupted = await runEvalTask({ ...crashInWrite, agentFiles: { "notes.md": "written before the durable run\n" } });
  assert.ok(interrupted.ok, formatEvalTable([interrupted]));
  assert.equal(interrupted.steps, 3, "死掉之前一次请求，resume 一次，第二句一次");
  assert.equal(interrupted.toolErrors, 1, "interrupted 的结果是一条错误结果");

  const [readTask] = DURABLE_TASKS as [EvalTask];
  const wrongCheck = await runEvalTask({ ...readTask, checks: [recoveredAs("read", "interrupted")] });
  assert.equal(wrongCheck.ok, false, "read 重跑了：说它是 interrupted 的检查不通过");
  const neverCrashed = await runEvalTask({ ...readTask, durable: { crashIn: "edit", safeTools: ["read"] }, checks: [answerOk()] });
  assert.equal(neverCrashed.ok, false, "第一次运行没有死在半路：有 error，检查全过也不算通过");
  assert.match(neverCrashed.error ?? "", /一直没有被调用/);
  const live = await runEvalTask(readTask, { model: new ScriptedModel(readTask.turns) });
  assert.deepEqual([live.checks.length, live.ok], [0, false], "真模型只跑看工作区的检查；一项也没有就不算通过");
  const plain = await runEvalTask(VISIBLE_TASKS[0]!);
  assert.ok(plain.ok, formatEvalTable([plain]));

  // recoveredAs 只数这个工具的 durable_recovery 条目；rerun 的结果不能是错误。
  const entry = (id: string, rest: Partial<SessionEntry>): SessionEntry => ({ id, parentId: null, timestamp: "2026-01-01T00:00:00.000Z", ...rest }) as SessionEntry;
  const recovery = (id: string, how: string, toolName: string) => entry(id, { type: "custom", customType: DURABLE_RECOVERY, data: { how, toolName } } as Partial<SessionEntry>);
  const evidence = (entries: SessionEntry[]) => ({ entries }) as unknown as EvalContext;
  const rerunCheck = recoveredAs("read", "rerun");
  assert.equal(rerunCheck.name, "重新打开时 read 的调用重跑了一次");
  assert.equal(recoveredAs("pay", "interrupted").name, "重新打开时 pay 的调用记成 interrupted、没有重跑");
  const okResult = entry("r", { type: "message", message: result("r1", "contents") } as Partial<SessionEntry>);
  const errorResult = entry("r", { type: "message", message: { ...result("r1", "ENOENT"), isError: true } } as Partial<SessionEntry>);
  const others = [
    entry("o1", { type: "custom", customType: "other", data: { how: "rerun", toolName: "read" } } as Partial<SessionEntry>),
    recovery("o2", "interrupted", "pay"),
  ];
  assert.deepEqual(await rerunCheck.run(evidence([...others, okResult, recovery("c", "rerun", "read")])), { ok: true, reason: "read 重跑了一次，结果进了记录" });
  assert.equal((await rerunCheck.run(evidence([errorResult, recovery("c", "rerun", "read")]))).ok, false, "重跑的结果是错误：不通过");

  // 换成第 10 章的条目：一条链；恢复写下的工具结果后面跟一个 durable_recovery 条目，恢复出的半截回复不跟。
  const converted = asSessionEntries([
    record(1, message(user("go"))),
    record(2, { kind: "message", model: [reply("half", [], "aborted")], data: { recovered: "partial" } }),
    record(3, { kind: "message", model: [result("r1", "contents")], data: { recovered: "rerun" } }),
  ]);
  assert.deepEqual(converted.map((item) => item.type), ["message", "message", "message", "custom"]);
  assert.deepEqual(converted.map((item) => item.parentId), [null, ...converted.slice(0, -1).map((item) => item.id)], "一条链：每个条目的 parentId 是前一个");
}

/** 在这个进程里跑一次 tiny-pi 的 main，收下它的输出。 */
async function runMain(argv: string[], agentDir: string, cwd: string, extra: { model?: Model; now?: () => number } = {}): Promise<{ code: number; out: string; err: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (chunk: Buffer) => (out += chunk));
  stderr.on("data", (chunk: Buffer) => (err += chunk));
  const code = await main(argv, { stdin: new PassThrough(), stdout, stderr, env: { PI_COURSE_AGENT_DIR: agentDir }, cwd, ...extra });
  return { code, out, err };
}

function answerOk() {
  return { name: "总是通过", scope: "run" as const, run: () => ({ ok: true, reason: "ok" }) };
}
