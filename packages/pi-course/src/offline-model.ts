/**
 * 离线模型：没有设置 PI_COURSE_BASE_URL 时 tiny-pi 用的那个模型。
 *
 * 它不是智能，只是一个诚实的替身：规则写在下面，一眼就能看完。
 *   提示里点名了一个文件（默认 README）→ 先请求一次 read；
 *   read 的结果回来了 → 用结果里的第一个一级标题回答“项目名是什么”；
 *   别的问题 → 直说自己只会这一件事，以及怎样接上真实模型。
 * 第 15 章多了一条：提示要它“列出”一个目录 → 请求里没有 ls 就先调用 tool_search 找它，
 *   有了 ls 就调用它，结果回来了就照着说出目录里有什么。
 * 第 16 章多了一条：提示要它“用脚本”做事 → 请求里有 codemode 就交一段调用 read 与 ls 两个工具的脚本，
 *   结果回来了就照着说出脚本交回的 JSON。
 * 第 17 章多了一条：提示要它“用 MCP 读”一个文件 → 请求里没有 MCP 服务器的 read_text_file 就先调用 tool_search 找它，
 *   有了就调用它，结果回来了就说出文件的第一行。
 * 它的用处是让整条链路（参数 → 运行时 → Agent → 工具 → 会话文件 → 输出）不联网也能跑通，
 * 而且每次运行的事件都一样：决定由纯函数做出，播放交给第 04 章的 ScriptedModel。
 */

import { ScriptedModel, type ScriptedTurn } from "./scripted-model.js";
import { textOf, type AgentContext, type Message, type Model, type ModelStream, type StreamOptions, type ToolDefinition } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 离线模型这一步要做的事：读一个文件，或者说一段话；第 15 章起还能调用别的工具（先说一句 say）。 */
export type OfflineDecision =
  | { kind: "read"; path: string }
  | { kind: "answer"; text: string }
  | { kind: "call"; name: string; arguments: Record<string, unknown>; say: string };

export interface OfflineModelOptions {
  now?: () => number;
}

export const OFFLINE_MODEL_ID = "offline-v1";

/** 它会做的唯一一件事，和换成真实模型的办法：回答别的问题时原样说出来。 */
export const OFFLINE_HELP =
  "我是 tiny-pi 的离线模型：不联网，也不会思考，只会按提示读取一个文件（默认 README.md），再说出它的第一个一级标题。" +
  "要接真实模型，请设置 PI_COURSE_BASE_URL 和 PI_COURSE_MODEL（需要时再加 PI_COURSE_API_KEY）。";

// ── 纯函数 ──────────────────────────────────────────────────────

/** 提示里点名的文件：带扩展名的路径优先；只提到 README 就是 README.md；都没有就是 undefined。 */
export function requestedFile(prompt: string): string | undefined {
  // #region lab 13.1
  // \w 不带 u 标志时只认 ASCII：“README，然后” 不会被当成一个文件名。
  const named = /[\w./-]+\.[A-Za-z0-9]+/.exec(prompt);
  if (named !== null) return named[0];
  return /readme/i.test(prompt) ? "README.md" : undefined;
  // #endregion
}

/** 文件内容里的项目名：第一行以 `# ` 开头的标题，去掉井号与两端空白。 */
export function projectNameOf(content: string): string | undefined {
  // #region lab 13.1
  for (const line of content.split("\n")) {
    const match = /^#\s+(.+)$/.exec(line.trim());
    if (match?.[1] !== undefined) return match[1].trim();
  }
  return undefined;
  // #endregion
}

/** 没有标题时拿来说明的那一行：第一个非空行，太长就截断。 */
export function openingLine(content: string): string {
  const line = content.split("\n").find((candidate) => candidate.trim() !== "")?.trim() ?? "";
  return line.length > 60 ? `${line.slice(0, 60)}…` : line;
}

/**
 * 看最后一条 user 消息之后发生了什么，决定这一步。只读消息，不碰文件：
 * 同样的请求永远得到同样的决定。
 */
export function decideOffline(messages: readonly Message[], tools: readonly ToolDefinition[]): OfflineDecision {
  // #region lab 13.1
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const user = messages[lastUser];
  if (user === undefined) return { kind: "answer", text: OFFLINE_HELP };
  const file = requestedFile(textOf(user));
  const result = messages.slice(lastUser + 1).findLast((message) => message.role === "toolResult" && message.toolName === "read");
  if (result !== undefined && result.role === "toolResult") {
    if (result.isError) return { kind: "answer", text: `读取 ${file ?? "文件"} 失败：${textOf(result)}` };
    const name = projectNameOf(textOf(result));
    if (name === undefined) return { kind: "answer", text: untitledAnswer(file ?? "这个文件", textOf(result)) };
    return { kind: "answer", text: `项目名是「${name}」（取自 ${file ?? "文件"} 的第一个一级标题）。` };
  }
  if (file === undefined) return { kind: "answer", text: OFFLINE_HELP };
  if (!tools.some((tool) => tool.name === "read")) return { kind: "answer", text: `这次请求里没有 read 工具，我读不了 ${file}。` };
  return { kind: "read", path: file };
  // #endregion
}

/** 读到了、却没有标题：说清读了什么、自己只会什么，再把开头一行给人看，而不是只说一句“说不出”。 */
function untitledAnswer(file: string, content: string): string {
  const opening = openingLine(content);
  const shown = opening === "" ? "文件是空的" : `它的第一行是：「${opening}」`;
  return `我读了 ${file}，里面没有以 "# " 开头的标题，所以说不出项目名；${shown}。我是离线模型，只会说出文件的第一个一级标题，要问别的请接上真实模型（PI_COURSE_BASE_URL）。`;
}

// ── 第 15 章：先找到 ls，再列目录 ──────────────────────────────

/** 离线模型找 ls 时用的那句查询：它只能靠 tool_search 的检索，而不是记住工具名。 */
export const LISTING_QUERY = "list the entries of a directory";

/** 提示要列出的目录：“列出 src”“列出 docs/guide 目录”；只说“列出”就是工作区根目录；没说“列出”就是 undefined。 */
export function requestedDirectory(prompt: string): string | undefined {
  const match = /列出\s*([\w./-]+)?/.exec(prompt);
  if (match === null) return undefined;
  return match[1] ?? ".";
}

/**
 * 列目录的三步：请求里没有 ls → 调用 tool_search；有了 ls → 调用它；ls 的结果回来了 → 照着回答。
 * 不是列目录的提示交回 undefined，留给 decideOffline。
 */
export function decideListing(messages: readonly Message[], tools: readonly ToolDefinition[]): OfflineDecision | undefined {
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const user = messages[lastUser];
  if (user === undefined) return undefined;
  const directory = requestedDirectory(textOf(user));
  if (directory === undefined) return undefined;
  const since = messages.slice(lastUser + 1);
  const listed = since.findLast((message) => message.role === "toolResult" && message.toolName === "ls");
  if (listed !== undefined && listed.role === "toolResult") {
    if (listed.isError) return { kind: "answer", text: `列不了 ${directory}：${textOf(listed)}` };
    const entries = textOf(listed).split("\n").filter((line) => line !== "");
    return { kind: "answer", text: `${directory} 里有：${entries.join("、")}。` };
  }
  const has = (name: string) => tools.some((tool) => tool.name === name);
  if (has("ls")) return { kind: "call", name: "ls", arguments: { path: directory }, say: `列一下 ${directory}。` };
  const searched = since.some((message) => message.role === "toolResult" && message.toolName === "tool_search");
  if (has("tool_search") && !searched) {
    return { kind: "call", name: "tool_search", arguments: { query: LISTING_QUERY }, say: "我手上没有列目录的工具，先找一个。" };
  }
  return { kind: "answer", text: `这次请求里没有 ls 工具，我列不了 ${directory}。` };
}

// ── 第 16 章：写一段脚本，一次调用两个工具 ────────────────────

/** 离线模型交给 codemode 的脚本：读 README.md、列出工作区根目录，交回标题与目录项。 */
export const SUMMARY_SCRIPT = [
  'const readme = await tools.read({ path: "README.md" });',
  'const entries = await tools.ls({ path: "." });',
  'const title = readme.split("\\n").find((line) => line.startsWith("# "));',
  'return { title: title === undefined ? null : title.slice(2).trim(), entries: entries.split("\\n").filter((line) => line !== "") };',
].join("\n");

/**
 * 用脚本的两步：请求里有 codemode → 交 SUMMARY_SCRIPT；codemode 的结果回来了 → 照着回答。
 * 提示里没有“用脚本”交回 undefined，留给后面的规则。
 */
export function decideScript(messages: readonly Message[], tools: readonly ToolDefinition[]): OfflineDecision | undefined {
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const user = messages[lastUser];
  if (user === undefined || !/用脚本/.test(textOf(user))) return undefined;
  const ran = messages.slice(lastUser + 1).findLast((message) => message.role === "toolResult" && message.toolName === "codemode");
  if (ran !== undefined && ran.role === "toolResult") {
    const body = textOf(ran);
    return { kind: "answer", text: ran.isError ? `脚本没有跑通：${body}` : `脚本交回：${body.replace(/^Result: /, "")}` };
  }
  if (!tools.some((tool) => tool.name === "codemode")) return { kind: "answer", text: "这次请求里没有 codemode 工具，我写不了脚本。" };
  return { kind: "call", name: "codemode", arguments: { code: SUMMARY_SCRIPT }, say: "写一段脚本，一次读 README 再列目录。" };
}

// ── 第 17 章：用 MCP 服务器的工具读一个文件 ──────────────────

/** 离线模型找 MCP 读文件工具时用的那句查询。 */
export const MCP_READ_QUERY = "read the complete contents of a text file";

/** 请求里某个 MCP 服务器的 read_text_file（名字是 mcp__<服务器>__read_text_file）。 */
function mcpReader(tools: readonly ToolDefinition[]): string | undefined {
  return tools.find((tool) => /^mcp__[A-Za-z0-9_-]+__read_text_file$/.test(tool.name))?.name;
}

/**
 * 用 MCP 读文件的三步：请求里没有 read_text_file → 调用 tool_search；有了 → 调用它；结果回来了 → 说出第一行。
 * 提示里没有“用 MCP 读”交回 undefined，留给后面的规则。
 */
export function decideMcp(messages: readonly Message[], tools: readonly ToolDefinition[]): OfflineDecision | undefined {
  const lastUser = messages.findLastIndex((message) => message.role === "user");
  const user = messages[lastUser];
  const match = user === undefined ? null : /用 ?MCP 读\s*([\w./-]+)/.exec(textOf(user));
  if (match === null) return undefined;
  const file = match[1]!;
  const since = messages.slice(lastUser + 1);
  const read = since.findLast((message) => message.role === "toolResult" && message.toolName.startsWith("mcp__"));
  if (read !== undefined && read.role === "toolResult") {
    if (read.isError) return { kind: "answer", text: `MCP 服务器没能读 ${file}：${textOf(read)}` };
    return { kind: "answer", text: `MCP 服务器交回的第一行：${textOf(read).split("\n")[0] ?? ""}` };
  }
  const reader = mcpReader(tools);
  if (reader !== undefined) return { kind: "call", name: reader, arguments: { path: file }, say: `用 ${reader} 读 ${file}。` };
  const searched = since.some((message) => message.role === "toolResult" && message.toolName === "tool_search");
  if (tools.some((tool) => tool.name === "tool_search") && !searched) {
    return { kind: "call", name: "tool_search", arguments: { query: MCP_READ_QUERY }, say: "先找一个 MCP 服务器读文件的工具。" };
  }
  return { kind: "answer", text: "这次请求里没有 MCP 服务器的 read_text_file，我读不了。" };
}

/** 决定 → 一个脚本 turn。调用 id 由请求里的消息数决定，重跑一次得到的 id 相同。 */
export function offlineTurn(decision: OfflineDecision, messageCount: number): ScriptedTurn {
  if (decision.kind === "answer") return { kind: "reply", content: [{ type: "text", text: decision.text }], stopReason: "stop" };
  if (decision.kind === "call") {
    const call = { type: "toolCall" as const, id: `offline-${decision.name}-${messageCount}`, name: decision.name, arguments: decision.arguments };
    return { kind: "reply", content: [{ type: "text", text: decision.say }, call], stopReason: "toolUse" };
  }
  const call = { type: "toolCall" as const, id: `offline-read-${messageCount}`, name: "read", arguments: { path: decision.path } };
  return { kind: "reply", content: [{ type: "text", text: `先读一下 ${decision.path}。` }, call], stopReason: "toolUse" };
}

// ── 模型 ────────────────────────────────────────────────────────

export class OfflineModel implements Model {
  readonly provider = "offline";
  readonly id = OFFLINE_MODEL_ID;
  private readonly now: () => number;

  constructor(options: OfflineModelOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** 每次调用现做一个只有一个 turn 的脚本：事件、取消与终态都和第 04 章的脚本模型一样。 */
  stream(context: AgentContext, options: StreamOptions = {}): ModelStream {
    const tools = context.tools ?? [];
    const decision = decideMcp(context.messages, tools) ?? decideScript(context.messages, tools) ?? decideListing(context.messages, tools) ?? decideOffline(context.messages, tools);
    const turn = offlineTurn(decision, context.messages.length);
    return new ScriptedModel([turn], { id: this.id, now: this.now }).stream(context, options);
  }
}
