/**
 * 检查：每个构造函数交回一项 EvalCheck，它只读证据、不改任何东西。
 * 工作区检查读磁盘；会话检查读从文件读回的条目；请求检查读模型真正收到的消息——
 * 所以“Agent 以为自己做了”骗不过它们。
 */

import { readFile } from "node:fs/promises";
import path from "node:path";

import type { SessionEntry } from "../session-entries.js";
import { currentTools, systemMessageText, textOf, type AgentContext, type AgentMessage, type Message } from "../types.js";
import type { CheckOutcome, EvalCheck, EvalContext } from "./types.js";

// ── 纯帮手 ──────────────────────────────────────────────────────

export function pass(reason: string): CheckOutcome {
  return { ok: true, reason };
}

export function fail(reason: string): CheckOutcome {
  return { ok: false, reason };
}

/** 模型从一条消息里读得到的文字：工具调用的名字和参数也算，它们同样会泄露内容。 */
export function visibleText(message: Message): string {
  if (message.role === "system") return systemMessageText(message);
  if (message.role !== "assistant") return textOf(message);
  const calls = message.content.flatMap((block) => (block.type === "toolCall" ? [`${block.name} ${JSON.stringify(block.arguments)}`] : []));
  return [textOf(message), ...calls].join("\n");
}

/** 会话条目里的消息（message 条目），按写下的顺序；别的条目种类不是对话。 */
export function sessionMessages(entries: readonly SessionEntry[]): AgentMessage[] {
  return entries.flatMap((entry) => (entry.type === "message" ? [entry.message] : []));
}

/** 第 n 次请求（从 1 数；负数从末尾数，-1 是最后一次）。 */
export function requestAt(requests: readonly AgentContext[], n: number): AgentContext | undefined {
  return n > 0 ? requests[n - 1] : requests[requests.length + n];
}

function quote(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ");
  return `“${flat.length > max ? `${flat.slice(0, max)}…` : flat}”`;
}

async function readWorkspaceFile(context: EvalContext, file: string): Promise<string | undefined> {
  try {
    return await readFile(path.join(context.workspace, file), "utf8");
  } catch {
    return undefined;
  }
}

// ── 工作区 ──────────────────────────────────────────────────────

/** 跑完之后这个文件的内容恰好是 expected。 */
export function fileEquals(file: string, expected: string): EvalCheck {
  return {
    name: `${file} 的内容正确`,
    scope: "workspace",
    async run(context) {
      // #region lab 14.1
      const actual = await readWorkspaceFile(context, file);
      if (actual === undefined) return fail(`工作区里没有 ${file}`);
      if (actual !== expected) return fail(`${file} 的内容是 ${quote(actual)}，应当是 ${quote(expected)}`);
      return pass(`${file} 与期望一致`);
      // #endregion
    },
  };
}

/** 跑完之后这个文件存在，并含有 fragment。 */
export function fileIncludes(file: string, fragment: string): EvalCheck {
  return {
    name: `${file} 里有 ${quote(fragment, 30)}`,
    scope: "workspace",
    async run(context) {
      // #region lab 14.1
      const actual = await readWorkspaceFile(context, file);
      if (actual === undefined) return fail(`工作区里没有 ${file}`);
      if (!actual.includes(fragment)) return fail(`${file} 里没有 ${quote(fragment)}：实际是 ${quote(actual)}`);
      return pass(`${file} 含有这段文字`);
      // #endregion
    },
  };
}

// ── 会话 ────────────────────────────────────────────────────────

/**
 * 每个工具调用都配上了结果：一条 assistant 消息请求的调用，在下一条 assistant 之前各有恰好一条同 id 的结果，
 * 次序与调用相同；没有哪条结果回答的是不存在的调用。
 */
export function toolCallsPaired(): EvalCheck {
  return {
    name: "每个工具调用都配上了一条结果",
    scope: "run",
    run(context) {
      // #region lab 14.1
      const messages = sessionMessages(context.entries);
      let pending: string[] = [];
      let answered: string[] = [];
      const settle = (): string | undefined => {
        const expected = pending.join(", ");
        const actual = answered.join(", ");
        return expected === actual ? undefined : `调用 [${expected}] 之后的结果是 [${actual}]`;
      };
      for (const message of messages) {
        if (message.role === "assistant") {
          const problem = settle();
          if (problem !== undefined) return fail(problem);
          pending = message.content.flatMap((block) => (block.type === "toolCall" ? [block.id] : []));
          answered = [];
        } else if (message.role === "toolResult") {
          answered.push(message.toolCallId);
        }
      }
      const problem = settle();
      return problem === undefined ? pass("调用与结果一一配对、次序相同") : fail(problem);
      // #endregion
    },
  };
}

/** 会话里 isError 的工具结果恰好 count 条：失败的工具照样是一条结果，不该多也不该少。 */
export function toolErrors(count: number): EvalCheck {
  return {
    name: `会话里有 ${count} 条出错的工具结果`,
    scope: "run",
    run(context) {
      // #region lab 14.1
      const errors = sessionMessages(context.entries).filter((message) => message.role === "toolResult" && message.isError);
      if (errors.length !== count) return fail(`出错的工具结果有 ${errors.length} 条，应当是 ${count} 条`);
      return pass(`出错的工具结果恰好 ${count} 条`);
      // #endregion
    },
  };
}

/** 会话文件里某种条目（type）或某种消息（role）恰好 count 个。 */
export function sessionCount(kind: string, count: number): EvalCheck {
  return {
    name: `会话里有 ${count} 个 ${kind}`,
    scope: "run",
    run(context) {
      // #region lab 14.1
      const found = context.entries.filter((entry) => entry.type === kind || (entry.type === "message" && entry.message.role === kind));
      if (found.length !== count) return fail(`会话文件里的 ${kind} 有 ${found.length} 个，应当是 ${count} 个`);
      return pass(`会话文件里的 ${kind} 恰好 ${count} 个`);
      // #endregion
    },
  };
}

// ── 请求 ────────────────────────────────────────────────────────

/**
 * 从第 from 次请求起（默认第 1 次），没有任何一次请求里的任何消息含有 fragment：
 * 例如 `!!` 命令的输出从未发出；回到分支点之后，被离开的那支不再出现。
 */
export function neverSent(fragment: string, from = 1): EvalCheck {
  return {
    name: from === 1 ? `${quote(fragment, 30)} 从未发给模型` : `第 ${from} 次请求起不再有 ${quote(fragment, 30)}`,
    scope: "run",
    run(context) {
      // #region lab 14.1
      for (const [index, request] of context.requests.entries()) {
        if (index + 1 < from) continue;
        const leaked = request.messages.find((message) => visibleText(message).includes(fragment));
        if (leaked !== undefined) return fail(`第 ${index + 1} 次请求的一条 ${leaked.role} 消息里出现了 ${quote(fragment)}`);
      }
      return pass(`${context.requests.length} 次请求里都没有它`);
      // #endregion
    },
  };
}

/** 第 n 次请求（负数从末尾数）里有一条含 fragment 的 user 消息：例如压缩摘要以 user 身份到达。 */
export function sentAsUser(n: number, fragment: string): EvalCheck {
  return {
    name: `第 ${n} 次请求里有一条 user 消息含 ${quote(fragment, 30)}`,
    scope: "run",
    run(context) {
      // #region lab 14.1
      const request = requestAt(context.requests, n);
      if (request === undefined) return fail(`模型只收到 ${context.requests.length} 次请求，没有第 ${n} 次`);
      const holder = request.messages.find((message) => visibleText(message).includes(fragment));
      if (holder === undefined) return fail(`第 ${n} 次请求里没有 ${quote(fragment)}`);
      if (holder.role !== "user") return fail(`${quote(fragment)} 在第 ${n} 次请求里是 ${holder.role} 消息，应当是 user`);
      return pass(`${quote(fragment, 30)} 以 user 身份到达`);
      // #endregion
    },
  };
}

/** 第 15 章：工具 name 从第 n 次请求起才声明给模型，之前的请求里没有它（deferred 工具被 tool_search 加载）。 */
export function declaredFrom(n: number, name: string): EvalCheck {
  return {
    name: `${name} 从第 ${n} 次请求起才声明`,
    scope: "run",
    run(context) {
      const declares = (request: AgentContext) => currentTools(request.messages).some((tool) => tool.name === name);
      const first = context.requests.findIndex(declares);
      if (first === -1) return fail(`${context.requests.length} 次请求都没有声明 ${name}`);
      if (first + 1 !== n) return fail(`${name} 在第 ${first + 1} 次请求里第一次声明，应当是第 ${n} 次`);
      return pass(`第 ${n} 次请求起声明了 ${name}`);
    },
  };
}

/** 第 16 章：会话里 codemode 的结果恰好一条、没有出错，它的脚本依次调用了 names 这几个工具，每个都成功了。 */
export function scriptCalled(...names: string[]): EvalCheck {
  return {
    name: `codemode 的脚本依次调用了 ${names.join("、")}`,
    scope: "run",
    run(context) {
      const runs = sessionMessages(context.entries).flatMap((message) => (message.role === "toolResult" && message.toolName === "codemode" ? [message] : []));
      const [result] = runs;
      if (result === undefined || runs.length !== 1) return fail(`会话里 codemode 的结果有 ${runs.length} 条，应当是 1 条`);
      if (result.isError) return fail(`codemode 出错了：${quote(textOf(result))}`);
      const calls = ((result.details as { calls?: { name: string; isError?: boolean }[] } | undefined)?.calls ?? []);
      const called = calls.map((call) => call.name);
      if (called.join() !== names.join()) return fail(`脚本调用的是 ${called.join("、") || "（无）"}，应当是 ${names.join("、")}`);
      if (calls.some((call) => call.isError !== false)) return fail("脚本里有工具调用出错或没有回来");
      return pass(`脚本调用了 ${names.join("、")}，都成功了`);
    },
  };
}

/** 第 17 章：会话里有 tool 的结果，来自 MCP 服务器（details.kind 是 mcp）、没有出错，文字里有 fragment。 */
export function mcpResult(tool: string, fragment: string): EvalCheck {
  return {
    name: `MCP 工具 ${tool} 交回了 ${quote(fragment, 30)}`,
    scope: "run",
    run(context) {
      const result = sessionMessages(context.entries).find((message) => message.role === "toolResult" && message.toolName === tool);
      if (result === undefined || result.role !== "toolResult") return fail(`会话里没有 ${tool} 的结果`);
      if ((result.details as { kind?: string } | undefined)?.kind !== "mcp") return fail(`${tool} 的结果不是 MCP 服务器交回的`);
      if (result.isError) return fail(`${tool} 出错了：${quote(textOf(result))}`);
      if (!textOf(result).includes(fragment)) return fail(`${tool} 交回的是 ${quote(textOf(result))}，里面没有 ${quote(fragment, 30)}`);
      return pass(`${tool} 交回了 ${quote(fragment, 30)}`);
    },
  };
}

/** 最终回答含有 fragment。 */
export function answerIncludes(fragment: string): EvalCheck {
  return {
    name: `回答里有 ${quote(fragment, 30)}`,
    scope: "run",
    run(context) {
      // #region lab 14.1
      if (!context.finalAnswer.includes(fragment)) return fail(`最终回答是 ${quote(context.finalAnswer)}，里面没有 ${quote(fragment)}`);
      return pass("回答里有这段文字");
      // #endregion
    },
  };
}
