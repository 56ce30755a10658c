import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";

import { Agent } from "../src/agent.js";
import type { AfterToolCall, BeforeToolCall } from "../src/agent-loop.js";
import { AgentSession } from "../src/agent-session.js";
import {
  approvalGate,
  approvalUnavailable,
  outsideWorkspaceWarning,
  parseAllowRule,
  PermissionStore,
  ruleAllows,
  userDeclined,
  type ApprovalAnswer,
  type ApprovalRequest,
} from "../src/approval-gate.js";
import { codingTools, readTool } from "../src/coding-tools.js";
import { factoryOf, loadExtensions } from "../src/extension-loader.js";
import {
  ABORTED_BEFORE_CHECK,
  extensionFromFactory,
  ExtensionRunner,
  REMOVED_LEADING_SYSTEM_MESSAGE,
  type ExtensionError,
  type ExtensionFactory,
  type ExtensionAPI,
} from "../src/extensions.js";
import { loadResources, type Resources } from "../src/resources.js";
import { loadContextFiles, type ResourceDiagnostic } from "../src/resources/context-files.js";
import { resourcePatch, resourceSections } from "../src/resources/sections.js";
import { expandPromptTemplate, loadPromptTemplates, loadSkills, parseCommandArgs, parseFrontmatter, substituteArgs } from "../src/resources/skills.js";
import { s } from "../src/schema.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { InMemorySessionStore } from "../src/session-store.js";
import { SessionTree } from "../src/session-tree.js";
import { defineTool, type AgentTool } from "../src/tools.js";
import { currentSystemMessage, systemMessageText, text, type AgentContext, type AssistantContent, type AgentMessage, type Message } from "../src/types.js";
import { Workspace } from "../src/workspace.js";

// ── 场景 ────────────────────────────────────────────────────────

const temps: string[] = [];
after(async () => {
  for (const dir of temps) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pi-course-12-"));
  temps.push(dir);
  return dir;
}

/** 按相对路径写一组文件（父目录自动创建）。 */
async function writeFiles(root: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [name, body] of Object.entries(files)) {
    const file = path.join(root, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, body);
  }
}

function reply(...content: AssistantContent[]): ScriptedTurn {
  const calls = content.some((block) => block.type === "toolCall");
  return { kind: "reply", content, stopReason: calls ? "toolUse" : "stop" };
}

function call(id: string, name: string, args: Record<string, unknown>) {
  return { type: "toolCall" as const, id, name, arguments: args };
}

function counter(): () => string {
  let next = 0;
  return () => `e${++next}`;
}

function noResources(overrides: Partial<Resources> = {}): Resources {
  return { contextFiles: [], skills: [], promptTemplates: [], diagnostics: [], ...overrides };
}

interface Scene {
  session: AgentSession;
  model: ScriptedModel;
  store: InMemorySessionStore;
  errors: ExtensionError[];
}

/** 一个会话：内存里的会话文件、脚本模型、可选的资源、扩展和工具。 */
async function scene(
  turns: ScriptedTurn[],
  options: {
    factories?: ExtensionFactory[];
    tools?: AgentTool<any>[];
    resources?: Resources;
    store?: InMemorySessionStore;
    handlerTimeoutMs?: number;
  } = {},
): Promise<Scene> {
  const errors: ExtensionError[] = [];
  const store = options.store ?? new InMemorySessionStore();
  const model = new ScriptedModel(turns, { now: () => 2_000 });
  const extensions = await Promise.all((options.factories ?? []).map((factory, index) => extensionFromFactory(`ext-${index + 1}.ts`, factory)));
  const runner = extensions.length > 0 ? new ExtensionRunner(extensions, { cwd: "/project", onError: (error) => errors.push(error), handlerTimeoutMs: options.handlerTimeoutMs }) : undefined;
  const session = new AgentSession({
    tree: await SessionTree.open(store, { now: () => 1_000, newId: counter() }),
    model,
    systemPrompt: "你是一个编程助手。",
    now: () => 1_000,
    tools: options.tools,
    resources: options.resources,
    extensions: runner,
  });
  return { session, model, store, errors };
}

function lastUserText(request: AgentContext | undefined): string {
  const user = [...(request?.messages ?? [])].reverse().find((message) => message.role === "user");
  assert.ok(user !== undefined && user.role === "user", "请求里应当有 user 消息");
  return user.content.map((block) => block.text).join("");
}

function resultText(message: Message | AgentMessage | undefined): string {
  assert.ok(message !== undefined && message.role === "toolResult", `应当是一条工具结果：${JSON.stringify(message)}`);
  return message.content.map((block) => block.text).join("");
}

/** 一个记下自己被执行了几次的工具。 */
function echoTool(log: string[]): AgentTool<{ say: string }> {
  return defineTool({
    name: "echo",
    description: "原样交回 say",
    parameters: s.object({ say: s.string("要说的话") }),
    async execute({ say }) {
      log.push(say);
      return { content: [text(`echo:${say}`)], details: { said: say } };
    },
  });
}

// ── 12.1 上下文文件 ─────────────────────────────────────────────

test("12.1 从 cwd 往上走到 stopAt 为止：每层一份，外层在前、最近的在后；同一层 AGENTS.md 优先，没有才用 CLAUDE.md", async () => {
  const root = await tempDir();
  await writeFiles(root, {
    "AGENTS.md": "stopAt 之外，不该读到",
    "a/CLAUDE.md": "a 层的规则",
    "a/b/AGENTS.md": "b 层的规则",
    "a/b/CLAUDE.md": "同一层有 AGENTS.md，不该读到",
  });
  await mkdir(path.join(root, "a/b/c"), { recursive: true });
  const files = await loadContextFiles(path.join(root, "a/b/c"), { stopAt: path.join(root, "a") });
  assert.deepEqual(
    files.map((file) => [path.relative(root, file.path), file.content]),
    [
      [path.join("a", "CLAUDE.md"), "a 层的规则"],
      [path.join("a", "b", "AGENTS.md"), "b 层的规则"],
    ],
  );
});

test("12.1 不给 stopAt 就走到文件系统根：更外层的文件（机器上也许有）排在前面，工作目录这一层排在最后", async () => {
  const root = await tempDir();
  await writeFiles(root, { "AGENTS.md": "外层", "inner/AGENTS.md": "内层" });
  const files = await loadContextFiles(path.join(root, "inner"));
  // 只比较相对顺序：临时目录之上也许真有一份 AGENTS.md，它只能出现在更前面。
  assert.deepEqual(files.slice(-2).map((file) => file.content), ["外层", "内层"]);
});

test("12.1 坏的上下文文件只是一条诊断：不是 UTF-8、超过上限、绕成环的符号链接都跳过，别的层照常读", async () => {
  const root = await tempDir();
  await writeFiles(root, {
    "AGENTS.md": new Uint8Array([0xff, 0xfe, 0x41]),
    "a/AGENTS.md": "x".repeat(100),
    "a/b/c/AGENTS.md": "好的那一份",
  });
  await symlink("AGENTS.md", path.join(root, "a/b/AGENTS.md"));
  const diagnostics: ResourceDiagnostic[] = [];
  const files = await loadContextFiles(path.join(root, "a/b/c"), { stopAt: root, maxContextBytes: 50, diagnostics });
  assert.deepEqual(files.map((file) => file.content), ["好的那一份"]);
  const byFile = diagnostics.map((item) => [path.relative(root, item.path), item.message]);
  assert.equal(byFile.length, 3, JSON.stringify(byFile));
  assert.match(byFile[0]![1]!, /UTF-8/);
  assert.match(byFile[1]![1]!, /100 字节/);
  assert.match(byFile[2]![1]!, /环/);
  // 上限是“最多”：恰好 50 字节的文件照常读进来。
  const exact = await tempDir();
  await writeFiles(exact, { "AGENTS.md": "y".repeat(50) });
  const fits = await loadContextFiles(exact, { stopAt: exact, maxContextBytes: 50 });
  assert.deepEqual(fits.map((file) => file.content.length), [50], "恰好等于上限的文件不该被跳过");
});

// ── 12.2 技能与提示模板 ─────────────────────────────────────────

test("12.2 技能只交出名字、说明和正文路径；front matter 写坏或缺 description 的技能变成诊断，不让加载失败", async () => {
  const root = await tempDir();
  await writeFiles(root, {
    ".pi/skills/deploy/SKILL.md": "---\nname: ship-it\ndescription: \"发布一个新版本\"\n---\n# 发布\n第一步……",
    ".pi/skills/lint/SKILL.md": "---\ndescription: 修好 lint 报错\n---\n正文",
    ".pi/skills/broken/SKILL.md": "---\nname: broken\ndescription: 没有结尾\n",
    ".pi/skills/silent/SKILL.md": "---\nname: silent\n---\n正文",
  });
  const resources = await loadResources({ cwd: root, stopAt: root });
  assert.deepEqual(
    resources.skills.map((skill) => [skill.name, skill.description, path.basename(skill.baseDir), path.basename(skill.filePath)]),
    [
      ["ship-it", "发布一个新版本", "deploy", "SKILL.md"],
      ["lint", "修好 lint 报错", "lint", "SKILL.md"],
    ],
  );
  assert.deepEqual(resources.diagnostics.map((item) => path.basename(path.dirname(item.path))), ["broken", "silent"]);
  assert.match(resources.diagnostics[0]!.message, /结尾/);
  assert.match(resources.diagnostics[1]!.message, /description/);
});

test("12.2 `/name 参数` 按 shell 的引号切参数（空参数不算），$1 $@ $ARGUMENTS ${@:N} 一次替换完；不认识的 /name 原样交回", () => {
  assert.deepEqual(parseCommandArgs(`src/a.ts  "两个 词" 'it''s' ""`), ["src/a.ts", "两个 词", "its"]);
  assert.equal(substituteArgs("看 $1 和 $2，缺的 [$3]；全部：$@ / $ARGUMENTS；从第二个起：${@:2}；${@:1:1}", ["a", "b c"]), "看 a 和 b c，缺的 []；全部：a b c / a b c；从第二个起：b c；a");
  // 参数里恰好写着 $1：只替换一遍，不会再被展开。
  assert.equal(substituteArgs("[$1][$2]", ["$2", "x"]), "[$2][x]");
  const templates = [{ name: "review", description: "审查", content: "请审查 $1，重点看 $2。", filePath: "/p/review.md" }];
  assert.equal(expandPromptTemplate(`/review src/a.ts "错误处理"`, templates), "请审查 src/a.ts，重点看 错误处理。");
  assert.equal(expandPromptTemplate("/unknown x", templates), "/unknown x");
  // 只有 /name、没有参数：照样展开，$1 $2 都是空的。
  assert.equal(expandPromptTemplate("/review", templates), "请审查 ，重点看 。");
  assert.equal(expandPromptTemplate("review src/a.ts", templates), "review src/a.ts");
});

test("12.2 front matter：空的也是 front matter，中间的空行跳过；不是技能的目录项（没有 SKILL.md、是个文件）不算问题，不记诊断", async () => {
  assert.deepEqual(parseFrontmatter("---\n---\n正文"), { fields: {}, body: "正文" });
  assert.deepEqual(parseFrontmatter("---\nname: x\n\ndescription: 一行说明\n---\n正文"), { fields: { name: "x", description: "一行说明" }, body: "正文" });
  const root = await tempDir();
  await writeFiles(root, {
    ".pi/skills/deploy/SKILL.md": "---\ndescription: 发布\n---\n步骤",
    ".pi/skills/notes/README.md": "这个目录里没有 SKILL.md",
    ".pi/skills/todo.txt": "一个文件，不是目录",
  });
  const diagnostics: ResourceDiagnostic[] = [];
  const skills = await loadSkills(root, diagnostics);
  assert.deepEqual(skills.map((skill) => skill.name), ["deploy"]);
  assert.deepEqual(diagnostics, [], "没有 SKILL.md 的目录项只是别的东西，不该记诊断");
});

test("12.2 提示模板从 .pi/prompts 读出：名字是文件名，description 可省（取正文第一个非空行），front matter 不进正文", async () => {
  const root = await tempDir();
  await writeFiles(root, {
    ".pi/prompts/review.md": "---\ndescription: 审查一个文件\n---\n请审查 $1。",
    ".pi/prompts/explain.md": "\n解释 $@ 的作用。\n更多说明",
    ".pi/prompts/notes.txt": "不是模板",
  });
  const templates = await loadPromptTemplates(root);
  assert.deepEqual(
    templates.map((template) => [template.name, template.description, template.content]),
    [
      ["explain", "解释 $@ 的作用。", "\n解释 $@ 的作用。\n更多说明"],
      ["review", "审查一个文件", "请审查 $1。"],
    ],
  );
});

test("12.2 技能与模板先 stat 再读：FIFO、目录、超过上限的文件只是一条诊断，start-up 不会卡住", { timeout: 2_000 }, async () => {
  const root = await tempDir();
  await writeFiles(root, {
    ".pi/skills/huge/SKILL.md": `---\ndescription: 太大\n---\n${"x".repeat(200)}`,
    ".pi/skills/ok/SKILL.md": "---\ndescription: 好的那一个\n---\n正文",
    ".pi/prompts/huge.md": "y".repeat(200),
    ".pi/prompts/ok.md": "好的模板",
  });
  await mkdir(path.join(root, ".pi/skills/pipe"), { recursive: true });
  assert.equal(spawnSync("mkfifo", [path.join(root, ".pi/skills/pipe/SKILL.md")]).status, 0, "需要 mkfifo 命令来造一个 FIFO");
  assert.equal(spawnSync("mkfifo", [path.join(root, ".pi/prompts/pipe.md")]).status, 0, "需要 mkfifo 命令来造一个 FIFO");
  await mkdir(path.join(root, ".pi/prompts/dir.md"), { recursive: true });
  const diagnostics: ResourceDiagnostic[] = [];
  const skills = await loadSkills(root, diagnostics, 100);
  const templates = await loadPromptTemplates(root, diagnostics, 100);
  assert.deepEqual(skills.map((skill) => skill.name), ["ok"]);
  assert.deepEqual(templates.map((template) => template.name), ["ok"]);
  const byFile = diagnostics.map((item) => [path.relative(root, item.path), item.message]);
  assert.deepEqual(byFile.map(([file]) => file), [
    path.join(".pi/skills/huge/SKILL.md"),
    path.join(".pi/skills/pipe/SKILL.md"),
    path.join(".pi/prompts/dir.md"),
    path.join(".pi/prompts/huge.md"),
    path.join(".pi/prompts/pipe.md"),
  ]);
  assert.match(byFile[0]![1]!, /超过上限 100 字节/);
  assert.match(byFile[1]![1]!, /不是普通文件/);
  assert.match(byFile[2]![1]!, /不是普通文件/);
  assert.match(byFile[3]![1]!, /超过上限 100 字节/);
  assert.match(byFile[4]![1]!, /不是普通文件/);
});

test("12.2 指向工作区外的技能目录跳过并记诊断；同名的技能只留先找到的那个，后来的记一条诊断", async () => {
  const root = await tempDir();
  const outside = await tempDir();
  await writeFiles(outside, { "secret/SKILL.md": "---\ndescription: 工作区外的技能\n---\n正文" });
  await writeFiles(root, {
    ".pi/skills/a-first/SKILL.md": "---\nname: deploy\ndescription: 先找到的\n---\n正文",
    ".pi/skills/b-second/SKILL.md": "---\nname: deploy\ndescription: 同名的第二个\n---\n正文",
    "shared/inside/SKILL.md": "---\ndescription: 链接到工作区里面\n---\n正文",
  });
  await symlink(path.join(outside, "secret"), path.join(root, ".pi/skills/c-outside"));
  await symlink(path.join(root, "shared/inside"), path.join(root, ".pi/skills/d-inside"));
  const diagnostics: ResourceDiagnostic[] = [];
  const skills = await loadSkills(root, diagnostics);
  assert.deepEqual(skills.map((skill) => [skill.name, skill.description]), [
    ["deploy", "先找到的"],
    ["d-inside", "链接到工作区里面"],
  ]);
  assert.deepEqual(diagnostics.map((item) => path.basename(path.dirname(item.path))), ["b-second", "c-outside"]);
  assert.match(diagnostics[0]!.message, /同名/);
  assert.match(diagnostics[1]!.message, /工作区之外/);
});

// ── 12.3 具名段落与补丁 ─────────────────────────────────────────

test("12.3 每种资源一个具名段落；补丁只写变了的段，没了的写 null，什么都没变就没有补丁", () => {
  const one = noResources({ contextFiles: [{ path: "/p/AGENTS.md", content: "用中文回答" }] });
  const two = noResources({
    contextFiles: [{ path: "/p/AGENTS.md", content: "用中文回答" }],
    skills: [{ name: "deploy", description: "发布", filePath: "/p/.pi/skills/deploy/SKILL.md", baseDir: "/p/.pi/skills/deploy" }],
  });
  const before = resourceSections(one);
  const afterReload = resourceSections(two);
  assert.deepEqual(Object.keys(before), ["project-context"]);
  assert.match(before["project-context"]!, /用中文回答/);
  assert.match(afterReload["skills"]!, /deploy：发布/);
  assert.match(afterReload["skills"]!, /\/p\/\.pi\/skills\/deploy\/SKILL\.md/);
  assert.deepEqual(resourcePatch(before, afterReload, 5), { role: "system", content: "", sections: { skills: afterReload["skills"]! }, timestamp: 5 });
  assert.deepEqual(resourcePatch(afterReload, before, 6)?.sections, { skills: null });
  assert.equal(resourcePatch(before, resourceSections(one), 7), undefined);
  assert.deepEqual(resourceSections(noResources()), {}, "没有上下文文件就没有 project-context 段");
});

test("12.3 新会话的第一条 system 带着段落：模型只读到技能的说明，正文要它自己用 read 工具去读", { timeout: 2_000 }, async () => {
  const root = await tempDir();
  await writeFiles(root, { "AGENTS.md": "项目用 pnpm", ".pi/skills/deploy/SKILL.md": "---\ndescription: 发布新版本\n---\n先跑 release.sh" });
  const resources = await loadResources({ cwd: root, stopAt: root });
  const skillPath = resources.skills[0]!.filePath;
  const { session, model } = await scene(
    [reply(call("c1", "read", { path: skillPath })), reply(text("照做"))],
    { resources, tools: [readTool(await Workspace.open(root))] },
  );
  const first = session.messages[0];
  assert.ok(first?.role === "system");
  assert.equal(first.content, "你是一个编程助手。");
  assert.deepEqual(Object.keys(first.sections ?? {}), ["project-context", "skills"]);
  await session.prompt("发布一下");
  const prompt = systemMessageText(currentSystemMessage(model.requests[0]!.messages)!);
  assert.match(prompt, /项目用 pnpm/);
  assert.match(prompt, /发布新版本/);
  assert.doesNotMatch(prompt, /release\.sh/);
  assert.match(resultText(model.requests[1]!.messages.at(-1)), /先跑 release\.sh/);
});

test("12.3 重新加载资源追加一条 sections 补丁：写下的第一条不动，重放出的 prompt 换新；恢复会话后照样生效，续接时资源变了也补一条", { timeout: 2_000 }, async () => {
  const v1 = noResources({ contextFiles: [{ path: "/p/AGENTS.md", content: "旧规则" }] });
  const v2 = noResources({ contextFiles: [{ path: "/p/AGENTS.md", content: "新规则" }] });
  const { session, model, store } = await scene([reply(text("好"))], { resources: v1 });
  const first = structuredClone(session.messages[0]);
  assert.equal(await session.reloadResources(v1), undefined, "没有变化就不写补丁");
  const patch = await session.reloadResources(v2);
  assert.deepEqual(Object.keys(patch?.sections ?? {}), ["project-context"]);
  assert.equal(patch?.content, "");
  assert.deepEqual(session.messages[0], first);
  await session.prompt("继续");
  const prompt = systemMessageText(currentSystemMessage(model.requests[0]!.messages)!);
  assert.match(prompt, /新规则/);
  assert.doesNotMatch(prompt, /旧规则/);
  const resumed = new AgentSession({ tree: await SessionTree.open(store), model: new ScriptedModel([]) });
  assert.match(resumed.agent.systemPrompt ?? "", /新规则/);
  assert.equal(resumed.messages.filter((message) => message.role === "system").length, 2);
  // 续接时带着资源：和记录里的一样就不写；两次运行之间变了，就在续接时补上一条。
  const same = new AgentSession({ tree: await SessionTree.open(store), model: new ScriptedModel([]), resources: v2 });
  assert.equal(same.messages.filter((message) => message.role === "system").length, 2);
  const changed = new AgentSession({ tree: await SessionTree.open(store), model: new ScriptedModel([]), resources: v1 });
  await changed.flush();
  assert.match(changed.agent.systemPrompt ?? "", /旧规则/);
  assert.equal(store.text.filter((line) => line.includes('"role":"system"')).length, 3);
});

// ── 12.4 扩展运行器 ─────────────────────────────────────────────

test("12.4 运行器自己就和 signal 赛跑：不经循环直接调用，abort 之后 tool_call 交回拦下、tool_result 交回已有的改写", { timeout: 2_000 }, async () => {
  const never = new Promise<never>(() => {});
  const stuck = await extensionFromFactory("stuck.ts", (pi) => {
    pi.on("tool_call", () => never);
    pi.on("tool_result", () => never);
  });
  const errors: ExtensionError[] = [];
  const runner = new ExtensionRunner([stuck], { onError: (error) => errors.push(error) });
  const controller = new AbortController();
  const call = runner.emitToolCall({ type: "tool_call", toolCallId: "c1", toolName: "bash", input: {} }, controller.signal);
  const result = runner.emitToolResult(
    { type: "tool_result", toolCallId: "c1", toolName: "bash", input: {}, content: [text("原样")], details: undefined, isError: false },
    controller.signal,
  );
  controller.abort();
  assert.deepEqual(await call, { block: true, reason: ABORTED_BEFORE_CHECK });
  assert.equal(await result, undefined, "abort 时什么都还没改写：交回 undefined，用原来的结果");
  assert.deepEqual(errors, [], "abort 不是扩展的错：不该报告");
});

test("12.4 运行器交给每个处理器的是副本：处理器改了事件里的消息，调用方手里的那一份不变", { timeout: 2_000 }, async () => {
  const meddler = await extensionFromFactory("meddler.ts", (pi) => {
    pi.on("turn_end", (event) => {
      event.message.content.push(text("偷偷加的"));
    });
  });
  const message = { role: "assistant", content: [text("原话")], stopReason: "stop", timestamp: 1 } as unknown as Extract<AgentMessage, { role: "assistant" }>;
  const errors: ExtensionError[] = [];
  await new ExtensionRunner([meddler], { onError: (error) => errors.push(error) }).emit({ type: "turn_end", message, toolResults: [] });
  assert.deepEqual(errors, []);
  assert.deepEqual(message.content, [text("原话")]);
});

test("12.4 处理器按登记顺序运行：先按扩展的顺序，同一个扩展里按 on() 的先后；加载时调用 sendMessage 得到一句说明", async () => {
  const log: string[] = [];
  const first = await extensionFromFactory("a.ts", (pi) => {
    pi.on("turn_start", () => void log.push("a1"));
    pi.on("turn_start", async () => {
      await new Promise((resolve) => setImmediate(resolve));
      log.push("a2");
    });
  });
  const second = await extensionFromFactory("b.ts", (pi) => pi.on("turn_start", () => void log.push("b1")));
  await new ExtensionRunner([first, second]).emit({ type: "turn_start", step: 1 });
  assert.deepEqual(log, ["a1", "a2", "b1"]);
  // 加载时还没有会话：sendMessage 给出一句说明，而不是悄悄丢掉。
  await assert.rejects(
    extensionFromFactory("early.ts", (pi) => pi.sendMessage({ customType: "x", content: "太早了", display: false })),
    /还没有绑定到会话/,
  );
});

test("12.4 处理器抛出只是一条写明文件与事件的错误：后面的处理器照样运行，Agent 照样答完", { timeout: 2_000 }, async () => {
  const log: string[] = [];
  const { session, errors } = await scene([reply(text("答完了"))], {
    factories: [
      (pi) => {
        pi.on("agent_start", () => {
          throw new Error("坏了");
        });
      },
      (pi) => pi.on("agent_start", () => void log.push("第二个扩展照样收到")),
    ],
  });
  await session.prompt("你好");
  assert.deepEqual(log, ["第二个扩展照样收到"]);
  assert.deepEqual(errors, [{ extensionPath: "ext-1.ts", event: "agent_start", error: "坏了" }]);
  assert.equal(session.agent.state.error, undefined);
  assert.equal(session.messages.at(-1)?.role, "assistant");
});

test("12.4 tool_call 交回 block：工具不执行，reason 成为那条工具结果；抛出的守卫也算拦下", { timeout: 2_000 }, async () => {
  const executed: string[] = [];
  const { session, model, errors } = await scene(
    [reply(call("c1", "echo", { say: "rm -rf" }), call("c2", "echo", { say: "boom" }), call("c3", "echo", { say: "ok" })), reply(text("好"))],
    {
      tools: [echoTool(executed)],
      factories: [
        (pi) =>
          pi.on("tool_call", (event) => {
            const say = (event.input as { say: string }).say;
            if (say === "rm -rf") return { block: true, reason: "不许删库" };
            if (say === "boom") throw new Error("守卫自己坏了");
            return undefined;
          }),
      ],
    },
  );
  await session.prompt("动手");
  assert.deepEqual(executed, ["ok"]);
  const results = model.requests[1]!.messages.filter((message) => message.role === "toolResult");
  assert.deepEqual(results.map((message) => [message.toolCallId, message.isError]), [["c1", true], ["c2", true], ["c3", false]]);
  assert.equal(resultText(results[0]), "不许删库");
  assert.match(resultText(results[1]), /守卫自己坏了/);
  assert.deepEqual(errors.map((error) => [error.extensionPath, error.event]), [["ext-1.ts", "tool_call"]]);
});

test("12.4 tool_result 依次改写结果：后一个处理器看到前一个的改动，模型读到、会话存下的都是改写后的", { timeout: 2_000 }, async () => {
  const { session, model, store } = await scene([reply(call("c1", "echo", { say: "hi" })), reply(text("好"))], {
    tools: [echoTool([])],
    factories: [
      (pi) => pi.on("tool_result", (event) => ({ content: [text(`${event.content[0]!.text}!`)] })),
      (pi) => pi.on("tool_result", (event) => ({ content: [text(`[${event.content[0]!.text}]`)], isError: true })),
    ],
  });
  await session.prompt("说 hi");
  const result = model.requests[1]!.messages.at(-1);
  assert.equal(resultText(result), "[echo:hi!]");
  assert.equal(result?.role === "toolResult" && result.isError, true);
  assert.deepEqual(result?.role === "toolResult" && result.details, { said: "hi" }, "没交回的字段保持原样");
  assert.ok(store.text.some((line) => line.includes("[echo:hi!]")));
});

test("12.4 tool_result 交回的 details 换掉原来的：会话存下的结果带着新的 details", { timeout: 2_000 }, async () => {
  const { session } = await scene([reply(call("c1", "echo", { say: "hi" })), reply(text("好"))], {
    tools: [echoTool([])],
    factories: [(pi) => pi.on("tool_result", () => ({ details: { checked: true } }))],
  });
  await session.prompt("说 hi");
  const result = session.messages.find((message) => message.role === "toolResult");
  assert.deepEqual(result?.role === "toolResult" && result.details, { checked: true }, "交回的 details 应当换掉工具原来的");
  assert.equal(resultText(result), "echo:hi", "没交回 content 就保持原样");
});

test("12.5 tool_result、context、context_with_system 的处理器抛出只是一条写明文件与事件的报告：后面的处理器照样改写，请求照旧", async () => {
  const errors: ExtensionError[] = [];
  const broken = await extensionFromFactory("broken.ts", (pi) => {
    pi.on("tool_result", () => {
      throw new Error("坏了");
    });
    pi.on("context", () => {
      throw new Error("坏了");
    });
    pi.on("context_with_system", () => {
      throw new Error("坏了");
    });
  });
  const fine = await extensionFromFactory("fine.ts", (pi) => pi.on("tool_result", () => ({ details: { checked: true } })));
  // 什么都不交回就是“不改”，不是一次坏的改写。
  const quiet = await extensionFromFactory("quiet.ts", (pi) => pi.on("tool_result", () => undefined));
  const runner = new ExtensionRunner([broken, fine, quiet], { onError: (error) => errors.push(error) });
  const rewritten = await runner.emitToolResult({ type: "tool_result", toolCallId: "c1", toolName: "echo", input: {}, content: [text("原结果")], details: { size: 1 }, isError: false });
  assert.deepEqual(rewritten, { content: [text("原结果")], details: { checked: true }, isError: false });
  const messages: AgentMessage[] = [{ role: "system", content: "你是 tiny-pi。", timestamp: 1 }, { role: "user", content: [text("你好")], timestamp: 2 }];
  assert.deepEqual(await runner.emitContext(messages), messages);
  assert.deepEqual(await runner.emitContextWithSystem(messages), messages);
  assert.deepEqual(
    errors.map((error) => [error.extensionPath, error.event]),
    [
      ["broken.ts", "tool_result"],
      ["broken.ts", "context"],
      ["broken.ts", "context_with_system"],
    ],
  );
});

test("12.4 tool_result 的改写先验形状：content 不是文本块数组、details 写不成 JSON 都报告，保留原结果", { timeout: 2_000 }, async () => {
  const cycle: Record<string, unknown> = {};
  cycle["self"] = cycle;
  const rewrites: unknown[] = [
    { content: "不是数组" },
    { content: [{ type: "image", data: "x" }] },
    { details: { n: 1n } },
    { details: cycle },
    "不是对象",
    [{ type: "text", text: "数组也不是对象" }],
    { content: [{ type: "text", text: 5 }] },
  ];
  const { session, model, store, errors } = await scene(
    [reply(...rewrites.map((_, index) => call(`c${index + 1}`, "echo", { say: `${index + 1}` }))), reply(text("好"))],
    { tools: [echoTool([])], factories: [(pi) => pi.on("tool_result", (event) => rewrites[Number(event.toolCallId.slice(1)) - 1] as never)] },
  );
  await session.prompt("说七遍");
  const results = model.requests[1]!.messages.filter((message) => message.role === "toolResult");
  assert.deepEqual(results.map((message) => resultText(message)), rewrites.map((_, index) => `echo:${index + 1}`));
  assert.deepEqual(errors.map((error) => [error.extensionPath, error.event]), Array(rewrites.length).fill(["ext-1.ts", "tool_result"]));
  assert.ok(errors.every((error) => error.error.includes("改写不合规，保留原结果")), JSON.stringify(errors));
  assert.match(errors[0]!.error, /content/);
  assert.match(errors[2]!.error, /details/);
  assert.match(errors[6]!.error, /content/, "text 不是字符串的块也不是文本块");
  // 会话文件照样能重新打开：存下的是原结果。
  const reopened = await SessionTree.open(store, { now: () => 1_000, newId: counter() });
  assert.equal(reopened.buildSessionContext().filter((message) => message.role === "toolResult").length, rewrites.length);
});

test("12.4 tool_call 与 tool_result 的处理器一直不结束：abort 之后这次运行照样以 aborted 收场", { timeout: 2_000 }, async () => {
  for (const event of ["tool_call", "tool_result"] as const) {
    let entered!: () => void;
    const stuck = new Promise<void>((resolve) => (entered = resolve));
    const { session } = await scene([reply(call("c1", "echo", { say: "x" })), reply(text("不该到这里"))], {
      tools: [echoTool([])],
      factories: [
        (pi) =>
          pi.on(event, () => {
            entered();
            return new Promise<never>(() => {});
          }),
      ],
    });
    const running = session.prompt("动手");
    await stuck;
    session.agent.abort();
    await running;
    assert.equal(session.agent.state.stopReason, "aborted", event);
  }
  // 运行器自己也与 signal 赛跑：直接调用 emitToolCall / emitToolResult，abort 一到就交回，不等那个处理器。
  const stuckRunner = new ExtensionRunner([
    await extensionFromFactory("stuck.ts", (pi) => {
      pi.on("tool_call", () => new Promise<never>(() => {}));
      pi.on("tool_result", () => new Promise<never>(() => {}));
    }),
  ]);
  const stillWaiting = () => new Promise((resolve) => setTimeout(resolve, 200, "还在等"));
  const checking = new AbortController();
  const decision = stuckRunner.emitToolCall({ type: "tool_call", toolCallId: "c1", toolName: "echo", input: {} }, checking.signal);
  checking.abort();
  assert.deepEqual(await Promise.race([decision, stillWaiting()]), { block: true, reason: ABORTED_BEFORE_CHECK }, "abort 之后 emitToolCall 应当立刻当作拦下");
  const rewriting = new AbortController();
  const rewrite = stuckRunner.emitToolResult(
    { type: "tool_result", toolCallId: "c1", toolName: "echo", input: {}, content: [text("x")], details: undefined, isError: false },
    rewriting.signal,
  );
  rewriting.abort();
  assert.equal(await Promise.race([rewrite, stillWaiting()]), undefined, "abort 之后 emitToolResult 应当立刻交回，不再等处理器");
});

test("12.4 生命周期处理器拿到的是快照：turn_end 里改它给的消息，下一次请求与会话都不变", { timeout: 2_000 }, async () => {
  const { session, model, store, errors } = await scene([reply(text("原来的回答")), reply(text("第二次"))], {
    factories: [
      (pi) => {
        pi.on("turn_end", (event) => {
          event.message.content[0] = text("被改写的回答");
        });
        pi.on("agent_end", (event) => {
          event.messages.length = 0;
        });
      },
    ],
  });
  await session.prompt("一");
  await session.prompt("二");
  const assistant = model.requests[1]!.messages.find((message) => message.role === "assistant");
  assert.equal(assistant?.role === "assistant" && assistant.content[0]?.type === "text" && assistant.content[0].text, "原来的回答");
  assert.ok(!store.text.some((line) => line.includes("被改写的回答")));
  // 快照归处理器自己：改它不会出错（transcript 里的消息是冻结的，直接交出去，改一下就抛 TypeError）。
  assert.deepEqual(errors, []);
});

test("12.4 同名或形状不对的工具登记只是一条带文件名的诊断：那一项不进工具集，别的工具与会话照常", { timeout: 2_000 }, async () => {
  const log: string[] = [];
  let later: ExtensionAPI | undefined;
  const { session, model, errors } = await scene([reply(call("c1", "echo", { say: "本地的" })), reply(text("好"))], {
    tools: [echoTool(log)],
    factories: [
      (pi) => {
        pi.registerTool({ ...echoTool([]), description: "想顶替本地的 echo" });
        pi.registerTool(null as never);
        pi.registerTool({ name: "", description: "没有名字" } as never);
        pi.registerTool({ name: "bare", description: "没有参数表", parameters: null, execute: () => ({ content: [] }) } as never);
        pi.registerTool({ ...echoTool([]), name: "mine" });
      },
      (pi) => {
        later = pi;
        pi.registerTool({ ...echoTool([]), name: "mine", description: "第二个 mine" });
      },
    ],
  });
  await session.prompt("用工具");
  assert.deepEqual(model.requests[0]!.tools?.map((tool) => tool.name), ["echo", "mine"]);
  assert.deepEqual(log, ["本地的"]);
  assert.deepEqual(errors.map((error) => [error.extensionPath, error.event]), [
    ["ext-1.ts", "register_tool"],
    ["ext-1.ts", "register_tool"],
    ["ext-1.ts", "register_tool"],
    ["ext-1.ts", "register_tool"],
    ["ext-2.ts", "register_tool"],
  ]);
  assert.match(errors[0]!.error, /echo.*已经有/);
  assert.match(errors[1]!.error, /形状不对：拿到的是 null/);
  assert.match(errors[2]!.error, /形状不对：name 必须是非空字符串/);
  assert.match(errors[3]!.error, /形状不对：bare 没有 parameters/);
  assert.match(errors[4]!.error, /mine.*已经有/);
  // 再换一次工具集（之后登记的工具会触发它）：被拿掉的登记已经删掉，同一项不再重复报告。
  later!.registerTool({ ...echoTool([]), name: "later" });
  await session.flush();
  assert.equal(errors.length, 5, JSON.stringify(errors.slice(5)));
});

/** 一个等几轮事件循环才完成的 echo：用来看同批的其余调用是不是被等完了。 */
function slowEcho(log: string[]): AgentTool<{ say: string }> {
  return defineTool({
    name: "slow",
    description: "等几轮事件循环再原样交回 say",
    parameters: s.object({ say: s.string("要说的话") }),
    async execute({ say }) {
      for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
      log.push(`slow:${say}`);
      return { content: [text(`slow:${say}`)] };
    },
  });
}

test("12.4 抛出的 beforeToolCall 算拦下：那个调用配一条英文的 isError 结果并报告，同批的其余调用跑完、各有结果，运行等它们收尾", { timeout: 2_000 }, async () => {
  const log: string[] = [];
  const hookErrors: string[] = [];
  const model = new ScriptedModel([reply(call("c1", "echo", { say: "boom" }), call("c2", "slow", { say: "hi" })), reply(text("好"))], { now: () => 2_000 });
  const beforeToolCall: BeforeToolCall = async ({ toolCall }) => {
    if (toolCall.id === "c1") throw new Error("守卫自己坏了");
    return undefined;
  };
  const agent = new Agent({
    model,
    tools: [echoTool(log), slowEcho(log)],
    beforeToolCall,
    onHookError: (error, hook, toolCall) => hookErrors.push(`${hook}:${toolCall.id}:${(error as Error).message}`),
  });
  agent.subscribe((event) => {
    if (event.type === "agent_end") log.push("agent_end");
  });
  await agent.prompt("动手");
  assert.equal(agent.state.error, undefined, "抛出的钩子不该让这次运行失败");
  assert.deepEqual(log, ["slow:hi", "agent_end"], "运行在工具还在跑时就结束了，或者被拦下的工具执行了");
  assert.equal(agent.state.stopReason, "stop");
  const results = (model.requests[1]?.messages ?? []).filter((message) => message.role === "toolResult");
  assert.deepEqual(results.map((message) => [message.toolCallId, message.isError]), [["c1", true], ["c2", false]]);
  assert.equal(resultText(results[0]), "Tool call blocked: the beforeToolCall hook failed (守卫自己坏了), so the tool was not run.");
  assert.deepEqual(hookErrors, ["beforeToolCall:c1:守卫自己坏了"]);
});

test("12.4 抛出的 afterToolCall 保留原来的结果并报告；钩子卡住时 abort()：每个调用仍有一条结果，运行以 aborted 结束", { timeout: 2_000 }, async () => {
  const hookErrors: string[] = [];
  const throwing = new ScriptedModel([reply(call("c1", "echo", { say: "hi" })), reply(text("好"))], { now: () => 2_000 });
  const afterToolCall: AfterToolCall = async () => {
    throw new Error("改写器坏了");
  };
  const agent = new Agent({ model: throwing, tools: [echoTool([])], afterToolCall, onHookError: (error, hook) => hookErrors.push(`${hook}:${(error as Error).message}`) });
  await agent.prompt("说 hi");
  assert.equal(agent.state.error, undefined, "抛出的钩子不该让这次运行失败");
  assert.equal(resultText(throwing.requests[1]?.messages.at(-1)), "echo:hi", "afterToolCall 抛出时应当保留原来的结果");
  assert.deepEqual(hookErrors, ["afterToolCall:改写器坏了"]);

  // 没给 onHookError：默认打印到 stderr（console.error），写明钩子与调用，并带上错误本身
  const printed: unknown[][] = [];
  const print = console.error;
  console.error = (...args: unknown[]) => void printed.push(args);
  try {
    await new Agent({ model: new ScriptedModel([reply(call("c9", "echo", { say: "hi" })), reply(text("好"))], { now: () => 2_000 }), tools: [echoTool([])], afterToolCall }).prompt("说 hi");
  } finally {
    console.error = print;
  }
  assert.equal(printed.length, 1);
  assert.match(String(printed[0]![0]), /afterToolCall[\s\S]*c9/);
  assert.ok(printed[0]!.some((arg) => arg instanceof Error && arg.message === "改写器坏了"));

  for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
    const model = new ScriptedModel([reply(call("c1", "echo", { say: "hi" })), reply(text("不会被问到"))], { now: () => 2_000 });
    let entered: () => void = () => {};
    const inHook = new Promise<void>((resolve) => (entered = resolve));
    const stuck = () => {
      entered();
      return new Promise<never>(() => {});
    };
    const stuckAgent = new Agent({ model, tools: [echoTool([])], ...(hook === "beforeToolCall" ? { beforeToolCall: stuck } : { afterToolCall: stuck }) });
    const running = stuckAgent.prompt("说 hi");
    await inHook;
    stuckAgent.abort();
    await running;
    assert.equal(stuckAgent.state.stopReason, "aborted", `${hook} 卡住时 abort() 应当以 aborted 结束`);
    const result = stuckAgent.state.messages.at(-1);
    const expected = hook === "beforeToolCall" ? "Tool call not run: the run was aborted before the beforeToolCall hook decided." : "echo:hi";
    assert.equal(resultText(result), expected);
    assert.equal(model.requests.length, 1);
  }
});

test("12.4 生命周期事件按发生顺序送达：session_start 在前，每个 turn 有开始和结束，agent_end 收尾", { timeout: 2_000 }, async () => {
  const log: string[] = [];
  const record: ExtensionFactory = (pi) => {
    pi.on("session_start", () => void log.push("session_start"));
    pi.on("agent_start", () => void log.push("agent_start"));
    pi.on("turn_start", (event) => void log.push(`turn_start ${event.step}`));
    pi.on("turn_end", (event) => void log.push(`turn_end ${event.toolResults.length}`));
    pi.on("agent_end", (event) => void log.push(`agent_end ${event.messages.length}`));
  };
  const { session } = await scene([reply(call("c1", "echo", { say: "x" })), reply(text("好"))], { tools: [echoTool([])], factories: [record] });
  await session.prompt("开始");
  assert.deepEqual(log, ["session_start", "agent_start", "turn_start 1", "turn_end 1", "turn_start 2", "turn_end 0", "agent_end 3"]);
});

test("12.4 生命周期处理器有时限：turn_end 与 agent_end 的处理器永不结束，prompt() 照样返回并报告，下一次 prompt 照常", { timeout: 2_000 }, async () => {
  const never = () => new Promise<void>(() => {});
  const { session, errors } = await scene([reply(text("一")), reply(text("二"))], {
    handlerTimeoutMs: 50,
    factories: [
      (pi) => {
        pi.on("turn_end", never);
        pi.on("agent_end", never);
      },
    ],
  });
  await session.prompt("第一句");
  assert.deepEqual(errors.map((error) => [error.extensionPath, error.event]), [["ext-1.ts", "turn_end"], ["ext-1.ts", "agent_end"]]);
  assert.match(errors[1]!.error, /^agent_end 的处理器 50 ms 内没有结束：不再等它/);
  await session.prompt("第二句");
  assert.equal(errors.length, 4, "第二次运行的两个事件也各报告一次");
  assert.equal(session.agent.state.status, "idle");
  assert.deepEqual(session.messages.map((message) => message.role), ["system", "user", "assistant", "user", "assistant"]);
});

// ── 12.5 context 与 context_with_system ────────────────────────

test("12.5 context 看不到 system：它交回的对话进这一次请求，system 头被放回最前面；会话里一条都没多、一条都没少", { timeout: 2_000 }, async () => {
  const seen: string[][] = [];
  const { session, model, store } = await scene([reply(text("一")), reply(text("二"))], {
    factories: [
      (pi) =>
        pi.on("context", (event) => {
          seen.push(event.messages.map((message) => message.role));
          // 只留最后一条，再注入一条提醒：这只是这一次请求的样子。
          const note = { role: "user" as const, content: [text("（提醒：只看最后一句）")], timestamp: 3 };
          return { messages: [note, ...event.messages.slice(-1)] };
        }),
    ],
  });
  await session.prompt("第一句");
  await session.prompt("第二句");
  assert.deepEqual(seen, [["user"], ["user", "assistant", "user"]]);
  const request = model.requests[1]!.messages;
  const head = request[0];
  assert.ok(head?.role === "system", "请求应当以 system 开头");
  assert.equal(systemMessageText(head), "你是一个编程助手。");
  assert.deepEqual(request.map((message) => message.role), ["system", "user", "user"]);
  assert.equal(lastUserText(model.requests[1]), "第二句");
  assert.deepEqual(session.messages.map((message) => message.role), ["system", "user", "assistant", "user", "assistant"]);
  assert.ok(!store.text.some((line) => line.includes("提醒")), "注入的消息不该写进会话");
  assert.equal(store.text.length, 5);
});

test("12.5 context 就地改 event.messages 也算数，改的是副本；没有改动时请求与 transcript 逐条相同（后来的 system 补丁也在原位）", { timeout: 2_000 }, async () => {
  let mode: "edit" | "nothing" = "edit";
  const v1 = noResources({ contextFiles: [{ path: "/p/AGENTS.md", content: "旧规则" }] });
  const { session, model } = await scene([reply(text("一")), reply(text("二"))], {
    resources: v1,
    factories: [
      (pi) =>
        pi.on("context", (event) => {
          if (mode === "nothing") return;
          const first = event.messages[0];
          if (first?.role === "user") first.content = [text("替换后的问题")];
          event.messages.push({ role: "user", content: [text("就地追加的一句")], timestamp: 4 });
        }),
    ],
  });
  await session.prompt("原来的问题");
  assert.deepEqual(model.requests[0]!.messages.map((message) => message.role), ["system", "user", "user"]);
  assert.equal(lastUserText(model.requests[0]), "就地追加的一句");
  const asked = model.requests[0]!.messages[1];
  assert.equal(asked?.role === "user" && asked.content[0]?.text, "替换后的问题");
  assert.equal(session.messages[1]?.role === "user" && session.messages[1].content[0]?.text, "原来的问题", "transcript 里的消息不能被处理器改到");
  mode = "nothing";
  await session.reloadResources(noResources({ contextFiles: [{ path: "/p/AGENTS.md", content: "新规则" }] }));
  await session.prompt("再问");
  assert.deepEqual(model.requests[1]!.messages, session.messages.slice(0, -1));
});

test("12.5 context_with_system 看到完整的 transcript，它的输出就是请求：加的段落只在这一次请求里，会话里没有", { timeout: 2_000 }, async () => {
  const { session, model, store, errors } = await scene([reply(text("好"))], {
    factories: [
      (pi) =>
        pi.on("context_with_system", (event) => {
          const head = currentSystemMessage(event.messages)!;
          const rest = event.messages.filter((message) => message.role !== "system");
          return { messages: [{ ...head, sections: { ...head.sections, clock: "现在是测试时间" } }, ...rest] };
        }),
    ],
  });
  await session.prompt("几点了");
  assert.match(systemMessageText(currentSystemMessage(model.requests[0]!.messages)!), /现在是测试时间/);
  assert.doesNotMatch(session.agent.systemPrompt ?? "", /测试时间/);
  assert.ok(!store.text.some((line) => line.includes("测试时间")));
  assert.deepEqual(errors, []);
});

test("12.5 context_with_system 拿掉开头的 system：报出上游的原句（带文件与事件），输出照样生效", { timeout: 2_000 }, async () => {
  const { session, model, errors } = await scene([reply(text("好"))], {
    factories: [(pi) => pi.on("context_with_system", (event) => ({ messages: event.messages.filter((message) => message.role !== "system") }))],
  });
  await session.prompt("你好");
  assert.deepEqual(model.requests[0]!.messages.map((message) => message.role), ["user"]);
  assert.deepEqual(errors, [{ extensionPath: "ext-1.ts", event: "context_with_system", error: REMOVED_LEADING_SYSTEM_MESSAGE }]);
  // 上游的原句，逐字：开头、中间、结尾各核对一段。
  assert.ok(REMOVED_LEADING_SYSTEM_MESSAGE.startsWith("Handler removed the leading system message; "));
  assert.ok(REMOVED_LEADING_SYSTEM_MESSAGE.includes(" the request has no prompt or initial tool declarations. "));
  assert.ok(REMOVED_LEADING_SYSTEM_MESSAGE.includes(" declarations. Keep it at index 0 or replace "));
  assert.ok(REMOVED_LEADING_SYSTEM_MESSAGE.endsWith(" a dropped prefix with getCurrentSystemMessage()."));
  assert.equal(session.messages[0]?.role, "system", "transcript 里的 system 还在");
});

// ── 12.6 加载器、命令与工具 ─────────────────────────────────────

test("12.6 .pi/extensions 里的 .ts 与 .js 按文件名顺序加载：带类型标注的 .ts 在每条 Node 线上都能加载", { timeout: 5_000 }, async () => {
  const root = await tempDir();
  const dir = path.join(root, ".pi/extensions");
  await writeFiles(dir, {
    // 写明 ESM：较早的 Node 20 不会自己认出 .js 里的 export 语法。
    "package.json": '{ "type": "module" }',
    "b-plain.js": "export default function (pi) { pi.on('turn_start', () => { globalThis.__order12.push('b'); }); }\n",
    "a-typed.ts": "interface Note { text: string }\nconst note: Note = { text: 'a' };\nexport default function (pi: { on(event: string, handler: () => void): void }): void {\n  pi.on('turn_start', () => { (globalThis as any).__order12.push(note.text); });\n}\n",
    "README.md": "不是扩展",
  });
  const loaded = await loadExtensions(dir);
  assert.deepEqual(loaded.errors, []);
  assert.deepEqual(loaded.extensions.map((extension) => path.basename(extension.path)), ["a-typed.ts", "b-plain.js"]);
  (globalThis as { __order12?: string[] }).__order12 = [];
  await new ExtensionRunner(loaded.extensions).emit({ type: "turn_start", step: 1 });
  assert.deepEqual((globalThis as { __order12?: string[] }).__order12, ["a", "b"]);
  // 改过的文件再加载：读到的是新内容，不是 import() 缓存里的旧模块
  const plain = path.join(dir, "b-plain.js");
  await writeFile(plain, "export default function (pi) { pi.on('turn_start', () => { globalThis.__order12.push('B'); }); }\n");
  const later = new Date(Date.now() + 5_000);
  await utimes(plain, later, later);
  const reloaded = await loadExtensions(dir);
  (globalThis as { __order12?: string[] }).__order12 = [];
  await new ExtensionRunner(reloaded.extensions.filter((extension) => extension.path === plain)).emit({ type: "turn_start", step: 1 });
  assert.deepEqual((globalThis as { __order12?: string[] }).__order12, ["B"]);
  assert.deepEqual(await loadExtensions(path.join(root, "没有这个目录")), { extensions: [], errors: [] });
});

test("12.6 坏扩展只是一条带文件名的 load 错误：导入失败、default 不是函数、工厂抛出、工厂一直不结束，别的扩展照样加载", { timeout: 10_000 }, async () => {
  const dir = await tempDir();
  await writeFiles(dir, {
    "package.json": '{ "type": "module" }',
    "1-syntax.js": "export default function (pi) {\n",
    "2-no-default.js": "export default { name: '不是函数' };\n",
    "3-throws.js": "export default function () { throw new Error('初始化失败'); }\n",
    "4-hangs.js": "export default function () { return new Promise(() => {}); }\n",
    "5-good.js": "export default function (pi) { pi.registerCommand('hi', { handler() {} }); }\n",
  });
  const loaded = await loadExtensions(dir, { timeoutMs: 400 });
  assert.deepEqual(loaded.extensions.map((extension) => path.basename(extension.path)), ["5-good.js"]);
  assert.deepEqual(loaded.errors.map((error) => [path.basename(error.extensionPath), error.event]), [
    ["1-syntax.js", "load"],
    ["2-no-default.js", "load"],
    ["3-throws.js", "load"],
    ["4-hangs.js", "load"],
  ]);
  assert.match(loaded.errors[1]!.error, /default/);
  assert.match(loaded.errors[2]!.error, /初始化失败/);
  assert.match(loaded.errors[3]!.error, /400 ms/);
});

test("12.6 模块的顶层代码一直不结束也算超时：导入与工厂共用一个时限，别的扩展照样加载", { timeout: 10_000 }, async () => {
  const dir = await tempDir();
  await writeFiles(dir, {
    "1-top-level-await.mjs": "await new Promise(() => {});\nexport default function () {}\n",
    "2-good.mjs": "export default function (pi) { pi.registerCommand('hi', { handler() {} }); }\n",
  });
  const loaded = await loadExtensions(dir, { timeoutMs: 400 });
  assert.deepEqual(loaded.extensions.map((extension) => path.basename(extension.path)), ["2-good.mjs"]);
  assert.deepEqual(loaded.errors.map((error) => [path.basename(error.extensionPath), error.event]), [["1-top-level-await.mjs", "load"]]);
  assert.match(loaded.errors[0]!.error, /400 ms/);
});

test("12.6 `/name`：扩展命令先处理（不问模型，抛出只报告），它不认识的再按提示模板展开；命令里的 sendMessage 与 appendEntry 就是会话自己的", { timeout: 2_000 }, async () => {
  const templates = [{ name: "review", description: "审查", content: "请审查 $1。", filePath: "/p/review.md" }];
  const { session, model, store, errors } = await scene([reply(text("审查完了"))], {
    resources: noResources({ promptTemplates: templates }),
    factories: [
      (pi) => {
        pi.registerCommand("note", {
          description: "记一笔",
          handler(args) {
            pi.appendEntry("note", { args });
            pi.sendMessage({ customType: "note", content: `备注：${args}`, display: true });
          },
        });
        pi.registerCommand("boom", {
          handler() {
            throw new Error("命令坏了");
          },
        });
      },
    ],
  });
  await session.prompt("/boom");
  assert.deepEqual(errors, [{ extensionPath: "ext-1.ts", event: "command", error: "/boom：命令坏了" }]);
  // 参数文字去掉两端空白：命令拿到的就是用户写的那几个字
  await session.prompt("/note   先看测试  ");
  assert.equal(model.requests.length, 0);
  // 只有 /name、没有参数：处理器拿到的参数是空串，不是命令本身。
  await session.prompt("/note");
  assert.deepEqual(store.text.map((line) => JSON.parse(line) as { type: string; data?: unknown }).filter((entry) => entry.type === "custom").map((entry) => entry.data), [{ args: "先看测试" }, { args: "" }]);
  const kinds = store.text.map((line) => (JSON.parse(line) as { type: string }).type);
  assert.deepEqual(kinds, ["message", "custom", "custom_message", "custom", "custom_message"]);
  await session.prompt("/review src/a.ts");
  assert.equal(lastUserText(model.requests[0]), "请审查 src/a.ts。");
  assert.ok(model.requests[0]!.messages.some((message) => message.role === "user" && message.content[0]?.text === "备注：先看测试"));
});

test("12.6 factoryOf 解开 CommonJS 的那一层 default；default 是别的对象就说出拿到的是什么", () => {
  const factory = () => {};
  assert.equal(factoryOf({ default: factory }, "/p/esm.js"), factory);
  assert.equal(factoryOf({ default: { default: factory } }, "/p/cjs.js"), factory, "CommonJS 模块的函数在 default 的 default 上");
  assert.throws(() => factoryOf({ default: {} }, "/p/x.js"), { message: /x\.js 的 default 导出不是函数（拿到的是 object）/ });
  assert.throws(() => factoryOf({ default: null }, "/p/y.js"), { message: /y\.js 的 default 导出不是函数（拿到的是 object）/ });
});

test("12.6 registerTool 登记的工具进工具集：加载时登记的和之后登记的，模型都能调用", { timeout: 2_000 }, async () => {
  const log: string[] = [];
  const { session, model } = await scene([reply(call("c1", "echo", { say: "a" }), call("c2", "late", { say: "b" })), reply(text("好"))], {
    factories: [
      (pi) => {
        pi.registerTool(echoTool(log));
        pi.on("session_start", () => pi.registerTool({ ...echoTool(log), name: "late" }));
      },
    ],
  });
  await session.flush();
  await session.prompt("用工具");
  assert.deepEqual(model.requests[0]!.tools?.map((tool) => tool.name), ["echo", "late"]);
  assert.deepEqual(log, ["a", "b"]);
});

// ── 12.7 批准闸门 ───────────────────────────────────────────────

/** 一个工作区（里面有一个 victim 目录和一份 README），工作区旁边还有一个 outside 目录。 */
async function guardedWorkspace() {
  const root = await tempDir();
  const cwd = path.join(root, "ws");
  await writeFiles(root, { "ws/README.md": "# 星图\n", "ws/victim/keep.txt": "别删我\n", "outside/keep.txt": "也别删我\n" });
  return { root, cwd, tools: codingTools(await Workspace.open(cwd)) };
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

test("12.7 允许规则只认 bash、write、edit（可带命令前缀或路径）；前缀只放行同一条简单命令，接上 ; && | 的不算", () => {
  assert.equal(parseAllowRule("bash"), "bash");
  assert.equal(parseAllowRule(" bash : npm test "), "bash:npm test");
  assert.equal(parseAllowRule("write:src/a.ts"), "write:src/a.ts");
  assert.throws(() => parseAllowRule("read"), /允许规则 "read" 看不懂/);
  assert.throws(() => parseAllowRule("bash:"), /看不懂/);
  const cwd = "/project";
  const bash = (command: string) => ({ command });
  assert.ok(ruleAllows("bash", "bash", bash("rm -rf victim"), cwd));
  assert.ok(ruleAllows("bash:npm test", "bash", bash("npm test"), cwd));
  assert.ok(ruleAllows("bash:npm test", "bash", bash("npm test -- --watch"), cwd));
  assert.ok(!ruleAllows("bash:npm test", "bash", bash("npm testing"), cwd));
  assert.ok(!ruleAllows("bash:npm test", "bash", bash("npm test && rm -rf ~"), cwd));
  assert.ok(!ruleAllows("bash:npm test", "bash", bash("npm test; rm -rf ~"), cwd));
  assert.ok(!ruleAllows("bash:npm test", "bash", bash("npm test | sh"), cwd));
  assert.ok(ruleAllows("write:src/a.ts", "write", { path: "./src/a.ts", content: "" }, cwd));
  assert.ok(!ruleAllows("write:src/a.ts", "write", { path: "src/b.ts", content: "" }, cwd));
  assert.ok(!ruleAllows("write", "edit", { path: "src/a.ts", edits: [] }, cwd));
});

test("12.7 不能问时 bash、write、edit 一律不执行：配对的 isError 结果用英文说明没人批准，read 照常，运行照常答完", { timeout: 5_000 }, async () => {
  const { cwd, tools } = await guardedWorkspace();
  const notes: string[] = [];
  const { session, model } = await scene(
    [
      reply(
        call("c1", "bash", { command: "rm -rf victim" }),
        call("c2", "write", { path: "new.txt", content: "x" }),
        call("c3", "edit", { path: "README.md", edits: [{ oldText: "星图", newText: "月图" }] }),
        call("c4", "read", { path: "README.md" }),
      ),
      reply(text("好")),
    ],
    { tools, factories: [approvalGate({ cwd, notify: (line) => notes.push(line) })] },
  );
  await session.prompt("动手");
  assert.ok(await exists(path.join(cwd, "victim", "keep.txt")), "没人批准的 rm -rf 不该执行");
  assert.ok(!(await exists(path.join(cwd, "new.txt"))), "没人批准的 write 不该执行");
  assert.equal(await readFile(path.join(cwd, "README.md"), "utf8"), "# 星图\n");
  const results = model.requests[1]!.messages.filter((message) => message.role === "toolResult");
  assert.deepEqual(results.map((message) => [message.toolCallId, message.isError]), [["c1", true], ["c2", true], ["c3", true], ["c4", false]]);
  assert.equal(resultText(results[0]), approvalUnavailable("bash"));
  assert.equal(resultText(results[1]), approvalUnavailable("write"));
  assert.equal(session.messages.at(-1)?.role, "assistant");
  assert.match(notes[0] ?? "", /--allow bash 或 --allow "bash:rm -rf victim"/);
});

test("12.7 问人：n 拦下（模型读到用户拒绝），y 只放行这一次，a 记下规则、同一条命令以后不再问；提到工作区外的路径多一行警告", { timeout: 5_000 }, async () => {
  const { root, cwd, tools } = await guardedWorkspace();
  const asked: ApprovalRequest[] = [];
  const answers: ApprovalAnswer[] = ["no", "yes", "always"];
  const store = PermissionStore.inMemory();
  const ask = async (request: ApprovalRequest) => {
    asked.push(request);
    return answers.shift() ?? "no";
  };
  const { session, model } = await scene(
    [
      reply(call("c1", "bash", { command: "rm -rf ../outside && echo gone" })),
      reply(call("c2", "bash", { command: "touch once.txt" })),
      reply(call("c3", "bash", { command: "touch always.txt" })),
      reply(call("c4", "bash", { command: "touch always.txt" }), call("c5", "bash", { command: "touch once.txt" })),
      reply(text("好")),
    ],
    { tools, factories: [approvalGate({ cwd, ask, store })] },
  );
  await session.prompt("动手");
  assert.ok(await exists(path.join(root, "outside", "keep.txt")), "说了 n 的命令不该执行");
  assert.match(asked[0]?.warning ?? "", /工作区之外的路径（\.\.\/outside）/);
  assert.equal(asked[1]?.warning, undefined);
  assert.equal(asked[0]?.summary, "bash：rm -rf ../outside && echo gone");
  const first = model.requests[1]!.messages.at(-1);
  assert.equal(resultText(first), userDeclined("bash"));
  assert.ok(await exists(path.join(cwd, "once.txt")));
  assert.ok(await exists(path.join(cwd, "always.txt")));
  assert.deepEqual(store.rules(), ["bash:touch always.txt"]);
  // c4 被记下的规则放行，不再问；c5 只批准过一次，要再问（答案用完了，就是 no）。
  assert.deepEqual(asked.map((request) => request.rule), ["bash:rm -rf ../outside && echo gone", "bash:touch once.txt", "bash:touch always.txt", "bash:touch once.txt"]);
  const last = model.requests[4]!.messages.filter((message) => message.role === "toolResult").slice(-2);
  assert.deepEqual(last.map((message) => message.isError), [false, true]);
});

test("12.7 “以后都可以”存在给定的文件里：重新打开还在，/permissions 列出并清掉；坏掉的文件报错，不被覆盖", { timeout: 5_000 }, async () => {
  const root = await tempDir();
  const file = path.join(root, "agent", "permissions", "project.json");
  const store = await PermissionStore.open(file);
  await store.add("bash:npm test");
  await store.add("bash:npm test");
  assert.deepEqual((await PermissionStore.open(file)).rules(), ["bash:npm test"]);
  const notes: string[] = [];
  const { session } = await scene([], { factories: [approvalGate({ cwd: root, store: await PermissionStore.open(file), notify: (line) => notes.push(line) })] });
  await session.prompt("/permissions");
  assert.match(notes.join("\n"), /bash:npm test/);
  await session.prompt("/permissions clear");
  assert.deepEqual((await PermissionStore.open(file)).rules(), []);
  await writeFile(file, "{ 坏了");
  await assert.rejects(PermissionStore.open(file), /权限文件 .* 不是合法的 JSON/);
  assert.equal(await readFile(file, "utf8"), "{ 坏了");
});

test("12.7 工作区之外的路径才提醒：工作区里的绝对路径与 /dev/null 不算，工作区的上一层和别处的绝对路径都算", () => {
  const cwd = "/srv/work/app";
  assert.equal(outsideWorkspaceWarning("cat /srv/work/app/src/a.ts > /dev/null", cwd), undefined);
  const parent = outsideWorkspaceWarning("ls /srv/work", cwd);
  assert.ok(parent?.includes("/srv/work"), String(parent));
  const elsewhere = outsideWorkspaceWarning("cat /etc/hosts", cwd);
  assert.ok(elsewhere?.includes("/etc/hosts"), String(elsewhere));
  // ~ 开头的一律算：自己的家目录也好，~root 这样别人的家目录也好，都不按工作区算
  const home = outsideWorkspaceWarning("cat ~/notes.txt ~root/.ssh/id_rsa", cwd);
  assert.ok(home?.includes("~/notes.txt") && home.includes("~root/.ssh/id_rsa"), String(home));
});
