import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test from "node:test";

import { AgentSession, parseBashInput } from "../src/agent-session.js";

import {
  availableTokens,
  COMPACTION_PROMPT,
  estimateContext,
  generateSummary,
  SUMMARY_SYSTEM_PROMPT,
  estimateTokens,
  findCutPoint,
  interactionBoundaries,
  shouldCompact,
  type CompactionSettings,
  type ContextItem,
} from "../src/compaction.js";
import { AssistantMessageEventStream } from "../src/event-stream.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { decodeLines, SessionEntryError, type SessionEntry } from "../src/session-entries.js";
import { InMemorySessionStore, JsonlSessionStore } from "../src/session-store.js";
import { checkCompactionCut, contextItems, SessionTree } from "../src/session-tree.js";
import {
  BRANCH_SUMMARY_PREFIX,
  BRANCH_SUMMARY_SUFFIX,
  COMPACTION_SUMMARY_PREFIX,
  COMPACTION_SUMMARY_SUFFIX,
  convertToLlm,
  isCodingAgentMessage,
  type BashExecutionMessage,
} from "../src/messages.js";
import { Workspace } from "../src/workspace.js";
import {
  assistantMessage,
  text,
  userMessage,
  currentSystemMessage,
  type AgentContext,
  type AgentMessage,
  type Message,
  type Model,
  type StreamOptions,
  type SystemMessage,
  type ToolCall,
  type ToolResultMessage,
} from "../src/types.js";

// 另一个模块（比如某个扩展）登记的角色：编码 Agent 不认识它。
interface ReviewNote {
  role: "reviewNote";
  verdict: string;
  timestamp: number;
}

declare module "../src/types.js" {
  interface CustomAgentMessages {
    reviewNote: ReviewNote;
  }
}

// ── 场景 ────────────────────────────────────────────────────────

const system: SystemMessage = { role: "system", content: "你是一个编程助手。", timestamp: 1 };

function bash(overrides: Partial<BashExecutionMessage> = {}): BashExecutionMessage {
  return {
    role: "bashExecution",
    command: "ls",
    output: "README.md\nsrc",
    exitCode: 0,
    cancelled: false,
    truncated: false,
    timestamp: 50,
    ...overrides,
  };
}

/** 请求里那条 user 消息的全部文字。 */
function userTextOf(message: Message | undefined): string {
  assert.ok(message !== undefined && message.role === "user", `应当是一条 user 消息：${JSON.stringify(message)}`);
  return message.content.map((block) => block.text).join("");
}

function call(id: string, name = "read"): ToolCall {
  return { type: "toolCall", id, name, arguments: { path: `${id}.txt` } };
}

function result(id: string, body = "内容"): ToolResultMessage {
  return { role: "toolResult", toolCallId: id, toolName: "read", content: [text(body)], isError: false, timestamp: 60 };
}

function items(messages: AgentMessage[]): ContextItem[] {
  return messages.map((message, index) => ({ entryId: `e${index}`, message }));
}

// ── 实践 11.1 ───────────────────────────────────────────────────

test("11.1 bashExecution 变成一条 user 消息：命令与输出原样在里面，时间戳不变", () => {
  const [converted, ...rest] = convertToLlm([bash()]);
  assert.equal(rest.length, 0);
  const body = userTextOf(converted);
  assert.match(body, /`ls`/);
  assert.match(body, /README\.md\nsrc/);
  assert.equal(converted!.timestamp, 50);
});

test("11.1 非零退出码、取消、截断都用话说出来；正常退出不多说一句", () => {
  const clean = userTextOf(convertToLlm([bash()])[0]);
  assert.doesNotMatch(clean, /退出码|取消|截断|太长/);
  assert.match(userTextOf(convertToLlm([bash({ exitCode: 2 })])[0]), /退出码 2/);
  const cancelled = userTextOf(convertToLlm([bash({ exitCode: undefined, cancelled: true })])[0]);
  assert.match(cancelled, /取消/);
  const truncated = userTextOf(convertToLlm([bash({ truncated: true, fullOutputPath: "/tmp/full.log" })])[0]);
  assert.match(truncated, /太长/);
  assert.match(truncated, /\/tmp\/full\.log/);
  assert.match(userTextOf(convertToLlm([bash({ output: "" })])[0]), /没有输出/);
});

test("11.1 excludeFromContext 的命令不进请求，但原数组里的那条消息一点没变", () => {
  const hidden = bash({ command: "cat .env", excludeFromContext: true });
  const transcript: AgentMessage[] = [userMessage("开始", 10), hidden];
  const before = structuredClone(transcript);
  const converted = convertToLlm(transcript);
  assert.equal(converted.length, 1);
  assert.doesNotMatch(JSON.stringify(converted), /cat \.env/);
  assert.deepEqual(transcript, before);
});

test("11.1 custom 只把 content 交给模型：display 与 details 不进请求", () => {
  const converted = convertToLlm([
    { role: "custom", customType: "audit", content: "审计：跳过了 3 个生成文件", display: false, details: { secret: "令牌-123" }, timestamp: 70 },
    { role: "custom", customType: "note", content: [text("第二条")], display: true, timestamp: 71 },
  ]);
  assert.deepEqual(converted, [
    { role: "user", content: [text("审计：跳过了 3 个生成文件")], timestamp: 70 },
    { role: "user", content: [text("第二条")], timestamp: 71 },
  ]);
});

test("11.1 两种摘要被上游的前缀与后缀包成 user 消息", () => {
  const [compacted, branched] = convertToLlm([
    { role: "compactionSummary", summary: "## 目标\n修好构建", tokensBefore: 9_000, timestamp: 80 },
    { role: "branchSummary", summary: "试过改用 yarn，放弃了", fromId: "e3", timestamp: 81 },
  ]);
  assert.equal(userTextOf(compacted), `${COMPACTION_SUMMARY_PREFIX}## 目标\n修好构建${COMPACTION_SUMMARY_SUFFIX}`);
  assert.equal(userTextOf(branched), `${BRANCH_SUMMARY_PREFIX}试过改用 yarn，放弃了${BRANCH_SUMMARY_SUFFIX}`);
  assert.ok(COMPACTION_SUMMARY_PREFIX.startsWith("The conversation history before this point was compacted"));
  assert.ok(BRANCH_SUMMARY_PREFIX.startsWith("The following is a summary of a branch"));
});

test("11.1 模型认识的四种角色原样通过，顺序不变", () => {
  const answer = assistantMessage([text("好的。")], "stop", { timestamp: 30 });
  const transcript: AgentMessage[] = [system, userMessage("你好", 20), answer, result("c1")];
  assert.deepEqual(convertToLlm(transcript), transcript);
});

test("11.1 别的模块登记的角色不归编码 Agent 转换：不进请求", () => {
  const note: AgentMessage = { role: "reviewNote", verdict: "通过", timestamp: 40 };
  assert.equal(isCodingAgentMessage(note), false);
  assert.equal(isCodingAgentMessage(bash()), true);
  assert.deepEqual(convertToLlm([note, userMessage("继续", 41)]), [userMessage("继续", 41)]);
});

// ── 实践 11.2 ───────────────────────────────────────────────────

const stamp = "2026-01-01T00:00:00.000Z";

/** 依次接成一条路径：每个条目的 parentId 是前一个。 */
function chain(...drafts: Array<Record<string, unknown> & { type: string }>): SessionEntry[] {
  return drafts.map((draft, index) => ({ id: `e${index + 1}`, parentId: index === 0 ? null : `e${index}`, timestamp: stamp, ...draft }) as SessionEntry);
}

const said = (value: string) => assistantMessage([text(value)], "stop", { timestamp: 5 });

test("11.2 压缩条目把 firstKeptEntryId 之前的一切换成 system 重放与一条 compactionSummary", () => {
  const patch: SystemMessage = { role: "system", content: "", sections: { style: "回答要短。" }, timestamp: 4 };
  const path = chain(
    { type: "message", message: system },
    { type: "message", message: userMessage("第一问", 2) },
    { type: "message", message: said("第一答") },
    { type: "message", message: patch },
    { type: "message", message: userMessage("第二问", 6) },
    { type: "message", message: said("第二答") },
    { type: "compaction", summary: "先前问过一个问题。", firstKeptEntryId: "e5", tokensBefore: 1_234 },
    { type: "message", message: userMessage("第三问", 8) },
  );
  const built = contextItems(path);
  assert.deepEqual(
    built.map((item) => item.entryId),
    ["e7", "e7", "e5", "e6", "e8"],
  );
  assert.deepEqual(built[0]!.message, currentSystemMessage([system, patch]));
  assert.deepEqual(built[1]!.message, { role: "compactionSummary", summary: "先前问过一个问题。", tokensBefore: 1_234, timestamp: Date.parse(stamp) });
  assert.doesNotMatch(JSON.stringify(built), /第一问|第一答/);
  const broken = path.map((entry) => (entry.type === "compaction" ? { ...entry, firstKeptEntryId: "e99" } : entry));
  assert.throws(() => contextItems(broken), /e7.*e99/);
  // 路径上的第一个条目也在“它之前的路径上”：从根保留，就没有被替换的部分，也就没有重放。
  const fromRoot = path.map((entry) => (entry.type === "compaction" ? { ...entry, firstKeptEntryId: "e1" } : entry));
  assert.deepEqual(
    contextItems(fromRoot).map((item) => item.entryId),
    ["e7", "e1", "e2", "e3", "e4", "e5", "e6", "e8"],
  );
});

test("11.2 branch_summary 条目变成 branchSummary 消息；custom 与 label 条目什么都不贡献", () => {
  const path = chain(
    { type: "message", message: userMessage("开始", 2) },
    { type: "branch_summary", fromId: "e1", summary: "那条分支试过 yarn。" },
    { type: "custom", customType: "audit", data: { files: 3 } },
    { type: "label", targetId: "e1", label: "起点" },
    { type: "message", message: userMessage("继续", 3) },
  );
  assert.deepEqual(contextItems(path), [
    { entryId: "e1", message: userMessage("开始", 2) },
    { entryId: "e2", message: { role: "branchSummary", summary: "那条分支试过 yarn。", fromId: "e1", timestamp: Date.parse(stamp) } },
    { entryId: "e5", message: userMessage("继续", 3) },
  ]);
});

test("11.2 读回会话时，压缩与分支摘要条目同样逐字段检查：错误说出哪一行、哪个条目、哪个字段", () => {
  const lines = chain(
    { type: "message", message: userMessage("开始", 2) },
    { type: "compaction", summary: "摘要", firstKeptEntryId: "e1", tokensBefore: 12 },
    { type: "branch_summary", fromId: "e1", summary: "另一支" },
  ).map((entry) => JSON.stringify(entry));
  assert.equal(decodeLines(lines).length, 3);
  const broken = (index: number, patch: Record<string, unknown>) =>
    lines.map((line, at) => (at === index ? JSON.stringify({ ...JSON.parse(line), ...patch }) : line));
  const fails = (patched: string[], expected: Partial<SessionEntryError>) =>
    assert.throws(() => decodeLines(patched), (error: unknown) => {
      assert.ok(error instanceof SessionEntryError, String(error));
      for (const [key, value] of Object.entries(expected)) assert.equal(error[key as keyof SessionEntryError], value, `${key}：${error.message}`);
      return true;
    });
  fails(broken(1, { tokensBefore: "很多" }), { line: 2, entryId: "e2", field: "tokensBefore" });
  fails(broken(1, { firstKeptEntryId: "e3" }), { line: 2, entryId: "e2", field: "firstKeptEntryId", code: "broken_link" });
  fails(broken(2, { summary: "" }), { line: 3, entryId: "e3", field: "summary" });
});

test("11.2 压缩与分支摘要条目写的时候就按读回的规矩检查：空摘要、不是非负整数的 tokensBefore 都拒绝，什么都不写", { timeout: 2_000 }, async () => {
  const store = new InMemorySessionStore();
  const tree = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
  tree.appendMessage(userMessage("开始", 2)); // e1
  await tree.flush();
  assert.throws(() => tree.appendCompaction("", "e1", 10), /摘要是空的/);
  for (const tokensBefore of [-1, 1.5, Number.NaN]) assert.throws(() => tree.appendCompaction("摘要", "e1", tokensBefore), /tokensBefore 应当是非负整数/);
  assert.throws(() => tree.branchWithSummary("e1", ""), /摘要是空的/);
  await tree.flush();
  assert.equal((await stored(store)).length, 1, "被拒绝的条目一条都没写");
  assert.equal(tree.getLeafId(), "e1");
  assert.equal((await SessionTree.open(store)).getEntries().length, 1);
});

/** 条目 id 按 e1、e2…… 数下去：断言里能直接写出来。 */
function counter(): () => string {
  let next = 0;
  return () => `e${(next += 1)}`;
}

/** 存储里现在有的条目（读回来的，不是内存里的树）。 */
async function stored(store: InMemorySessionStore | JsonlSessionStore): Promise<SessionEntry[]> {
  return (await store.load()).entries;
}

/** 一个临时工作区里的会话：内存存储、固定时钟、脚本模型。 */
/** 每次写入都要等 20 毫秒才落盘（像一块慢盘）：不 await flush 就交回的方法，交回时条目还没写进去。 */
class LaggingStore extends InMemorySessionStore {
  override async append(entry: SessionEntry): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    await super.append(entry);
  }
}

async function withSession(
  turns: ScriptedTurn[],
  body: (session: AgentSession, model: ScriptedModel, store: InMemorySessionStore, root: string) => Promise<void>,
  compaction: CompactionSettings = { contextWindow: 100_000, reserveTokens: 0, safetyMargin: 0, keepRecentTokens: 20 },
  store: InMemorySessionStore = new InMemorySessionStore(),
): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi-course-11-"));
  try {
    const model = new ScriptedModel(turns, { now: () => 5 });
    const tree = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
    const workspace = await Workspace.open(root);
    const session = new AgentSession({ tree, model, systemPrompt: "你是一个编程助手。", workspace, compaction, now: () => 1_000 });
    await body(session, model, store, root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

const reply = (value: string): ScriptedTurn => ({ kind: "reply", content: [text(value)], stopReason: "stop" });

function savedMessages(entries: readonly SessionEntry[]): AgentMessage[] {
  return entries.flatMap((entry) => (entry.type === "message" ? [entry.message] : []));
}

test("11.2 `!cmd` 经第 08 章的 bash 工具在工作区里运行：记成 bashExecution，存进会话，下一次请求里是一条 user", { timeout: 5_000 }, async () => {
  await withSession([reply("看到了 notes.txt。")], async (session, model, store, root) => {
    await writeFile(path.join(root, "notes.txt"), "待办\n");
    await session.prompt("!ls");
    const ran = session.agent.state.messages.at(-1);
    assert.deepEqual(ran, { role: "bashExecution", command: "ls", output: "notes.txt\n", exitCode: 0, cancelled: false, truncated: false, timestamp: 1_000 });
    assert.deepEqual(savedMessages(await stored(store)).at(-1), ran);
    assert.equal(model.requests.length, 0, "`!` 命令不问模型");
    await session.prompt("有什么文件？");
    const sent = model.requests[0]!.messages;
    assert.deepEqual(sent.map((message) => message.role), ["system", "user", "user"]);
    assert.match(userTextOf(sent[1]), /`ls`[\s\S]*notes\.txt/);
  });
});

test("11.2 `!` 命令运行中被拒绝；交回时那条 bashExecution 已经落盘", { timeout: 5_000 }, async () => {
  await withSession(
    [reply("好的。")],
    async (session, _model, store) => {
      let refused: Promise<string> | undefined;
      const unsubscribe = session.subscribe((event) => {
        if (event.type === "turn_start") refused ??= session.executeBash("echo 插队").then(() => "运行中的 `!` 命令没有被拒绝", (error: Error) => error.message);
      });
      await session.prompt("你好");
      unsubscribe();
      assert.match((await refused) ?? "没有试", /运行中不能执行 `!` 命令/);
      const ran = await session.executeBash("echo 落盘");
      assert.deepEqual(savedMessages(await stored(store)).at(-1), ran, "executeBash 交回时这条记录应当已经写进会话");
    },
    undefined,
    new LaggingStore(),
  );
});

test("11.2 `!!cmd` 照样运行、照样存进会话，只是不进请求", { timeout: 5_000 }, async () => {
  await withSession([reply("好的。")], async (session, model, store, root) => {
    await writeFile(path.join(root, ".env"), "TOKEN=令牌-123\n");
    await session.prompt("!!cat .env");
    const ran = session.agent.state.messages.at(-1);
    assert.ok(ran?.role === "bashExecution" && ran.excludeFromContext === true && ran.output === "TOKEN=令牌-123\n", JSON.stringify(ran));
    assert.deepEqual(savedMessages(await stored(store)).at(-1), ran);
    await session.prompt("继续");
    const sent = JSON.stringify(model.requests[0]!.messages);
    assert.doesNotMatch(sent, /令牌-123|cat \.env/, "!! 的命令不该进请求");
  });
});

test("11.2 只有 `!` 或 `!!` 后面跟着命令才算命令；非零退出码与被取消都如实记下", { timeout: 5_000 }, async () => {
  assert.deepEqual(parseBashInput("!! git status "), { command: "git status", excludeFromContext: true });
  assert.deepEqual(parseBashInput("!ls -a"), { command: "ls -a", excludeFromContext: false });
  for (const notCommand of ["!", "!!", "!  ", "你好！", " !ls"]) assert.equal(parseBashInput(notCommand), undefined, notCommand);
  await withSession([], async (session) => {
    const ran = await session.executeBash("echo 坏了 >&2; exit 3");
    assert.equal(ran.exitCode, 3);
    assert.equal(ran.cancelled, false);
    assert.equal(ran.output, "坏了\n");
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    const cancelled = await session.executeBash("sleep 5", { signal: stop.signal });
    assert.equal(cancelled.cancelled, true);
    assert.equal(cancelled.exitCode, undefined);
  });
});

// ── 实践 11.3 ───────────────────────────────────────────────────

const budget: CompactionSettings = { contextWindow: 100, reserveTokens: 20, safetyMargin: 10, keepRecentTokens: 10 };

test("11.3 token 按模型读到的样子估算：约 4 个字符一个，不进上下文的消息算 0", () => {
  assert.equal(estimateTokens(userMessage("a".repeat(40), 1)), 10);
  assert.equal(estimateTokens(userMessage("a".repeat(41), 1)), 11);
  assert.equal(estimateTokens(bash({ excludeFromContext: true, output: "x".repeat(400) })), 0);
  assert.ok(estimateTokens(bash({ output: "x".repeat(400) })) > 100);
});

test("11.3 system 按重放后的一条先算；预算是窗口减去回答预留与余量", () => {
  const patch: SystemMessage = { role: "system", content: "b".repeat(40), timestamp: 2 };
  const base: SystemMessage = { role: "system", content: "a".repeat(40), timestamp: 1 };
  const estimate = estimateContext([base, userMessage("c".repeat(40), 3), patch]);
  // 重放：40 + "\n\n" + 40 = 82 个字符 → 21；user 40 个字符 → 10。
  assert.deepEqual(estimate, { systemTokens: 21, messageTokens: 10, total: 31 });
  // 可用 = 100 - 20 - 10 = 70：system 10 + user 60 正好装下，多一个 token 就要压缩。
  const fits = [base, userMessage("c".repeat(4 * 60), 3)];
  const over = [base, userMessage("c".repeat(4 * 60 + 1), 3)];
  assert.equal(estimateContext(fits).total, 70);
  assert.equal(shouldCompact(fits, budget), false);
  assert.equal(shouldCompact(over, budget), true);
  // 没有 system 时同样的对话装得下：system 确实被算进去了。
  assert.equal(shouldCompact([userMessage("c".repeat(4 * 60 + 1), 3)], budget), false);
  assert.deepEqual(estimateContext([userMessage("c".repeat(40), 3)]), { systemTokens: 0, messageTokens: 10, total: 10 }, "没有 system 就不算 system 的 token");
});

test("11.3 只在一段交互的开头切：工具调用和它的结果总在切点的同一边", () => {
  const transcript: AgentMessage[] = [
    system,
    userMessage("读 a", 2),
    assistantMessage([call("c1")], "toolUse", { timestamp: 3 }),
    result("c1"),
    assistantMessage([text("读完了")], "stop", { timestamp: 5 }),
    bash({ timestamp: 6 }),
    userMessage("再读 b", 7),
    assistantMessage([text("好")], "stop", { timestamp: 8 }),
  ];
  // system、assistant、toolResult 都不开启交互；bashExecution 和 user 开启。
  assert.deepEqual(interactionBoundaries(transcript), [1, 5, 6]);
});

test("11.3 结果乱序到达、中间还夹着别的消息：还有调用没配上结果的地方不能切", () => {
  const transcript: AgentMessage[] = [
    userMessage("读两个文件", 1),
    assistantMessage([call("c1"), call("c2")], "toolUse", { timestamp: 2 }),
    result("c2"),
    { role: "custom", customType: "steer", content: "顺便看看 c", display: true, timestamp: 4 },
    result("c1"),
    userMessage("谢谢", 6),
  ];
  // 第 3 项是 custom，但 c1 还在等结果：切在那里会把 c1 和它的结果分到两边。
  assert.deepEqual(interactionBoundaries(transcript), [0, 5]);
});

test("11.3 从最新往回整段保留交互，总量不超过 keepRecentTokens；最新一段总保留；没有可摘要的就不切", () => {
  const ten = (who: "u" | "a", at: number): AgentMessage =>
    who === "u" ? userMessage("x".repeat(40), at) : assistantMessage([text("y".repeat(40))], "stop", { timestamp: at });
  const path = items([system, ten("u", 1), ten("a", 2), ten("u", 3), ten("a", 4), ten("u", 5), ten("a", 6)]);
  // 每段交互 20 个 token；system 不算在“保留的最近部分”里。
  assert.equal(findCutPoint(path, 40), 3);
  assert.equal(findCutPoint(path, 39), 5);
  assert.equal(findCutPoint(path, 5), 5);
  assert.equal(findCutPoint(path, 60), undefined);
  assert.equal(findCutPoint(items([system, ten("u", 1), ten("a", 2)]), 5), undefined);
  // 没有开头的 system 也一样：切点之前只要有一条不是 system 的消息，就有东西可摘要。
  const patch: SystemMessage = { role: "system", content: "", sections: { style: "回答要短。" }, timestamp: 2 };
  assert.equal(findCutPoint(items([ten("u", 1), patch, ten("u", 3), ten("a", 4)]), 20), 2);
});

test("11.3 压缩条目写下之前先检查切点：不在当前路径上、或不是一段交互的开头，就拒绝写入，会话照常能打开", { timeout: 2_000 }, async () => {
  const store = new InMemorySessionStore();
  const tree = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
  tree.appendMessage(system); // e1
  tree.appendMessage(userMessage("读 a", 2)); // e2
  tree.appendMessage(assistantMessage([call("c1")], "toolUse", { timestamp: 3 })); // e3
  tree.appendMessage(result("c1")); // e4
  tree.appendMessage(said("读完了")); // e5
  tree.branch("e2");
  tree.appendMessage(said("另一条分支")); // e6：不在最后的路径上
  tree.branch("e5");
  tree.appendMessage(userMessage("再读 b", 7)); // e7
  await tree.flush();
  const before = (await stored(store)).length;
  assert.throws(() => tree.appendCompaction("摘要", "e6", 10), /e6 不在当前路径上/);
  assert.throws(() => tree.appendCompaction("摘要", "e4", 10), /e4 不是一段交互的开头/);
  assert.throws(() => tree.appendCompaction("摘要", "e3", 10), /e3 不是一段交互的开头/);
  assert.throws(() => tree.appendCompaction("摘要", "e99", 10), /没有 id 为 e99 的条目/);
  await tree.flush();
  assert.equal((await stored(store)).length, before, "被拒绝的压缩条目一条都没写");
  // 会话照常能打开、构建上下文；合格的切点照常写下。
  const reopened = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
  assert.equal(reopened.buildSessionContext().length, 6);
  const entry = tree.appendCompaction("摘要", "e7", 10);
  await tree.flush();
  assert.deepEqual((await stored(store)).at(-1), entry);
  // 上一次压缩摘要掉的条目，也不能再被拿来当切点。
  tree.appendMessage(said("好")); // e9
  assert.throws(() => checkCompactionCut(tree.getBranch(), "e2"), /e2 不是一段交互的开头/);
});

// ── 实践 11.4 ───────────────────────────────────────────────────

test("11.4 摘要由模型按结构化提示写成：请求里没有工具，对话被摊成一份记录", { timeout: 2_000 }, async () => {
  const model = new ScriptedModel([{ kind: "reply", content: [text("## 目标\n读懂 a.txt")], stopReason: "stop" }]);
  const history: AgentMessage[] = [
    system,
    userMessage("读 a", 2),
    assistantMessage([call("c1")], "toolUse", { timestamp: 3 }),
    result("c1", "a 的内容"),
    bash({ command: "git status", excludeFromContext: true }),
  ];
  assert.equal(await generateSummary(model, history, COMPACTION_PROMPT), "## 目标\n读懂 a.txt");
  const [request] = model.requests;
  assert.equal(model.requests.length, 1);
  assert.equal(request!.tools, undefined);
  const [instructions, ask, ...rest] = request!.messages;
  assert.equal(rest.length, 0);
  assert.deepEqual(instructions?.role === "system" && instructions.content, SUMMARY_SYSTEM_PROMPT);
  const body = userTextOf(ask);
  assert.match(body, /<conversation>[\s\S]*读 a[\s\S]*read\(\{"path":"c1\.txt"\}\)[\s\S]*a 的内容[\s\S]*<\/conversation>/);
  for (const heading of ["## 目标", "## 进展", "## 下一步"]) assert.ok(body.includes(heading), heading);
  // 摘要也只看模型本来就能看到的：`!!` 的命令和原来的 system 都不在记录里。
  assert.doesNotMatch(body, /git status|你是一个编程助手/);
});

test("11.4 模型没写成摘要就抛出，绝不交回一份空摘要", { timeout: 2_000 }, async () => {
  const failing = new ScriptedModel([{ kind: "error", errorMessage: "上游 503" }]);
  await assert.rejects(generateSummary(failing, [userMessage("读 a", 2)], COMPACTION_PROMPT), /摘要没有写成.*上游 503/);
  const empty = new ScriptedModel([{ kind: "reply", content: [text("  ")], stopReason: "stop" }]);
  await assert.rejects(generateSummary(empty, [userMessage("读 a", 2)], COMPACTION_PROMPT), /空文本/);
});

/** 每条恰好 400 个字符，也就是 100 个 token：预算一眼算得清。 */
const ask = (n: number) => `第${n}问：${"问".repeat(396)}`;
const answer = (n: number): ScriptedTurn => reply(`第${n}答：${"答".repeat(396)}`);
/**
 * 可用 600 - 120 - 60 = 420：system 3 + 两段交互 400 = 403，再加第三问的 100 就是 503，第三问之前就得压缩。
 * 摘要请求用同一个窗口：说明与要求约 60 个 token，留给记录的还有 360 个左右。
 */
const tight: CompactionSettings = { contextWindow: 600, reserveTokens: 120, safetyMargin: 60, keepRecentTokens: 200 };

test("11.4 compact()：摘要写进 compaction 条目并保存；下一次请求是 system 重放 + 摘要 + 保留的交互", { timeout: 5_000 }, async () => {
  const turns = [answer(1), answer(2), reply("## 目标\n回答三个问题"), answer(3)];
  await withSession(turns, async (session, model, store) => {
    await session.prompt(ask(1));
    await session.prompt(ask(2));
    const result = await session.compact();
    assert.ok(result.status === "compacted", JSON.stringify(result));
    const entry = result.entry;
    assert.equal(entry.summary, "## 目标\n回答三个问题");
    // 第 2 问那一段最新，总是保留；切点落在它的 user 条目上。
    const kept = (await stored(store)).find((saved) => saved.id === entry.firstKeptEntryId);
    assert.ok(kept?.type === "message" && kept.message.role === "user" && userTextOf(kept.message).startsWith("第2问"));
    assert.equal(entry.tokensBefore, 403, "system 3 + 两段交互各 200");
    assert.deepEqual((await stored(store)).at(-1), entry, "压缩条目已经写进存储");
    // 摘要请求里只有第 1 段交互。
    const summaryAsk = userTextOf(model.requests[2]!.messages[1]);
    assert.match(summaryAsk, /第1问/);
    assert.doesNotMatch(summaryAsk, /第2问/);

    await session.prompt(ask(3));
    const sent = model.requests[3]!.messages;
    assert.deepEqual(sent.map((message) => message.role), ["system", "user", "user", "assistant", "user"]);
    assert.equal(sent[0]!.role === "system" && sent[0]!.content, "你是一个编程助手。");
    assert.ok(userTextOf(sent[1]).startsWith(COMPACTION_SUMMARY_PREFIX));
    assert.ok(userTextOf(sent[2]).startsWith("第2问"));
    assert.ok(userTextOf(sent[4]).startsWith("第3问"));
    assert.doesNotMatch(JSON.stringify(sent), /第1问/);
  });
});

test("11.4 超出预算时 prompt 先压缩再提问；从 JSONL 文件恢复后接着压缩过的上下文往下走", { timeout: 5_000 }, async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-course-11-jsonl-"));
  try {
    const file = path.join(dir, "session.jsonl");
    const turns = [answer(1), answer(2), reply("摘要一：问过第一个问题"), answer(3), reply("摘要二：前两个问题都答了"), answer(4)];
    const model = new ScriptedModel(turns, { now: () => 5 });
    const options = { model, systemPrompt: "你是一个编程助手。", compaction: tight, now: () => 1_000 };
    const open = async () => new AgentSession({ ...options, tree: await SessionTree.open(new JsonlSessionStore(file), { now: () => 1_000 }) });
    const first = await open();
    await first.prompt(ask(1));
    await first.prompt(ask(2));
    assert.equal(model.requests.length, 2, "连同这一问，103 与 303 个 token 都装得下，还没有压缩");
    await first.prompt(ask(3));
    // 第三问之前是 403 + 100 = 503 > 420：先压缩（第 3 次调用是摘要），再提问（第 4 次）。
    assert.match(userTextOf(model.requests[2]!.messages[1]), /<conversation>[\s\S]*第1问[\s\S]*<\/conversation>/);
    const third = model.requests[3]!.messages;
    assert.deepEqual(third.map((message) => message.role), ["system", "user", "user", "assistant", "user"]);
    assert.ok(userTextOf(third[1]).startsWith(COMPACTION_SUMMARY_PREFIX));
    assert.ok(userTextOf(third[2]).startsWith("第2问"));
    const saved = (await readFile(file, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as SessionEntry);
    assert.equal(saved.filter((entry) => entry.type === "compaction").length, 1);

    // 换一个进程也一样：从文件恢复，得到的正是压缩后的上下文。
    const resumed = await open();
    assert.deepEqual(resumed.agent.state.messages, first.agent.state.messages);
    await resumed.prompt(ask(4));
    // 又超了：上一份摘要连同第二段交互一起被摘要，第三段保留。
    const rollup = userTextOf(model.requests[4]!.messages[1]);
    assert.match(rollup, /摘要一[\s\S]*第2问/);
    assert.doesNotMatch(rollup, /第3问/);
    const fourth = model.requests[5]!.messages;
    assert.ok(userTextOf(fourth[1]).includes("摘要二"));
    assert.deepEqual(fourth.slice(2).map((message) => message.role === "system" ? "system" : userOrAssistant(message)), ["第3问", "第3答", "第4问"]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

function userOrAssistant(message: Message): string {
  if (message.role === "user") return userTextOf(message).slice(0, 3);
  if (message.role === "assistant") return message.content.map((block) => (block.type === "text" ? block.text : "")).join("").slice(0, 3);
  return message.role;
}

test("11.4 没有可摘要的内容就不压缩，也不调用模型", { timeout: 5_000 }, async () => {
  await withSession([answer(1)], async (session, model, store) => {
    await session.prompt(ask(1));
    const before = (await stored(store)).length;
    assert.deepEqual(await session.compact(), { status: "skipped", code: "nothing_to_summarize" });
    assert.equal(model.requests.length, 1);
    assert.equal((await stored(store)).length, before);
  });
});

test("11.4 上次压缩之后没有新东西：再 compact() 不调用模型，交回 nothing_new", { timeout: 5_000 }, async () => {
  await withSession([answer(1), answer(2), reply("## 目标\n回答两个问题"), answer(3), reply("## 目标\n回答三个问题")], async (session, model, store) => {
    await session.prompt(ask(1));
    await session.prompt(ask(2));
    assert.equal((await session.compact()).status, "compacted");
    const calls = model.requests.length;
    const saved = (await stored(store)).length;
    assert.deepEqual(await session.compact(), { status: "skipped", code: "nothing_new" });
    assert.equal(model.requests.length, calls, "没有新东西就不请模型改写它自己的摘要");
    assert.equal((await stored(store)).length, saved);
    // 有了新的交互，就又有东西可压了。
    await session.prompt(ask(3));
    assert.equal((await session.compact()).status, "compacted");
  });
});

test("11.4 运行中拒绝 compact()：不调用模型，不写条目", { timeout: 3_000 }, async () => {
  await withSession([answer(1), answer(2), answer(3)], async (session, model, store) => {
    await session.prompt(ask(1));
    await session.prompt(ask(2));
    const run = session.agent.prompt(ask(3));
    await assert.rejects(session.compact(), /运行中不能压缩/);
    await run;
    await session.flush();
    assert.equal(model.requests.length, 3, "只有这次运行自己的那一次调用");
    assert.equal((await stored(store)).filter((entry) => entry.type === "compaction").length, 0);
  });
});

/** 只有 InMemory 存储与固定时钟的会话：模型由测试给。 */
async function openSession(model: Model, compaction: CompactionSettings): Promise<{ session: AgentSession; store: InMemorySessionStore }> {
  const store = new InMemorySessionStore();
  const tree = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
  return { session: new AgentSession({ tree, model, systemPrompt: "你是一个编程助手。", compaction, now: () => 1_000 }), store };
}

function isSummaryRequest(context: AgentContext): boolean {
  const [first] = context.messages;
  return first?.role === "system" && first.content === SUMMARY_SYSTEM_PROMPT;
}

/** 写摘要的那次调用一直不回答，直到被取消（像一个卡住的摘要服务）；别的调用交给脚本模型。 */
class StalledSummarizer implements Model {
  readonly provider = "test";
  readonly id = "stalled-summarizer";
  summaryCalls = 0;
  constructor(readonly inner: ScriptedModel) {}
  stream(context: AgentContext, options: StreamOptions = {}): AssistantMessageEventStream {
    if (!isSummaryRequest(context)) return this.inner.stream(context, options) as AssistantMessageEventStream;
    this.summaryCalls += 1;
    const output = new AssistantMessageEventStream();
    const error = assistantMessage([], "aborted", { timestamp: 5 });
    options.signal?.addEventListener("abort", () => output.push({ type: "error", reason: "aborted", error }), { once: true });
    return output;
  }
}

test("11.4 自动压缩用这次运行的 signal：取消就停下，不写压缩条目，这句话也不发出", { timeout: 3_000 }, async () => {
  const inner = new ScriptedModel([answer(1), answer(2)], { now: () => 5 });
  const model = new StalledSummarizer(inner);
  const { session, store } = await openSession(model, tight);
  await session.prompt(ask(1));
  await session.prompt(ask(2));
  const transcript = session.messages;
  const stop = new AbortController();
  const pending = session.prompt(ask(3), { signal: stop.signal });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(model.summaryCalls, 1, "第三问之前超出预算，先去写摘要");
  stop.abort();
  assert.deepEqual(await pending, { compaction: { status: "aborted" } });
  assert.equal(inner.requests.length, 2, "取消之后不再提问");
  assert.deepEqual(session.messages, transcript);
  assert.equal((await stored(store)).filter((entry) => entry.type === "compaction").length, 0);
  assert.equal(session.agent.state.status, "idle");
});

test("11.4 自动压缩的摘要失败：失败写进交回的报告，这句话照样发给模型", { timeout: 3_000 }, async () => {
  const model = new ScriptedModel([answer(1), answer(2), { kind: "error", errorMessage: "上游 503" }, answer(3)], { now: () => 5 });
  const { session, store } = await openSession(model, tight);
  await session.prompt(ask(1));
  await session.prompt(ask(2));
  const report = await session.prompt(ask(3));
  assert.ok(report.compaction?.status === "failed", JSON.stringify(report));
  assert.match(report.compaction.message, /摘要没有写成.*上游 503/);
  assert.equal(model.requests.length, 4, "摘要失败之后照样提问");
  const sent = JSON.stringify(model.requests[3]!.messages);
  assert.match(sent, /第1问[\s\S]*第3问/, "没压缩成，就带着完整的历史提问");
  assert.equal(session.agent.state.stopReason, "stop");
  assert.equal((await stored(store)).filter((entry) => entry.type === "compaction").length, 0);
});

test("11.4 要不要压缩连同这次的输入一起算：历史装得下，加上这一问就装不下，也先压缩", { timeout: 3_000 }, async () => {
  // 可用 600 - 120 = 480：system 3 + 两段交互 400 = 403 装得下；再加第三问的 100 个 token 就是 503。
  const roomy: CompactionSettings = { contextWindow: 600, reserveTokens: 120, safetyMargin: 0, keepRecentTokens: 200 };
  const model = new ScriptedModel([answer(1), answer(2), reply("## 目标\n回答三个问题"), answer(3)], { now: () => 5 });
  const { session } = await openSession(model, roomy);
  await session.prompt(ask(1));
  await session.prompt(ask(2));
  assert.equal(shouldCompact(session.messages, roomy), false);
  const report = await session.prompt(ask(3));
  assert.equal(report.compaction?.status, "compacted");
  assert.ok(isSummaryRequest(model.requests[2]!), "第 3 次调用是摘要");
  assert.match(userTextOf(model.requests[2]!.messages[1]), /第1问/);
  assert.ok(userTextOf(model.requests[3]!.messages[1]).startsWith(COMPACTION_SUMMARY_PREFIX));
});

test("11.4 摘要请求装得进模型的窗口：一条 4,000 条消息的分支，放不下的最旧记录被略去，最新的留下", { timeout: 10_000 }, async () => {
  const window: CompactionSettings = { contextWindow: 2_000, reserveTokens: 200, safetyMargin: 100, keepRecentTokens: 20 };
  const model = new ScriptedModel([answer(1), reply("## 目标\n做了很多事")], { now: () => 5 });
  const { session } = await openSession(model, window);
  await session.prompt(ask(1));
  const fork = session.tree.getLeafId()!;
  for (let n = 1; n <= 2_000; n += 1) {
    session.tree.appendMessage(userMessage(`第${n}步：${"做".repeat(30)}`, 10));
    session.tree.appendMessage(said(`完成第${n}步`));
  }
  const entry = await session.navigateTree(fork, { summarize: true });
  assert.ok(entry?.type === "branch_summary");
  const request = model.requests[1]!;
  assert.ok(isSummaryRequest(request));
  assert.ok(estimateContext(request.messages).total <= availableTokens(window), `摘要请求约 ${estimateContext(request.messages).total} 个 token`);
  const body = userTextOf(request.messages[1]);
  assert.match(body, /完成第2000步/);
  assert.doesNotMatch(body, /第1步：/);
  assert.match(body, /earlier transcript lines were omitted/);
});

test("11.4 compact() 与 navigateTree() 交回时，新条目已经落盘（慢盘也一样）", { timeout: 5_000 }, async () => {
  const turns = [answer(1), answer(2), reply("## 目标\n回答两个问题"), reply("## 目标\n试过第二问")];
  await withSession(
    turns,
    async (session, _model, store) => {
      await session.prompt(ask(1));
      const fork = session.tree.getLeafId()!;
      await session.prompt(ask(2));
      const result = await session.compact();
      assert.ok(result.status === "compacted", JSON.stringify(result));
      assert.deepEqual((await stored(store)).at(-1), result.entry, "compact() 交回时压缩条目应当已经写进会话");
      const entry = await session.navigateTree(fork, { summarize: true });
      assert.ok(entry !== undefined);
      assert.deepEqual((await stored(store)).at(-1), entry, "navigateTree() 交回时分支摘要应当已经写进会话");
    },
    undefined,
    new LaggingStore(),
  );
});

test("11.4 navigateTree：不要摘要时就是 branch，不问模型；离开的只有一条消息也照样摘要；运行中拒绝", { timeout: 5_000 }, async () => {
  const turns = [answer(1), answer(2), reply("## 目标\n只问过一句"), answer(3)];
  await withSession(turns, async (session, model, store) => {
    await session.prompt(ask(1));
    const first = session.tree.getLeafId()!;
    await session.prompt(ask(2));
    const second = session.tree.getLeafId()!;
    assert.equal(await session.navigateTree(first), undefined);
    assert.equal(session.tree.getLeafId(), first, "不要摘要时 leaf 照样移过去");
    assert.deepEqual(session.messages, session.tree.buildSessionContext());
    assert.equal(model.requests.length, 2, "不要摘要就不问模型");
    assert.equal((await stored(store)).some((entry) => entry.type === "branch_summary"), false);

    // 回到第 2 问的回答，再退到它的那句提问：被离开的只有那一条回答。
    session.branch(second);
    const secondUser = session.tree.getEntry(second)!.parentId!;
    const entry = await session.navigateTree(secondUser, { summarize: true });
    assert.ok(entry !== undefined && entry.type === "branch_summary", "离开的只有一条回答，也要摘要");
    assert.equal(model.requests.length, 3);

    let refused: Promise<string> | undefined;
    const unsubscribe = session.subscribe((event) => {
      if (event.type === "turn_start") refused ??= session.navigateTree(first, { summarize: true }).then(() => "运行中的 navigateTree 没有被拒绝", (error: Error) => error.message);
    });
    await session.prompt(ask(3));
    unsubscribe();
    assert.match((await refused) ?? "没有试", /运行中不能切换分支/);
    assert.equal(model.requests.length, 4, "运行中的 navigateTree 不该去问模型要摘要");
  });
});

test("11.4 离开一条分支时把它摘要成 branch_summary 条目：新请求带着摘要，不带被离开的消息", { timeout: 5_000 }, async () => {
  const turns = [answer(1), reply("试过用 yarn 装依赖"), reply("## 目标\n换包管理器\n## 结论\nyarn 不行"), answer(3)];
  await withSession(turns, async (session, model, store) => {
    await session.prompt(ask(1));
    const fork = session.tree.getLeafId()!;
    await session.prompt("换成 yarn 试试");
    const entry = await session.navigateTree(fork, { summarize: true });
    assert.ok(entry !== undefined && entry.type === "branch_summary");
    assert.equal(entry.fromId, fork);
    assert.equal(entry.parentId, fork);
    assert.match(userTextOf(model.requests[2]!.messages[1]), /换成 yarn 试试[\s\S]*试过用 yarn/);
    assert.deepEqual((await stored(store)).at(-1), entry);

    await session.prompt(ask(3));
    const sent = model.requests[3]!.messages;
    assert.deepEqual(sent.map((message) => message.role), ["system", "user", "assistant", "user", "user"]);
    assert.equal(userTextOf(sent[3]), `${BRANCH_SUMMARY_PREFIX}## 目标\n换包管理器\n## 结论\nyarn 不行${BRANCH_SUMMARY_SUFFIX}`);
    assert.doesNotMatch(JSON.stringify(sent), /换成 yarn 试试/);
  });
});
