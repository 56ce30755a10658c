import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough, Writable } from "node:stream";
import test, { type TestContext } from "node:test";

import { parseCliArgs, USAGE, UsageError } from "../src/cli/args.js";
import { InteractiveMode, renderTree } from "../src/cli/interactive-mode.js";
import { main, type CliIo } from "../src/cli/main.js";
import { runPrintMode } from "../src/cli/print-mode.js";
import { Output } from "../src/cli/output.js";
import { listProcesses, parseProcStat } from "../src/cli/process-groups.js";
import { approvalUnavailable, userDeclined, type ApprovalAnswer } from "../src/approval-gate.js";
import { AssistantMessageEventStream } from "../src/event-stream.js";
import { decideOffline, OFFLINE_HELP, OfflineModel, projectNameOf, requestedFile } from "../src/offline-model.js";
import { OpenAiCompatibleModel } from "../src/openai-compatible.js";
import {
  createRuntime,
  Disposer,
  trustFile,
  untrustedWarning,
  DisposeError,
  permissionsFile,
  resolveModel,
  RuntimeError,
  sessionFileName,
  sessionFolderName,
} from "../src/runtime.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import type { SessionEntry } from "../src/session-entries.js";
import { JsonlSessionStore, type SessionStore } from "../src/session-store.js";
import {
  assistantMessage,
  text,
  userMessage,
  type AgentContext,
  type Message,
  type Model,
  type ToolDefinition,
} from "../src/types.js";

// ── 场景：一个有 README 的项目，和一个放会话的目录 ──────────────

const README_TASK = "请读取 README，然后告诉我项目名";
const readTool: ToolDefinition = { name: "read", description: "读文件", parameters: { type: "object" } };

async function project(t: TestContext, files: Record<string, string> = { "README.md": "# 星图\n\n一个小项目。\n" }) {
  const root = await mkdtemp(path.join(os.tmpdir(), "pi13-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const cwd = path.join(root, "project");
  await mkdir(cwd);
  for (const [name, body] of Object.entries(files)) await writeFile(path.join(cwd, name), body);
  return { root, cwd, agentDir: path.join(root, "agent") };
}

/** 收集写出来的全部文字；failAfter 次之后的写入以 EPIPE 失败（像接在 head 后面的管道）。 */
function sink(failAfter = Infinity) {
  const chunks: string[] = [];
  let writes = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes += 1;
      if (writes > failAfter) return callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      chunks.push(chunk.toString("utf8"));
      callback();
    },
  });
  return { stream, text: () => chunks.join(""), writes: () => writes };
}

function io(cwd: string, agentDir: string, extra: Partial<CliIo> = {}) {
  const stdout = sink();
  const stderr = sink();
  const value: CliIo = { stdin: new PassThrough(), stdout: stdout.stream, stderr: stderr.stream, env: { PI_COURSE_AGENT_DIR: agentDir }, cwd, ...extra };
  return { io: value, stdout, stderr };
}

/** 一个不自己结束的模型：开始生成后一直等，直到被取消（obeyAbort 为 false 时连取消都不理）。 */
function hangingModel(obeyAbort = true) {
  let started: () => void = () => {};
  // 一秒内没有被调用就失败（而不是让测试永远等下去）：多半是运行时没有用给定的模型。
  const running = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("给定的模型一直没有被调用：运行时用的是别的模型吗？")), 1_000);
    started = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  const model: Model = {
    provider: "test",
    id: "hanging",
    stream(_context: AgentContext, options = {}) {
      const output = new AssistantMessageEventStream();
      const partial = assistantMessage([], "stop", { provider: "test", model: "hanging", timestamp: 1 });
      output.push({ type: "start", partial });
      if (obeyAbort) {
        options.signal?.addEventListener("abort", () => output.push({ type: "error", reason: "aborted", error: { ...partial, stopReason: "aborted", errorMessage: "被取消" } }), { once: true });
      }
      started();
      return output;
    },
  };
  return { model, running };
}

/** 等到 screen() 里出现 expected；屏幕上先出现一句“尚未实现”就立刻失败，不空等。 */
async function waitFor(screen: () => string, expected: string): Promise<void> {
  for (let tries = 0; tries < 400; tries += 1) {
    if (screen().includes(expected)) return;
    const unfinished = /Lab 13\.\d 尚未实现/.exec(screen());
    if (unfinished !== null) assert.fail(unfinished[0]);
    await new Promise((resolve) => setImmediate(resolve));
    if (tries > 200) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.fail(`等不到“${expected}”，屏幕上是：\n${screen()}`);
}

/** 前 n 次写入照常落盘；之后的写入 fail 给出错误就失败（像写满的磁盘），不给就永远不返回（像卡住的网络盘）。 */
function brokenStore(file: string, n: number, fail?: NodeJS.ErrnoException): SessionStore {
  const real = new JsonlSessionStore(file);
  let writes = 0;
  return {
    load: () => real.load(),
    append(entry) {
      writes += 1;
      if (writes <= n) return real.append(entry);
      return fail === undefined ? new Promise<void>(() => {}) : Promise.reject(fail);
    },
  };
}

function stderrLines(text: string): string[] {
  return text.trimEnd().split("\n");
}

/** 进程组里还活着的进程（僵尸不算：它已经结束，只等父进程收走）。 */
function aliveInGroup(pgid: number): number[] {
  return listProcesses()
    .filter((info) => info.pgid === pgid && info.state !== "Z")
    .map((info) => info.pid);
}

/** SIGKILL 送到了，进程还要等到下一次被调度才真正结束：最多等一秒，交回那时还活着的。 */
async function survivorsOf(pgid: number): Promise<number[]> {
  for (let tries = 0; tries < 40 && aliveInGroup(pgid).length > 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 25));
  return aliveInGroup(pgid);
}

async function sessionLines(file: string): Promise<SessionEntry[]> {
  const body = await readFile(file, "utf8");
  return body.trimEnd().split("\n").map((line) => JSON.parse(line) as SessionEntry);
}

// ── 实践 13.1 ───────────────────────────────────────────────────

test("13.1 提示点名的文件先被读取：带扩展名的路径优先，只说 README 就是 README.md", () => {
  assert.equal(requestedFile(README_TASK), "README.md");
  assert.equal(requestedFile("读一下 docs/intro.md 告诉我标题"), "docs/intro.md");
  assert.equal(requestedFile("今天天气怎样"), undefined);
  const decision = decideOffline([userMessage(README_TASK, 1)], [readTool]);
  assert.deepEqual(decision, { kind: "read", path: "README.md" });
});

test("13.1 读到结果后用第一个一级标题回答；没有标题、读取失败都如实说", () => {
  assert.equal(projectNameOf("简介\n## 小节\n#  星图  \n# 第二个"), "星图");
  assert.equal(projectNameOf("没有标题"), undefined);
  const asked: Message[] = [userMessage(README_TASK, 1)];
  const reply = (body: string, isError = false): Message[] => [
    ...asked,
    assistantMessage([{ type: "toolCall", id: "c1", name: "read", arguments: { path: "README.md" } }], "toolUse"),
    { role: "toolResult", toolCallId: "c1", toolName: "read", content: [text(body)], isError, timestamp: 2 },
  ];
  const named = decideOffline(reply("# 星图\n正文"), [readTool]);
  assert.equal(named.kind, "answer");
  assert.match(named.kind === "answer" ? named.text : "", /星图/);
  const untitled = decideOffline(reply("只有正文"), [readTool]);
  assert.match(untitled.kind === "answer" ? untitled.text : "", /没有以 "# " 开头的标题.*第一行是：「只有正文」/);
  const failed = decideOffline(reply("文件 README.md 不存在。", true), [readTool]);
  assert.match(failed.kind === "answer" ? failed.text : "", /读取 README\.md 失败：文件 README\.md 不存在/);
  // 只认 read 的结果：别的工具交回的结果不是读到的文件，照样要去读。
  const listed: Message[] = [
    ...asked,
    assistantMessage([{ type: "toolCall", id: "c1", name: "ls", arguments: { path: "." } }], "toolUse"),
    { role: "toolResult", toolCallId: "c1", toolName: "ls", content: [text("# 不是标题\nREADME.md")], isError: false, timestamp: 2 },
  ];
  assert.deepEqual(decideOffline(listed, [readTool]), { kind: "read", path: "README.md" });
  // 上一问的结果不算数：新的一问要重新读。
  assert.deepEqual(decideOffline([...reply("# 旧标题"), userMessage("再读一次 README", 3)], [readTool]), { kind: "read", path: "README.md" });
});

test("13.1 说不出要读什么、或者没有 read 工具时，直说自己只会什么，不发工具调用", () => {
  assert.deepEqual(decideOffline([userMessage("帮我重构整个项目", 1)], [readTool]), { kind: "answer", text: OFFLINE_HELP });
  const noTool = decideOffline([userMessage(README_TASK, 1)], []);
  assert.equal(noTool.kind, "answer");
  assert.match(noTool.kind === "answer" ? noTool.text : "", /没有 read 工具/);
  assert.match(OFFLINE_HELP, /PI_COURSE_BASE_URL/);
});

test("13.1 离线模型是确定的：同样的请求，两次得到同样的事件与调用 id", { timeout: 2_000 }, async () => {
  const context: AgentContext = { messages: [userMessage(README_TASK, 1)], tools: [readTool] };
  const play = async () => {
    const events = [];
    for await (const event of new OfflineModel({ now: () => 7 }).stream(context)) events.push(event);
    return events;
  };
  const first = await play();
  assert.deepEqual(await play(), first);
  const done = first.at(-1);
  assert.equal(done?.type, "done");
  const call = done?.type === "done" ? done.message.content.find((block) => block.type === "toolCall") : undefined;
  assert.deepEqual(call?.type === "toolCall" ? call.arguments : undefined, { path: "README.md" });
});

// ── 实践 13.2 ───────────────────────────────────────────────────

test("13.2 模型的来源：显式给定的优先，其次是环境变量，最后是离线模型", () => {
  const scripted = new ScriptedModel([]);
  const env = { PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1", PI_COURSE_MODEL: "qwen" };
  // 比较身份，不把模型对象本身放进断言信息：它带着函数和私有字段。
  assert.ok(resolveModel({ model: scripted, env }) === scripted, "给定的模型应当原样交回");
  const fromEnv = resolveModel({ env });
  assert.ok(fromEnv instanceof OpenAiCompatibleModel);
  assert.equal(fromEnv.id, "qwen");
  assert.ok(resolveModel({ env: {} }) instanceof OfflineModel);
  assert.throws(() => resolveModel({ env: { PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1" } }), /PI_COURSE_MODEL/);
});

test("13.2 会话按项目归档：绝对路径编成一个文件夹名，文件名以时间戳开头", () => {
  assert.equal(sessionFolderName("/home/ada/星图"), "--home-ada-星图--");
  assert.equal(sessionFolderName("C:\\work\\app"), "--C--work-app--");
  assert.notEqual(sessionFolderName("/a/b-c"), sessionFolderName("/a/b/c/d"));
  assert.equal(sessionFileName(Date.UTC(2026, 0, 2, 3, 4, 5, 6), "ab12cd34"), "2026-01-02T03-04-05-006Z_ab12cd34.jsonl");
});

test("13.2 createRuntime 接好整条链：离线模型读 README 作答，会话文件里是完整的记录", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const runtime = await createRuntime({ cwd, agentDir, env: {} });
  assert.equal(runtime.model.provider, "offline");
  assert.equal(path.dirname(runtime.sessionFile), path.join(agentDir, "sessions", sessionFolderName(cwd)));
  await runtime.session.prompt(README_TASK);
  const last = runtime.session.messages.at(-1);
  assert.equal(last?.role, "assistant");
  assert.match(last?.role === "assistant" ? last.content.map((block) => (block.type === "text" ? block.text : "")).join("") : "", /星图/);
  await runtime.dispose();
  const roles = (await sessionLines(runtime.sessionFile)).map((entry) => (entry.type === "message" ? entry.message.role : entry.type));
  assert.deepEqual(roles, ["system", "user", "assistant", "toolResult", "assistant"]);
});

test("13.2 continue 续上这个项目最近用过的会话；new 总是开一份新的", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([{ kind: "reply", content: [text("记住了")], stopReason: "stop" }]);
  const first = await createRuntime({ cwd, agentDir, env: {}, model, now: () => Date.UTC(2026, 0, 1) });
  await first.session.prompt("记住：蓝色");
  await first.dispose();
  const second = await createRuntime({ cwd, agentDir, env: {}, model, session: "new", now: () => Date.UTC(2026, 0, 2) });
  await second.dispose();
  // 第一份是后来又用过的那份：修改时间比第二份新。
  const later = new Date(Date.now() + 60_000);
  await utimes(first.sessionFile, later, later);
  const resumed = await createRuntime({ cwd, agentDir, env: {}, model, session: "continue" });
  assert.equal(resumed.sessionFile, first.sessionFile);
  assert.ok(resumed.session.messages.some((message) => message.role === "user"));
  await resumed.dispose();
  assert.equal((await readdir(path.dirname(first.sessionFile))).length, 2);
});

test("13.2 接上第 12 章：AGENTS.md 成为 system 的段落，扩展命令能用；坏扩展只是一条警告，关闭后扩展不能再写", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t, { "README.md": "# 星图\n", "AGENTS.md": "# 约定\n回答一律用中文。\n" });
  const extensions = path.join(cwd, ".pi", "extensions");
  await mkdir(extensions, { recursive: true });
  await writeFile(
    path.join(extensions, "a-note.mjs"),
    'export default (pi) => { globalThis.piChapter13 = pi; pi.registerCommand("note", { description: "记一笔", handler: (args) => pi.appendEntry("note", { text: args }) }); };\n',
  );
  await writeFile(path.join(extensions, "b-broken.mjs"), "export default 42;\n");
  await mkdir(path.join(cwd, ".pi", "skills", "nameless"), { recursive: true });
  await writeFile(path.join(cwd, ".pi", "skills", "nameless", "SKILL.md"), "---\nname: nameless\n---\n没有 description 的技能。\n");
  const warnings: string[] = [];
  const runtime = await createRuntime({ cwd, agentDir, env: {}, onWarning: (message) => warnings.push(message) });
  assert.match(warnings.join("\n"), /b-broken\.mjs 在 load 里出错/);
  assert.match(warnings.join("\n"), /资源 .*SKILL\.md：跳过技能/);
  assert.equal(runtime.extensions.extensions.length, 1);
  const first = runtime.session.messages[0];
  assert.equal(first?.role, "system");
  assert.match(first?.role === "system" ? (first.sections?.["project-context"] ?? "") : "", /回答一律用中文/);
  await runtime.session.prompt("/note 买牛奶");
  await runtime.dispose();
  const notes = (await sessionLines(runtime.sessionFile)).filter((entry) => entry.type === "custom");
  assert.deepEqual(notes.map((entry) => (entry.type === "custom" ? entry.data : undefined)), [{ text: "买牛奶" }]);
  const api = (globalThis as { piChapter13?: { appendEntry(type: string, data?: unknown): void } }).piChapter13;
  assert.throws(() => api?.appendEntry("note", { text: "迟到的" }), /运行时已经关闭/);
});

test("13.2 关闭按创建的逆序，每个部件恰好一次；一个部件失败，其余照关，错误点名每个失败", { timeout: 2_000 }, async () => {
  const closed: string[] = [];
  const disposer = new Disposer();
  disposer.add("模型", () => void closed.push("模型"));
  disposer.add("会话", () => {
    closed.push("会话");
    throw new Error("磁盘满了");
  });
  disposer.add("扩展", async () => void closed.push("扩展"));
  const [a, b] = [disposer.dispose(), disposer.dispose()];
  // 两个都接住：即使它们不是同一个 Promise，也不留下没人处理的 rejection。
  a.catch(() => {});
  b.catch(() => {});
  assert.ok(a === b, "第二次调用应当交回第一次的同一个 Promise");
  const error = await a.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof DisposeError);
  assert.match(error.message, /会话（磁盘满了）/);
  assert.deepEqual(closed, ["扩展", "会话", "模型"]);
  await assert.rejects(disposer.dispose(), DisposeError);
  assert.deepEqual(closed, ["扩展", "会话", "模型"]);
});

test("13.2 关闭先停下会话：运行被中止并收尾，扩展在 agent_end 里记的条目也落盘，之后才收回扩展的写权限", { timeout: 2_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await mkdir(path.join(cwd, ".pi", "extensions"), { recursive: true });
  await writeFile(path.join(cwd, ".pi", "extensions", "log.mjs"), 'export default (pi) => pi.on("agent_end", () => pi.appendEntry("log", { ended: true }));\n');
  const warnings: string[] = [];
  const hanging = hangingModel();
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model: hanging.model, onWarning: (message) => warnings.push(message) });
  const asking = runtime.session.prompt("你好");
  await hanging.running;
  await runtime.dispose();
  assert.equal(runtime.session.agent.state.status, "idle");
  await asking;
  const entries = await sessionLines(runtime.sessionFile);
  const lastMessage = entries.findLast((entry) => entry.type === "message");
  assert.equal(lastMessage?.type === "message" && lastMessage.message.role === "assistant" ? lastMessage.message.stopReason : undefined, "aborted");
  const logged = entries.some((entry) => entry.type === "custom" && entry.customType === "log");
  assert.ok(logged, `扩展在 agent_end 里记下的条目应当在会话文件里；警告：${warnings.join("；")}`);
});

test("13.2 关闭等到底：模型过一会儿才停下、扩展的 agent_end 处理器过一会儿才记下条目，dispose 之后两者都在会话文件里", { timeout: 3_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await mkdir(path.join(cwd, ".pi", "extensions"), { recursive: true });
  await writeFile(
    path.join(cwd, ".pi", "extensions", "slow-log.mjs"),
    'export default (pi) => pi.on("agent_end", async () => { await new Promise((resolve) => setTimeout(resolve, 50)); pi.appendEntry("log", { ended: true }); });\n',
  );
  let started: () => void = () => {};
  const running = new Promise<void>((resolve) => (started = resolve));
  // 收到取消以后还要 50 ms 才交回 aborted：像一个要先关掉连接的真模型。
  const slowToStop: Model = {
    provider: "test",
    id: "slow-to-stop",
    stream(_context: AgentContext, options = {}) {
      const output = new AssistantMessageEventStream();
      const partial = assistantMessage([], "stop", { provider: "test", model: "slow-to-stop", timestamp: 1 });
      output.push({ type: "start", partial });
      options.signal?.addEventListener(
        "abort",
        () => setTimeout(() => output.push({ type: "error", reason: "aborted", error: { ...partial, stopReason: "aborted", errorMessage: "被取消" } }), 50),
        { once: true },
      );
      started();
      return output;
    },
  };
  const warnings: string[] = [];
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model: slowToStop, trust: { once: true }, onWarning: (message) => warnings.push(message) });
  const asking = runtime.session.prompt("你好");
  await running;
  await runtime.dispose();
  const entries = await sessionLines(runtime.sessionFile);
  const lastMessage = entries.findLast((entry) => entry.type === "message");
  assert.equal(lastMessage?.type === "message" && lastMessage.message.role === "assistant" ? lastMessage.message.stopReason : undefined, "aborted", "dispose 没等运行结束");
  assert.ok(entries.some((entry) => entry.type === "custom" && entry.customType === "log"), `dispose 没等扩展的事件送完；警告：${warnings.join("；")}`);
  await asking;
});

test("13.2 关闭之后的运行时拒绝提问：RuntimeError（RUNTIME_DISPOSED），不去问模型", { timeout: 2_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([{ kind: "reply", content: [text("不该有这一句")], stopReason: "stop" }]);
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model });
  await runtime.dispose();
  await assert.rejects(runtime.session.prompt("还在吗？"), (error: unknown) => {
    assert.ok(error instanceof RuntimeError, String(error));
    assert.equal(error.code, "RUNTIME_DISPOSED");
    assert.match(error.message, /运行时已经关闭，不能再提问/);
    return true;
  });
  assert.equal(model.requests.length, 0);
  const roles = (await sessionLines(runtime.sessionFile)).map((entry) => (entry.type === "message" ? entry.message.role : entry.type));
  assert.deepEqual(roles, ["system"]);
});

test("13.2 会话目录不能写：抛出的 RuntimeError 说出目录，也说出用 PI_COURSE_AGENT_DIR 换个地方", { timeout: 2_000 }, async (t) => {
  const { root, cwd } = await project(t);
  const blocked = path.join(root, "not-a-dir");
  await writeFile(blocked, "这是一个文件，不是目录");
  await assert.rejects(createRuntime({ cwd, agentDir: blocked, env: {} }), (error: unknown) => {
    assert.ok(error instanceof RuntimeError, String(error));
    assert.equal(error.code, "SESSION_DIR_NOT_WRITABLE");
    assert.match(error.message, /not-a-dir/);
    assert.match(error.message, /PI_COURSE_AGENT_DIR/);
    return true;
  });
});

// ── 实践 13.3 ───────────────────────────────────────────────────

test("13.3 参数：-p 是打印模式，--mode json 是 JSON 模式，什么都不给是交互模式", () => {
  assert.deepEqual(parseCliArgs(["-p", README_TASK]), { mode: "print", messages: [README_TASK], session: "new", allow: [], yolo: false, trust: false, help: false });
  assert.equal(parseCliArgs(["--mode", "json", "任务"]).mode, "json");
  assert.equal(parseCliArgs(["--mode", "text", "任务"]).mode, "print");
  assert.deepEqual(parseCliArgs([]), { mode: "interactive", messages: [], session: "new", allow: [], yolo: false, trust: false, help: false });
  assert.equal(parseCliArgs(["-c"]).session, "continue");
  assert.equal(parseCliArgs(["--session", "a.jsonl"]).session, "a.jsonl");
});

test("13.3 用错了是用法错误：一句中文，退出码 2", { timeout: 2_000 }, async (t) => {
  for (const [argv, pattern] of [
    [["--verbose"], /不认识的选项 --verbose/],
    [["--mode", "yaml", "x"], /--mode 只接受 text 或 json/],
    [["-p"], /-p 需要一个任务/],
    [["--session"], /--session 需要一个取值，例如 --session \.\/notes\.jsonl/],
    [["-c", "--session", "a.jsonl"], /--continue 和 --session 只能选一个/],
  ] as const) {
    assert.throws(() => parseCliArgs(argv), (error: unknown) => error instanceof UsageError && pattern.test(error.message));
  }
  const { cwd, agentDir } = await project(t);
  const run = io(cwd, agentDir);
  assert.equal(await main(["--verbose"], run.io), 2);
  assert.match(run.stderr.text(), /不认识的选项 --verbose/);
  assert.equal(run.stdout.text(), "");
});

test("13.3 -p 只把最后的回答写到 stdout，退出码 0", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const run = io(cwd, agentDir);
  assert.equal(await main(["-p", README_TASK], run.io), 0);
  assert.equal(run.stdout.text(), "项目名是「星图」（取自 README.md 的第一个一级标题）。\n");
  assert.equal(run.stderr.text(), "");
});

test("13.3 --mode json 每个事件一行完整的 JSON", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const run = io(cwd, agentDir);
  assert.equal(await main(["--mode", "json", README_TASK], run.io), 0);
  const events = run.stdout.text().trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string });
  assert.equal(events[0]?.type, "agent_start");
  assert.equal(events.at(-1)?.type, "agent_end");
  assert.ok(events.some((event) => event.type === "tool_execution_end"));
});

test("13.3 运行失败写到 stderr，退出码 1；stdout 什么都没有", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const turns: ScriptedTurn[] = [{ kind: "error", errorMessage: "服务器返回 500" }];
  const run = io(cwd, agentDir, { model: new ScriptedModel(turns) });
  assert.equal(await main(["-p", "你好"], run.io), 1);
  assert.match(run.stderr.text(), /运行失败（error）：.*服务器返回 500/);
  assert.equal(run.stdout.text(), "");
});

test("13.3 会话目录不能写：退出码 1，stderr 说出目录与 PI_COURSE_AGENT_DIR", { timeout: 2_000 }, async (t) => {
  const { root, cwd } = await project(t);
  await writeFile(path.join(root, "agent"), "");
  const run = io(cwd, path.join(root, "agent"));
  assert.equal(await main(["-p", README_TASK], run.io), 1);
  assert.match(run.stderr.text(), /会话目录 .*agent.* 不能写.*PI_COURSE_AGENT_DIR/);
});

test("13.3 --mode json 的 message_update 只写增量：输出随回答的长度增长，而不是它的平方", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  // 512 段、每段 64 字节，一共 32 KB：每段是一次 text_delta，像真模型那样一点一点地来。
  const pieces = Array.from({ length: 512 }, (_, index) => `${String(index).padStart(4, "0")}${"星".repeat(20)}`);
  const answer = pieces.join("");
  const model = new ScriptedModel([{ kind: "reply", content: pieces.map((piece) => text(piece)), stopReason: "stop" }]);
  const run = io(cwd, agentDir, { model });
  assert.equal(await main(["--mode", "json", "写一篇长文"], run.io), 0);
  const output = run.stdout.text();
  const bytes = Buffer.byteLength(output, "utf8");
  const answerBytes = Buffer.byteLength(answer, "utf8");
  assert.ok(bytes < 8 * answerBytes, `回答 ${answerBytes} 字节，JSON 输出却有 ${bytes} 字节`);
  const events = output.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string; message?: unknown; event?: { type: string; delta?: string; partial?: unknown } });
  const updates = events.filter((event) => event.type === "message_update");
  assert.equal(updates.length, 512);
  assert.ok(updates.every((event) => event.message === undefined && event.event?.partial === undefined), "message_update 不该再带 partial");
  // 增量拼起来就是回答；完整的消息在 message_end 里。
  assert.equal(updates.map((event) => event.event?.delta ?? "").join(""), answer);
  assert.ok(events.some((event) => event.type === "message_end"));
});

test("13.3 --session 指向目录或 FIFO、-c 选中一份坏掉的会话：一句话点名那个文件，退出码 1", { timeout: 5_000 }, async (t) => {
  const { root, cwd, agentDir } = await project(t);
  const directory = path.join(root, "a-directory");
  await mkdir(directory);
  const asDirectory = io(cwd, agentDir);
  assert.equal(await main(["--session", directory, "-p", "你好"], asDirectory.io), 1);
  assert.deepEqual(stderrLines(asDirectory.stderr.text()).length, 1);
  assert.match(asDirectory.stderr.text(), /会话文件 .*a-directory 不是普通文件（是目录）/);

  // FIFO：读它的人会一直等到有人来写——不先 stat，tiny-pi 就卡在这里。
  const fifo = path.join(root, "a-fifo.jsonl");
  execFileSync("mkfifo", [fifo]);
  const asFifo = io(cwd, agentDir);
  assert.equal(await main(["--session", fifo, "-p", "你好"], asFifo.io), 1);
  assert.equal(stderrLines(asFifo.stderr.text()).length, 1);
  assert.match(asFifo.stderr.text(), /会话文件 .*a-fifo\.jsonl 不是普通文件（是命名管道（FIFO））/);

  const folder = path.join(agentDir, "sessions", sessionFolderName(cwd));
  await mkdir(folder, { recursive: true });
  await writeFile(path.join(folder, "2026-01-01T00-00-00-000Z_broken1.jsonl"), "这不是 JSON\n");
  const corrupt = io(cwd, agentDir);
  assert.equal(await main(["-c", "-p", "你好"], corrupt.io), 1);
  assert.equal(stderrLines(corrupt.stderr.text()).length, 1);
  assert.match(corrupt.stderr.text(), /会话文件 .*_broken1\.jsonl 打不开：第 1 行/);
  assert.equal(corrupt.stdout.text(), "");
});

test("13.3 会话文件写不进去（ENOSPC）：一句话点名会话文件，已经得到的回答照样写到 stdout", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const full = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" });
  const model = new ScriptedModel([{ kind: "reply", content: [text("答案是 42。")], stopReason: "stop" }]);
  // 第一行（system）写得进去，之后磁盘满了。
  const run = io(cwd, agentDir, { model, openStore: (file) => brokenStore(file, 1, full) });
  assert.equal(await main(["-p", "答案是什么？"], run.io), 1);
  assert.equal(run.stdout.text(), "答案是 42。\n");
  const lines = stderrLines(run.stderr.text());
  assert.equal(lines.length, 1, run.stderr.text());
  const [file] = await readdir(path.join(agentDir, "sessions", sessionFolderName(cwd)));
  assert.ok(lines[0]!.includes(`会话文件 ${path.join(agentDir, "sessions", sessionFolderName(cwd), file!)} 写不进去（ENOSPC）`), lines[0]);
});

test("13.3 prompt 抛出的不是文件系统的错误（例如存储自己报错）：打印模式照样只写一句话、退出码 1，不是堆栈", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([{ kind: "reply", content: [text("答案是 42。")], stopReason: "stop" }]);
  const refused = new Error("存储拒绝了这一行");
  const run = io(cwd, agentDir, { model, openStore: (file) => brokenStore(file, 1, refused) });
  assert.equal(await main(["-p", "答案是什么？"], run.io), 1);
  const lines = stderrLines(run.stderr.text());
  assert.equal(lines.length, 1, run.stderr.text());
  assert.match(lines[0]!, /^tiny-pi：.*存储拒绝了这一行/);
  assert.doesNotMatch(run.stderr.text(), /\n\s+at /);
});

test("13.3 自动压缩失败时，打印模式只写一句话，不是一段堆栈", { timeout: 10_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  // 三问三答，每问约 4 万 token：第四问之前超出预算，自动压缩先要一份摘要。
  const replies: ScriptedTurn[] = [1, 2, 3].map((index) => ({ kind: "reply", content: [text(`第 ${index} 个回答`)], stopReason: "stop" }));
  const setup = await createRuntime({ cwd, agentDir, env: {}, model: new ScriptedModel(replies) });
  for (const index of [1, 2, 3]) await setup.session.prompt(`第 ${index} 问：${"长".repeat(160_000)}`);
  await setup.dispose();
  const model = new ScriptedModel([{ kind: "error", errorMessage: "摘要服务暂时不可用" }, { kind: "reply", content: [text("第四个回答")], stopReason: "stop" }]);
  const run = io(cwd, agentDir, { model });
  const code = await main(["-c", "-p", "第 4 问"], run.io);
  assert.equal(model.requests.length >= 1, true, "应当先请求一份摘要");
  const lines = stderrLines(run.stderr.text());
  assert.equal(lines.length, 1, run.stderr.text());
  assert.match(lines[0]!, /^tiny-pi：.*摘要/);
  assert.doesNotMatch(run.stderr.text(), /\n\s+at /);
  // 上一次的回答不是这一问的回答：没有新的回答，stdout 上就不该有旧的那句。
  assert.doesNotMatch(run.stdout.text(), /第 3 个回答/);
  if (code !== 0) assert.equal(code, 1);
});

test("13.3 --help 把用法写到 stdout，退出码 0，不建运行时", { timeout: 2_000 }, async (t) => {
  assert.equal(parseCliArgs(["--help"]).help, true);
  assert.equal(parseCliArgs(["-p", "--help"]).help, true, "-p --help 不缺任务：它只要用法");
  const { cwd, agentDir } = await project(t);
  const run = io(cwd, agentDir);
  assert.equal(await main(["--help"], run.io), 0);
  assert.equal(run.stdout.text(), `${USAGE}\n`);
  assert.equal(run.stderr.text(), "");
  assert.equal(existsSync(agentDir), false, "只看用法不该建会话目录");
});

test("13.3 --mode json 的 stdout 只有 JSON：会话写不进去时也不另写一行回答", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const full = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" });
  const model = new ScriptedModel([{ kind: "reply", content: [text("答案是 42。")], stopReason: "stop" }]);
  const run = io(cwd, agentDir, { model, openStore: (file) => brokenStore(file, 1, full) });
  assert.equal(await main(["--mode", "json", "答案是什么？"], run.io), 1);
  for (const line of run.stdout.text().trimEnd().split("\n")) assert.doesNotThrow(() => JSON.parse(line), `stdout 上有一行不是 JSON：${line}`);
  assert.equal(stderrLines(run.stderr.text()).length, 1, run.stderr.text());
});

test("13.3 runPrintMode 交回之前退订：之后在同一个运行时上的提问不再写到它的出口", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([
    { kind: "reply", content: [text("一")], stopReason: "stop" },
    { kind: "reply", content: [text("二")], stopReason: "stop" },
  ]);
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model });
  t.after(() => runtime.dispose());
  const stdout = sink();
  assert.equal(await runPrintMode(runtime, "json", ["第一问"], new Output(stdout.stream), new Output(sink().stream)), 0);
  const written = stdout.text();
  assert.match(written, /"type":"agent_end"/);
  await runtime.session.prompt("第二问");
  assert.equal(stdout.text(), written, "runPrintMode 交回以后还在往出口写");
  // 在删掉临时目录（先登记的 after）之前关掉。
  await runtime.dispose();
});

test("13.3 打印模式结束时关掉运行时：main 交回以后，扩展不能再写会话", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await mkdir(path.join(cwd, ".pi", "extensions"), { recursive: true });
  await writeFile(path.join(cwd, ".pi", "extensions", "keep.mjs"), "export default (pi) => { globalThis.piChapter13Print = pi; };\n");
  const run = io(cwd, agentDir);
  assert.equal(await main(["-p", "--trust", README_TASK], run.io), 0);
  const api = (globalThis as { piChapter13Print?: { appendEntry(type: string, data?: unknown): void } }).piChapter13Print;
  assert.ok(api !== undefined, "项目扩展应当被加载");
  assert.throws(() => api.appendEntry("note", { text: "迟到的" }), /运行时已经关闭/);
});

// ── 实践 13.4 ───────────────────────────────────────────────────

test("13.4 stdout 被下游关掉（EPIPE）：停下运行、不崩溃、退出码 0，会话照样关好", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const stdout = sink(1);
  const run = io(cwd, agentDir, { stdout: stdout.stream });
  assert.equal(await main(["--mode", "json", README_TASK], run.io), 0);
  assert.equal(stdout.text().split("\n")[0], '{"type":"agent_start"}');
  assert.ok(stdout.writes() <= 3, `出口关了还在写：写了 ${stdout.writes()} 次`);
  const folder = path.join(agentDir, "sessions", sessionFolderName(cwd));
  const [file] = await readdir(folder);
  const entries = await sessionLines(path.join(folder, file!));
  assert.ok(entries.length >= 2);
  assert.equal(entries.some((entry) => entry.type === "message" && entry.message.role === "toolResult"), false);
});

test("13.4 打印模式里第一次 Ctrl-C 中止运行（退出码 1），第二次立即离开（退出码 130）", { timeout: 3_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const polite = hangingModel();
  const signals = new EventEmitter();
  const first = io(cwd, agentDir, { model: polite.model, signals });
  const finished = main(["-p", "你好"], first.io);
  await polite.running;
  signals.emit("SIGINT");
  assert.equal(await finished, 1);
  assert.match(first.stderr.text(), /再按一次 Ctrl-C/);
  assert.match(first.stderr.text(), /运行被中止/);
  assert.equal(signals.listenerCount("SIGINT"), 0);

  const stubborn = hangingModel(false);
  const second = io(cwd, agentDir, { model: stubborn.model, signals });
  const leaving = main(["-p", "你好"], second.io);
  await stubborn.running;
  signals.emit("SIGINT");
  signals.emit("SIGINT");
  assert.equal(await leaving, 130);
});

/** 一个真的 tiny-pi 子进程（打印模式）：脚本模型先要一次 bash 调用，命令就是 command。 */
async function spawnTinyPi(t: TestContext, root: string, cwd: string, agentDir: string, command: string) {
  const script = path.join(root, "tiny-pi-child.mjs");
  const url = (relative: string) => new URL(relative, import.meta.url).href;
  await writeFile(
    script,
    [
      `import { main, processIo } from ${JSON.stringify(url("../src/cli/main.js"))};`,
      `import { ScriptedModel } from ${JSON.stringify(url("../src/scripted-model.js"))};`,
      `const call = { type: "toolCall", id: "c1", name: "bash", arguments: { command: ${JSON.stringify(command)} } };`,
      `const model = new ScriptedModel([{ kind: "reply", content: [call], stopReason: "toolUse" }, { kind: "reply", content: [{ type: "text", text: "完成" }], stopReason: "stop" }]);`,
      `const code = await main(process.argv.slice(2), { ...processIo(), cwd: ${JSON.stringify(cwd)}, model });`,
      'process.stdout.write("", () => process.exit(code));',
      "",
    ].join("\n"),
  );
  // 在 tsx 下运行时，子进程也要同样的加载器；它从子进程的工作目录解析，所以工作目录跟着这个测试，项目目录经 io.cwd 传入。
  const loader = process.execArgv.filter((arg, index, all) => arg.startsWith("--import") || all[index - 1] === "--import");
  // 这个测试讲信号，不讲批准：--allow bash 让打印模式放行这条命令（第 12 章的闸门默认拦下它）
  const child = spawn(process.execPath, [...loader, script, "--allow", "bash", "-p", "跑一下"], {
    env: { ...process.env, PI_COURSE_AGENT_DIR: agentDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let gone = false;
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => {
      gone = true;
      resolve(code ?? signal);
    }),
  );
  // 命令先写下自己的 pid（sh 是组长，pid 就是组号）：测试要知道该看哪一组。
  // 等的是这件事本身，上限放宽到 15 秒：机器忙时，启动 node、加载 tiny-pi 再跑到这条命令要好几秒。
  // 文件一出现就读会撞上空文件（sh 先建文件、echo 后写），所以等到那一行写完整（带换行）。
  const pidFile = path.join(cwd, "pid.txt");
  const written = async () => {
    const line = await readFile(pidFile, "utf8").catch(() => "");
    return line.endsWith("\n") ? line : undefined;
  };
  let line = await written();
  for (let tries = 0; tries < 600 && !gone && line === undefined; tries += 1) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    line = await written();
  }
  if (line === undefined) {
    await exited;
    line = await written();
  }
  const pgid = Number((line ?? "").trim());
  assert.ok(pgid > 0, `命令没有开始运行；stderr：${stderr}`);
  // 红的时候也不把进程留在这台机器上。
  t.after(() => {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // 已经没有了。
    }
  });
  return { child, exited, pgid, stderr: () => stderr };
}

test("13.4 SIGTERM、SIGHUP 和 Ctrl-C 一样：中止运行、结束工具的整个进程组再离开；第二个信号立即离开，也不留下进程", { timeout: 45_000 }, async (t) => {
  const { root, cwd, agentDir } = await project(t);
  // 不理 SIGTERM 的命令：只有 SIGKILL 能结束它。活下来的话，5 秒后它会往工作区里写一个文件。
  const stubborn = "trap '' TERM; echo $$ > pid.txt; sleep 5; echo late > late.txt";
  const polite = await spawnTinyPi(t, root, cwd, agentDir, stubborn);
  polite.child.kill("SIGTERM");
  assert.equal(await polite.exited, 1, polite.stderr());
  assert.match(polite.stderr(), /运行被中止/);
  assert.deepEqual(await survivorsOf(polite.pgid), []);

  await rm(path.join(cwd, "pid.txt"));
  const hurried = await spawnTinyPi(t, root, cwd, agentDir, stubborn);
  hurried.child.kill("SIGTERM");
  await new Promise((resolve) => setTimeout(resolve, 50));
  hurried.child.kill("SIGHUP");
  assert.equal(await hurried.exited, 130, hurried.stderr());
  assert.deepEqual(await survivorsOf(hurried.pgid), []);
  assert.equal(existsSync(path.join(cwd, "late.txt")), false);
});

test("13.4 stdout 在开始之前就被下游关掉：不去问模型，退出码 0", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([{ kind: "reply", content: [text("没人读的回答")], stopReason: "stop" }]);
  const stdout = sink();
  const run = io(cwd, agentDir, { stdout: stdout.stream, model });
  // 像 `tiny-pi -p … | true`：读的一方还没等到第一行就走了。
  stdout.stream.destroy(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
  assert.equal(await main(["-p", README_TASK], run.io), 0);
  assert.equal(model.requests.length, 0, "出口已经关了，不该再花钱问模型");
});

test("13.4 parseProcStat 从最后一个右括号之后数字段；缺了字段、没有括号、pid 不是数字都交回 undefined", () => {
  assert.deepEqual(parseProcStat("4242 (tiny (pi) x) S 17 4242 4242 0 -1"), { pid: 4242, ppid: 17, pgid: 4242, state: "S" });
  assert.deepEqual(parseProcStat("77 (sh) Z 1 70"), { pid: 77, ppid: 1, pgid: 70, state: "Z" });
  for (const line of ["4242 sleep S 17 4242", "pid (sleep) S 17 4242", "4242 (sleep) S 17", "4242 (sleep) S", "4242 (sleep)"]) {
    assert.equal(parseProcStat(line), undefined, `这一行不该解析出进程：${line}`);
  }
});

test("13.4 listProcesses 列出这台机器上的每个进程一次：自成一组的子进程带着父进程与组号", { timeout: 5_000 }, async (t) => {
  const child = spawn("sleep", ["5"], { detached: true, stdio: "ignore" });
  t.after(() => child.kill("SIGKILL"));
  await new Promise((resolve) => child.once("spawn", resolve));
  const all = listProcesses();
  const mine = all.find((info) => info.pid === child.pid);
  assert.deepEqual(mine, { pid: child.pid, ppid: process.pid, pgid: child.pid, state: mine?.state ?? "?" });
  assert.match(mine?.state ?? "", /^[A-Z]$/);
  assert.ok(all.some((info) => info.pid === process.pid), "列表里应当有自己");
  assert.equal(new Set(all.map((info) => info.pid)).size, all.length, "同一个进程不该出现两次");
});

// ── 实践 13.5 ───────────────────────────────────────────────────

test("13.5 /tree 按父子缩进，* 标出当前路径，leaf 标“当前”", () => {
  const entry = (id: string, parentId: string | null, body: string): SessionEntry => ({
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: userMessage(body, 1),
  });
  const tree = renderTree([entry("a", null, "开始"), entry("b", "a", "旧的一支"), entry("c", "a", "新的一支")], "c");
  assert.deepEqual(tree.split("\n"), ["* a user: 开始", "    b user: 旧的一支", "  * c user: 新的一支  ← 当前"]);
  assert.equal(renderTree([entry("a", null, "开始")], "a"), "* a user: 开始  ← 当前");
  assert.equal(renderTree([], null), "（会话还是空的）");
});

test("13.5 /tree 只在分叉处缩进：一条直线上的条目对齐，分出的每一支深一层", () => {
  const entry = (id: string, parentId: string | null): SessionEntry => ({
    type: "message",
    id,
    parentId,
    timestamp: "2026-01-01T00:00:00.000Z",
    message: userMessage(id, 1),
  });
  const tree = renderTree([entry("a", null), entry("b", "a"), entry("c", "b"), entry("d", "c"), entry("e", "c"), entry("f", "e")], "f");
  assert.deepEqual(tree.split("\n"), ["* a user: a", "* b user: b", "* c user: c", "    d user: d", "  * e user: e", "  * f user: f  ← 当前"]);
});

test("13.5 /tree 走一条 10,000 层的链不会撑爆调用栈：一条直线上的条目都不缩进，leaf 在最后一行", () => {
  const entries: SessionEntry[] = [];
  for (let i = 0; i < 10_000; i += 1) {
    entries.push({ type: "message", id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, timestamp: "2026-01-01T00:00:00.000Z", message: userMessage("好", 1) });
  }
  const lines = renderTree(entries, "e9999").split("\n");
  assert.equal(lines.length, 10_000);
  assert.equal(lines[0], "* e0 user: 好");
  assert.equal(lines.at(-1), "* e9999 user: 好  ← 当前");
});

test("13.5 交互模式：一句话交给会话，!cmd 运行命令，/tree、/branch 走会话树，/exit 离开", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const stdin = new PassThrough();
  const run = io(cwd, agentDir, { stdin });
  const finished = main([], run.io);
  stdin.write(`${README_TASK}\n`);
  await waitFor(run.stdout.text, "项目名是「星图」");
  assert.match(run.stdout.text(), /→ read \{"path":"README.md"\}/);
  stdin.write("!echo 你好\n");
  await waitFor(run.stdout.text, "你好\n");
  stdin.write("/tree\n");
  await waitFor(run.stdout.text, "← 当前");
  const userLine = run.stdout.text().split("\n").find((line) => line.includes(`user: ${README_TASK.slice(0, 10)}`));
  const userId = userLine?.trim().split(" ")[1];
  assert.ok(userId, "树里应当有那句提问");
  stdin.write(`/branch ${userId}\n`);
  await waitFor(run.stdout.text, `已切到 ${userId}`);
  stdin.write("/tree\n");
  await waitFor(() => run.stdout.text().split(`已切到 ${userId}`)[1] ?? "", "← 当前");
  const after = run.stdout.text().split(`已切到 ${userId}`)[1]!.split("\n");
  assert.match(after.find((line) => line.includes("← 当前")) ?? "", new RegExp(userId!));
  stdin.write("/exit\n");
  assert.equal(await finished, 0);
});

test("13.5 运行中按 Ctrl-C 中止这次运行，REPL 还在；连按第二次离开，中间输入过新的一行就重新数", { timeout: 3_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const hanging = hangingModel();
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model: hanging.model });
  t.after(() => runtime.dispose());
  const stdin = new PassThrough();
  const stdout = sink();
  const repl = new InteractiveMode(runtime, { input: stdin, output: new Output(stdout.stream), terminal: false, reopen: () => assert.fail("不该换会话") });
  const finished = repl.run();
  repl.interrupt();
  // 提醒之后提示符重画在最下面：人看得出自己还能输入。
  assert.match(stdout.text(), /再按一次 Ctrl-C 离开，或者输入 \/exit。）\ntiny-pi> $/);
  // 输入了新的一行，之前那次 Ctrl-C 就不算数了：这一次只中止，不离开。
  stdin.write("你好\n");
  await hanging.running;
  repl.interrupt();
  await waitFor(stdout.text, "这次回答被中止了");
  assert.match(stdout.text(), /已中止这次运行/);
  assert.equal(runtime.session.agent.state.status, "idle");
  repl.interrupt();
  assert.equal(await finished, 0);
  // 在删掉临时目录（先登记的 after）之前关掉：被中止的那次运行可能还有条目要写进会话文件。
  await runtime.dispose();
});

test("13.5 /resume 列出这个项目的会话，给编号就换过去，旧的运行时被关掉", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const old = await createRuntime({ cwd, agentDir, env: {} });
  await old.session.prompt(README_TASK);
  await old.dispose();
  const stdin = new PassThrough();
  const run = io(cwd, agentDir, { stdin });
  const finished = main([], run.io);
  stdin.write("/resume\n");
  await waitFor(run.stdout.text, "用 /resume <编号>");
  assert.match(run.stdout.text(), new RegExp(`2\\. ${path.basename(old.sessionFile)}`));
  stdin.write("/resume 2\n");
  await waitFor(run.stdout.text, `已换到 ${path.basename(old.sessionFile)}（5 个条目）`);
  stdin.end();
  assert.equal(await finished, 0);
});

test("13.5 交互模式：SIGTERM 中止运行并离开；连按两次 Ctrl-C 时收尾卡住，只等 disposeGraceMs 就以 130 离开，不留下自成一组的子进程", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const signals = new EventEmitter();
  const terminated = hangingModel();
  const stdin = new PassThrough();
  const first = io(cwd, agentDir, { stdin, signals, model: terminated.model });
  const leaving = main([], first.io);
  stdin.write("你好\n");
  await Promise.race([terminated.running, leaving]);
  signals.emit("SIGTERM");
  assert.equal(await leaving, 0);
  for (const name of ["SIGINT", "SIGTERM", "SIGHUP"]) assert.equal(signals.listenerCount(name), 0, name);

  // 第一行（system）之后，会话的写入永远不返回：收尾里的 flush 会一直等下去。
  const stuck = hangingModel();
  const input = new PassThrough();
  const second = io(cwd, agentDir, { stdin: input, signals, model: stuck.model, disposeGraceMs: 200, openStore: (file) => brokenStore(file, 1) });
  // 一个自成进程组的直接子进程，像第 08 章 runCommand 起的命令：强制离开时它要整组被结束。
  const leftover = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  t.after(() => leftover.kill("SIGKILL"));
  await new Promise((resolve) => leftover.once("spawn", resolve));
  const started = Date.now();
  const forced = main([], second.io);
  input.write("你好\n");
  await Promise.race([stuck.running, forced]);
  signals.emit("SIGINT");
  signals.emit("SIGINT");
  assert.equal(await forced, 130);
  assert.ok(Date.now() - started < 3_000);
  assert.match(second.stderr.text(), /收尾超过 200 毫秒没有完成/);
  assert.deepEqual(await survivorsOf(leftover.pid!), [], "强制离开之后，自成一组的子进程还活着");
});

// ── 批准闸门接上 tiny-pi ────────────────────────────────────────

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

/** 一轮回答：模型要运行一条 bash 命令。 */
function bashTurn(id: string, command: string): ScriptedTurn {
  return { kind: "reply", content: [{ type: "toolCall", id, name: "bash", arguments: { command } }], stopReason: "toolUse" };
}

function doneTurn(words = "好了"): ScriptedTurn {
  return { kind: "reply", content: [text(words)], stopReason: "stop" };
}

/**
 * 回环上的一个 OpenAI 兼容服务器：第一次请求回一个 bash 调用，之后回一句话。
 * 交回它的地址和收到的每个请求体，测试据此看模型收到了什么工具结果。
 */
async function loopbackModel(t: TestContext, command: string) {
  const bodies: string[] = [];
  const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const call = { index: 0, id: "call_1", type: "function", function: { name: "bash", arguments: JSON.stringify({ command }) } };
      const body =
        bodies.length === 1
          ? sse({ choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }] }) + sse({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })
          : sse({ choices: [{ index: 0, delta: { content: "好的，我不动它。" }, finish_reason: null }] }) + sse({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
      res.end(`${body}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as AddressInfo;
  return { env: { PI_COURSE_BASE_URL: `http://127.0.0.1:${port}/v1`, PI_COURSE_MODEL: "loopback" }, bodies };
}

test("13.2 给了 approval 才装上闸门：“以后都可以”存进 agent 目录（工作区里什么都不多），重开运行时还记得；settings.json 的 allow 不问就放行，写错了说出文件", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const asked: string[] = [];
  const ask = async (request: { rule: string }): Promise<ApprovalAnswer> => {
    asked.push(request.rule);
    return "always";
  };
  const model = new ScriptedModel([bashTurn("c1", "touch a.txt"), doneTurn(), bashTurn("c2", "touch a.txt"), doneTurn()]);
  const first = await createRuntime({ cwd, agentDir, env: {}, model, approval: { ask } });
  assert.equal(first.approvalGate, true);
  await first.session.prompt("建一个文件");
  await first.dispose();
  assert.deepEqual(asked, ["bash:touch a.txt"]);
  assert.deepEqual((await readdir(cwd)).sort(), ["README.md", "a.txt"]);
  assert.deepEqual(JSON.parse(await readFile(permissionsFile(agentDir, cwd), "utf8")), { allow: ["bash:touch a.txt"] });
  // 重开之后不能问（像打印模式），记下的规则照样放行。
  const again = await createRuntime({ cwd, agentDir, env: {}, model, approval: {} });
  await again.session.prompt("再建一次");
  await again.dispose();
  const rerun = again.session.messages.filter((message) => message.role === "toolResult").at(-1);
  assert.equal(rerun?.role === "toolResult" ? rerun.isError : undefined, false);

  await writeFile(path.join(agentDir, "settings.json"), JSON.stringify({ allow: ["bash:touch b.txt"] }));
  const settings = await createRuntime({ cwd, agentDir, env: {}, model: new ScriptedModel([bashTurn("c3", "touch b.txt"), doneTurn()]), approval: {} });
  await settings.session.prompt("再建一个");
  await settings.dispose();
  assert.ok(await exists(path.join(cwd, "b.txt")), "settings.json 里放行的命令应当运行");
  const off = await createRuntime({ cwd, agentDir, env: {}, model, approval: { off: true } });
  assert.equal(off.approvalGate, false);
  await off.dispose();
  await writeFile(path.join(agentDir, "settings.json"), JSON.stringify({ allow: ["sudo"] }));
  await assert.rejects(createRuntime({ cwd, agentDir, env: {}, approval: {} }), (error: unknown) => {
    assert.ok(error instanceof RuntimeError);
    assert.equal(error.code, "SETTINGS_INVALID");
    assert.match(error.message, /settings\.json/);
    return true;
  });
});

test("13.3 打印模式默认不运行 bash（回环上的模型要 rm -rf victim）：victim 还在，模型收到没有批准的结果，stderr 说怎样放行；--allow bash 才运行", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  await mkdir(path.join(cwd, "victim"));
  await writeFile(path.join(cwd, "victim", "keep.txt"), "别删我\n");
  const server = await loopbackModel(t, "rm -rf victim");
  const refused = io(cwd, agentDir, { env: { PI_COURSE_AGENT_DIR: agentDir, ...server.env } });
  assert.equal(await main(["-p", "清理一下"], refused.io), 0);
  assert.ok(await exists(path.join(cwd, "victim", "keep.txt")), "没有 --allow 时 rm -rf victim 不该执行");
  const toolMessage = (JSON.parse(server.bodies[1]!) as { messages: { role: string; content: string }[] }).messages.find((message) => message.role === "tool");
  assert.equal(toolMessage?.content, approvalUnavailable("bash"));
  assert.match(refused.stderr.text(), /没有运行 bash：rm -rf victim.*--allow bash/);
  assert.equal(refused.stdout.text(), "好的，我不动它。\n");

  const allowed = io(cwd, agentDir, { env: { PI_COURSE_AGENT_DIR: agentDir, ...(await loopbackModel(t, "rm -rf victim")).env } });
  assert.equal(await main(["-p", "--allow", "bash:rm -rf", "清理一下"], allowed.io), 0);
  assert.ok(!(await exists(path.join(cwd, "victim"))), "--allow 放行之后命令应当运行");
});

test("13.3 --allow 写错是用法错误；--yolo 关掉闸门，stderr 说它关着", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  assert.deepEqual(parseCliArgs(["-p", "--allow", "bash", "--allow", "write:src/a.ts", "任务"]).allow, ["bash", "write:src/a.ts"]);
  const wrong = io(cwd, agentDir);
  assert.equal(await main(["-p", "--allow", "sudo", "任务"], wrong.io), 2);
  assert.match(wrong.stderr.text(), /--allow：允许规则 "sudo" 看不懂/);
  const yolo = io(cwd, agentDir, { model: new ScriptedModel([bashTurn("c1", "touch yolo.txt"), doneTurn()]) });
  assert.equal(await main(["-p", "--yolo", "动手"], yolo.io), 0);
  assert.ok(await exists(path.join(cwd, "yolo.txt")));
  assert.match(yolo.stderr.text(), /批准闸门关着（--yolo）/);
});

test("13.5 交互模式先问再做：n 拦下、y 运行、a 记下，重启后同一条命令不再问；横幅说闸门开着，/permissions 列出并清掉", { timeout: 5_000 }, async (t) => {
  const { root, cwd, agentDir } = await project(t);
  await mkdir(path.join(root, "outside"));
  const stdin = new PassThrough();
  const model = new ScriptedModel([
    bashTurn("c1", "rm -rf ../outside && echo gone"),
    doneTurn("没删"),
    bashTurn("c2", "touch once.txt"),
    doneTurn("建好了"),
    bashTurn("c3", "touch always.txt"),
    doneTurn("也建好了"),
  ]);
  const run = io(cwd, agentDir, { stdin, model });
  const finished = main([], run.io);
  await waitFor(run.stdout.text, "批准闸门开着");
  stdin.write("删掉外面那个目录\n");
  await waitFor(run.stdout.text, "[n] 不可以");
  assert.match(run.stdout.text(), /需要你的批准：bash：rm -rf \.\.\/outside && echo gone\n⚠ 这条命令提到了工作区之外的路径（\.\.\/outside）/);
  stdin.write("n\n");
  await waitFor(run.stdout.text, "没删");
  assert.ok(await exists(path.join(root, "outside")), "说了 n 的命令不该执行");
  const declined = model.requests[1]!.messages.at(-1);
  assert.equal(declined?.role === "toolResult" ? textOfResult(declined.content) : "", userDeclined("bash"));
  stdin.write("建一个文件\n");
  await waitFor(run.stdout.text, "（bash:touch once.txt）");
  stdin.write("y\n");
  await waitFor(run.stdout.text, "建好了");
  stdin.write("再建一个\n");
  await waitFor(run.stdout.text, "（bash:touch always.txt）");
  stdin.write("a\n");
  await waitFor(run.stdout.text, "也建好了");
  assert.ok(await exists(path.join(cwd, "once.txt")));
  assert.ok(await exists(path.join(cwd, "always.txt")));
  stdin.write("/permissions\n");
  await waitFor(run.stdout.text, "  bash:touch always.txt");
  stdin.write("/exit\n");
  assert.equal(await finished, 0);

  // 重启：记下的那条不再问，只批准过一次的要再问。
  const stdin2 = new PassThrough();
  const model2 = new ScriptedModel([bashTurn("c4", "touch always.txt"), doneTurn("第三次"), bashTurn("c5", "touch once.txt"), doneTurn("第四次")]);
  const again = io(cwd, agentDir, { stdin: stdin2, model: model2 });
  const finished2 = main([], again.io);
  stdin2.write("再来\n");
  await waitFor(again.stdout.text, "第三次");
  assert.doesNotMatch(again.stdout.text(), /需要你的批准/);
  stdin2.write("还来\n");
  await waitFor(again.stdout.text, "（bash:touch once.txt）");
  stdin2.write("n\n");
  await waitFor(again.stdout.text, "第四次");
  stdin2.write("/permissions clear\n");
  await waitFor(again.stdout.text, "已清掉");
  stdin2.end();
  assert.equal(await finished2, 0);
  assert.deepEqual(JSON.parse(await readFile(permissionsFile(agentDir, cwd), "utf8")), { allow: [] });
});

function textOfResult(content: readonly { type: string; text?: string }[]): string {
  return content.map((block) => block.text ?? "").join("");
}

// ── 项目信任 ────────────────────────────────────────────────────

/** 一个带项目扩展的项目：扩展每被加载一次，globalThis[counter] 加一，并登记一个 /hello 命令。 */
async function projectWithExtension(t: TestContext, counter: string) {
  const scene = await project(t);
  await mkdir(path.join(scene.cwd, ".pi", "extensions"), { recursive: true });
  await writeFile(
    path.join(scene.cwd, ".pi", "extensions", "hello.mjs"),
    `export default (pi) => { globalThis.${counter} = (globalThis.${counter} ?? 0) + 1; pi.registerCommand("hello", { description: "打个招呼", handler() {} }); };\n`,
  );
  const loads = () => ((globalThis as Record<string, unknown>)[counter] as number | undefined) ?? 0;
  return { ...scene, loads };
}

test("13.2 给了 trust 才检查项目信任：没决定过的项目不加载 .pi/extensions（说出有哪些），决定记在 agent 目录里，once 只信任这一次", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir, loads } = await projectWithExtension(t, "piTrust13a");
  const first = await createRuntime({ cwd, agentDir, env: {}, trust: {} });
  assert.equal(first.projectTrust.state, "undecided");
  assert.deepEqual(first.projectTrust.extensions, ["hello.mjs"]);
  assert.equal(first.extensions.extensions.length, 0);
  assert.equal(loads(), 0, "没信任的项目，扩展的代码一行都不该运行");
  assert.match(untrustedWarning(first.projectTrust), /没有加载项目扩展（hello\.mjs）：这个项目还没有被信任/);
  await first.projectTrust.record(false);
  await first.dispose();
  assert.equal(first.projectTrust.file, trustFile(agentDir));
  assert.deepEqual(JSON.parse(await readFile(trustFile(agentDir), "utf8")), { projects: { [cwd]: false } });
  assert.deepEqual((await readdir(cwd)).sort(), [".pi", "README.md"]);

  const refused = await createRuntime({ cwd, agentDir, env: {}, trust: {} });
  assert.equal(refused.projectTrust.state, "untrusted");
  assert.match(untrustedWarning(refused.projectTrust), /你以前选了不信任这个项目/);
  await refused.dispose();
  const once = await createRuntime({ cwd, agentDir, env: {}, trust: { once: true } });
  assert.equal(once.extensions.extensions.length, 1);
  assert.equal(loads(), 1);
  await once.projectTrust.record(true);
  await once.dispose();
  const trusted = await createRuntime({ cwd, agentDir, env: {}, trust: {} });
  assert.equal(trusted.projectTrust.state, "trusted");
  assert.equal(loads(), 2);
  await trusted.dispose();
});

test("13.3 打印模式里没信任的项目：项目扩展不加载，stderr 说清楚；--trust 才加载", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir, loads } = await projectWithExtension(t, "piTrust13b");
  const refused = io(cwd, agentDir);
  assert.equal(await main(["-p", README_TASK], refused.io), 0);
  assert.equal(loads(), 0);
  assert.match(refused.stderr.text(), /tiny-pi：警告：没有加载项目扩展（hello\.mjs）：这个项目还没有被信任。加 --trust/);
  const trusted = io(cwd, agentDir);
  assert.equal(await main(["-p", "--trust", README_TASK], trusted.io), 0);
  assert.equal(loads(), 1);
  assert.equal(trusted.stderr.text(), "");
});

test("13.5 有项目扩展而没决定过：交互模式开始时问一次，y 就加载并记下，下次不再问", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir, loads } = await projectWithExtension(t, "piTrust13c");
  const stdin = new PassThrough();
  const run = io(cwd, agentDir, { stdin });
  const finished = main([], run.io);
  await waitFor(run.stdout.text, "信任这个项目并加载它们吗？");
  assert.match(run.stdout.text(), /1 个项目扩展（\.pi\/extensions：hello\.mjs）/);
  assert.equal(loads(), 0);
  stdin.write("y\n");
  await waitFor(run.stdout.text, "已信任这个项目");
  stdin.write("/help\n");
  await waitFor(run.stdout.text, "/hello  打个招呼");
  stdin.write("/exit\n");
  assert.equal(await finished, 0);
  assert.equal(loads(), 1);

  const stdin2 = new PassThrough();
  const again = io(cwd, agentDir, { stdin: stdin2 });
  const finished2 = main([], again.io);
  stdin2.write("/help\n");
  await waitFor(again.stdout.text, "/hello  打个招呼");
  assert.doesNotMatch(again.stdout.text(), /信任这个项目并加载/);
  stdin2.end();
  assert.equal(await finished2, 0);
});

test("13.5 /compact 没有可压缩的内容时说出原因：这条分支约多少 token，全在保留的范围里", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const stdin = new PassThrough();
  const run = io(cwd, agentDir, { stdin });
  const finished = main([], run.io);
  stdin.write("/compact\n");
  await waitFor(run.stdout.text, "全都在保留的范围里");
  assert.match(run.stdout.text(), /没有可以压缩的内容：压缩只总结“最近的一段”之前的旧对话，这条分支目前约 \d+ 个 token/);
  stdin.end();
  assert.equal(await finished, 0);
});

test("13.5 /compact 压缩成功时说出压缩前约多少 token", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const model = new ScriptedModel([
    { kind: "reply", content: [text("第一个回答")], stopReason: "stop" },
    { kind: "reply", content: [text("第二个回答")], stopReason: "stop" },
    { kind: "reply", content: [text("## 目标\n记住两个回答。")], stopReason: "stop" },
  ]);
  // 只保留最近约 10 个 token：第一问一答就落在“可以压缩”的那一段里。
  const compaction = { contextWindow: 128_000, reserveTokens: 16_000, safetyMargin: 4_000, keepRecentTokens: 10 };
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model, compaction });
  t.after(() => runtime.dispose());
  await runtime.session.prompt(`第一问：${"长".repeat(400)}`);
  await runtime.session.prompt(`第二问：${"长".repeat(400)}`);
  const stdin = new PassThrough();
  const stdout = sink();
  const repl = new InteractiveMode(runtime, { input: stdin, output: new Output(stdout.stream), terminal: false, reopen: () => assert.fail("不该换会话") });
  const finished = repl.run();
  stdin.write("/compact\n");
  await waitFor(stdout.text, "个 token。");
  assert.match(stdout.text(), /已压缩：压缩前约 \d+ 个 token。/);
  stdin.end();
  assert.equal(await finished, 0);
  // 在删掉临时目录（先登记的 after）之前关掉。
  await runtime.dispose();
});

test("13.5 stdin 是终端时交给 readline 的终端模式：输入里的 Ctrl-C 就是一次中断，连按两次离开", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  const run = io(cwd, agentDir, { stdin });
  const finished = main([], run.io);
  await waitFor(run.stdout.text, "tiny-pi>");
  stdin.write("\x03");
  await waitFor(run.stdout.text, "再按一次 Ctrl-C 离开，或者输入 /exit");
  stdin.write("\x03");
  assert.equal(await finished, 0);
});

test("13.5 第二次 Ctrl-C 中止此刻正在进行的运行再离开：第一次中止的那一问之后排着的下一问也停下", { timeout: 3_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  let calls = 0;
  let secondStarted: () => void = () => {};
  const second = new Promise<void>((resolve) => (secondStarted = resolve));
  // 每次生成都一直等到被取消；第二次生成开始时告诉测试。
  const patient: Model = {
    provider: "test",
    id: "patient",
    stream(_context: AgentContext, options = {}) {
      calls += 1;
      const output = new AssistantMessageEventStream();
      const partial = assistantMessage([], "stop", { provider: "test", model: "patient", timestamp: 1 });
      output.push({ type: "start", partial });
      options.signal?.addEventListener("abort", () => output.push({ type: "error", reason: "aborted", error: { ...partial, stopReason: "aborted", errorMessage: "被取消" } }), { once: true });
      if (calls === 2) secondStarted();
      return output;
    },
  };
  const runtime = await createRuntime({ cwd, agentDir, env: {}, model: patient });
  t.after(() => runtime.dispose());
  const stdin = new PassThrough();
  const stdout = sink();
  const repl = new InteractiveMode(runtime, { input: stdin, output: new Output(stdout.stream), terminal: false, reopen: () => assert.fail("不该换会话") });
  const finished = repl.run();
  stdin.write("第一问\n");
  stdin.write("第二问\n");
  await waitFor(() => String(calls), "1");
  // 第一次：中止第一问；排着的第二问随后开始。
  repl.interrupt();
  await second;
  // 第二次（中间没有新的一行）：离开，并且中止此刻正在进行的第二问。
  repl.interrupt();
  assert.equal(await finished, 0);
  await waitFor(() => runtime.session.agent.state.status, "idle");
  assert.equal(runtime.session.agent.state.stopReason, "aborted");
  // 在删掉临时目录（先登记的 after）之前关掉：被中止的那次运行还有条目要写进会话文件。
  await runtime.dispose();
});

test("13.5 会话写不进去之后 /exit：关闭时的失败是 stderr 上的一句话，点名每个出错的部件，退出码 1", { timeout: 5_000 }, async (t) => {
  const { cwd, agentDir } = await project(t);
  const full = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", syscall: "write" });
  const model = new ScriptedModel([{ kind: "reply", content: [text("答案是 42。")], stopReason: "stop" }]);
  const stdin = new PassThrough();
  // 第一行（system）写得进去，之后磁盘满了：这一问报错，REPL 还在；离开时关闭会话和会话文件都失败。
  const run = io(cwd, agentDir, { stdin, model, openStore: (file) => brokenStore(file, 1, full) });
  const finished = main([], run.io);
  stdin.write("答案是什么？\n");
  await waitFor(run.stdout.text, "ENOSPC");
  stdin.write("/exit\n");
  assert.equal(await finished, 1);
  const lines = stderrLines(run.stderr.text());
  assert.equal(lines.length, 1, run.stderr.text());
  assert.match(lines[0]!, /^tiny-pi：关闭运行时时有 2 个部件出错：会话（ENOSPC.*）；会话文件（ENOSPC.*）$/);
});
