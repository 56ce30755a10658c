/**
 * 第 19 章的评测：持久会话在一个工具跑到一半时“死掉”，再打开、续上。
 *
 *   第一次：用户的话 → 模型请求工具 → 工具做完它的事之后就再也不返回（进程死在这里：
 *     结果没来得及提交）；会话被丢下，只剩存储里已经提交的条目。
 *   第二次：同一份存储重新打开 → 恢复（safe 的工具重跑，其余记 interrupted）→ resume，模型接着回答。
 *
 * 检查看的是重新打开之后的记录（换成第 10 章的消息条目，第 14 章的检查照常能用）与工作区里的文件。
 */

import path from "node:path";

import { codingTools } from "../coding-tools.js";
import { DurableSession } from "../durable/session.js";
import { DurableLog, JsonlDurableStore, loadSqlite, SqliteDurableStore, type DurableStore } from "../durable/store.js";
import type { EntryRecord } from "../durable/entries.js";
import type { AgentEvent } from "../agent-loop.js";
import type { SessionEntry } from "../session-entries.js";
import type { AgentTool } from "../tools.js";
import type { Model } from "../types.js";
import { Workspace } from "../workspace.js";
import { answerIncludes, fail, pass, toolCallsPaired, toolErrors } from "./checks.js";
import type { EvalCheck, EvalTask } from "./types.js";

/** 恢复时写下的条目，换成第 10 章条目时另记一个 custom 条目：哪个工具、怎样恢复的。 */
export const DURABLE_RECOVERY = "durable_recovery";

/** 记录里的消息换成第 10 章的 message 条目（一条链），第 14 章的检查就能读；恢复写下的条目再跟一个 custom 条目。 */
export function asSessionEntries(entries: readonly EntryRecord[]): SessionEntry[] {
  const converted: SessionEntry[] = [];
  const link = (id: string) => ({ id, parentId: converted.at(-1)?.id ?? null });
  for (const entry of entries) {
    for (const message of entry.model ?? []) {
      converted.push({ type: "message", ...link(`${entry.id}-${converted.length}`), timestamp: new Date(message.timestamp).toISOString(), message });
      const how = (entry.data as { recovered?: string } | undefined)?.recovered;
      if (how !== undefined && message.role === "toolResult") {
        converted.push({ type: "custom", ...link(`${entry.id}-${converted.length}`), timestamp: new Date(message.timestamp).toISOString(), customType: DURABLE_RECOVERY, data: { how, toolName: message.toolName } });
      }
    }
  }
  return converted;
}

async function openTaskStore(dir: string): Promise<DurableStore> {
  return (await loadSqlite()) !== undefined ? SqliteDurableStore.open(path.join(dir, "session.sqlite")) : new JsonlDurableStore(path.join(dir, "session.jsonl"));
}

/** 把名为 name 的工具换成“做完事就死掉”的版本：真的执行，然后永远不返回；crashed 在它做完时兑现。 */
function dyingTool(tool: AgentTool<any>, onCrash: () => void): AgentTool<any> {
  return {
    ...tool,
    execute: async (args, context) => {
      await tool.execute(args, context);
      onCrash();
      return new Promise(() => {});
    },
  };
}

export interface DurableRun {
  entries: SessionEntry[];
  events: AgentEvent[];
  error?: string;
}

/** 跑一个持久任务：第一次在 durable.crashIn 的工具里死掉，第二次打开、恢复、续上。 */
export async function runDurableTask(task: EvalTask, workspaceDir: string, storeDir: string, model: Model): Promise<DurableRun> {
  const durable = task.durable!;
  const workspace = await Workspace.open(workspaceDir);
  const system = () => ({ preamble: "You are tiny-pi, a coding agent.", cwd: `<cwd>${workspaceDir}</cwd>` });
  const store = await openTaskStore(storeDir);
  let crashed = () => {};
  const died = new Promise<void>((resolve) => (crashed = resolve));
  const first = await DurableSession.open({
    log: await DurableLog.open(store),
    model,
    tools: codingTools(workspace).map((tool) => (tool.name === durable.crashIn ? dyingTool(tool, crashed) : tool)),
    safeTools: durable.safeTools,
    system,
  });
  const firstRun = first.prompt(task.prompts[0] ?? "");
  const outcome = await Promise.race([died.then(() => "crashed" as const), firstRun.then(() => "finished" as const)]);
  if (outcome !== "crashed") return { entries: asSessionEntries(first.entries), events: [], error: `工具 ${durable.crashIn} 一直没有被调用，第一次运行没有死在半路` };
  // 结果那一次提交还排着（永远不会来）：等已经排着的提交写完，就当进程在这里死了。
  await first.log.settled();

  const second = await DurableSession.open({ log: await DurableLog.open(store), model, tools: codingTools(workspace), safeTools: durable.safeTools, system });
  await second.resume();
  for (const input of task.prompts.slice(1)) await second.prompt(input);
  const entries = asSessionEntries(second.entries);
  await store.close();
  return { entries, events: [{ type: "agent_end", messages: [], reason: "stop" }] };
}

/** 恢复时 name 这个调用被怎样处理：rerun（safe 的工具重跑）或 interrupted。 */
export function recoveredAs(name: string, how: "rerun" | "interrupted"): EvalCheck {
  return {
    name: `重新打开时 ${name} 的调用${how === "rerun" ? "重跑了一次" : "记成 interrupted、没有重跑"}`,
    scope: "run",
    run(context) {
      const recovered = context.entries.filter((entry) => entry.type === "custom" && entry.customType === DURABLE_RECOVERY && (entry.data as { toolName: string }).toolName === name);
      if (recovered.length !== 1) return fail(`重新打开时 ${name} 被恢复了 ${recovered.length} 次，应当恰好 1 次：第一次运行没有死在这个工具里，或者没有重新打开`);
      const results = context.entries.flatMap((entry) => (entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === name ? [entry.message] : []));
      if (results.length !== 1) return fail(`${name} 有 ${results.length} 条结果，应当恰好 1 条`);
      const interrupted = (results[0]!.details as { kind?: string } | undefined)?.kind === "interrupted";
      if (how === "interrupted" && !interrupted) return fail(`${name} 的结果不是 interrupted：它被重跑了`);
      if (how === "rerun" && (interrupted || results[0]!.isError)) return fail(`${name} 是 safe 的工具，恢复时应当重跑，结果却是一条错误`);
      return pass(how === "rerun" ? `${name} 重跑了一次，结果进了记录` : `${name} 没有重跑，模型读到 interrupted`);
    },
  };
}

/** 可见的持久任务：read 读到一半进程死了；read 是 safe 的，重新打开时重跑，模型照样回答。 */
export const DURABLE_TASKS: EvalTask[] = [
  {
    id: "durable-crash-in-read",
    title: "读文件时进程死掉，重新打开：read 重跑，模型接着回答",
    files: { "CHANGELOG.md": "## 0.4.0\n- 持久会话\n" },
    prompts: ["CHANGELOG.md 里最新的版本是哪个？"],
    turns: [
      { kind: "reply", content: [{ type: "toolCall", id: "call-1", name: "read", arguments: { path: "CHANGELOG.md" } }], stopReason: "toolUse" },
      { kind: "reply", content: [{ type: "text", text: "最新的版本是 0.4.0。" }], stopReason: "stop" },
    ],
    durable: { crashIn: "read", safeTools: ["read"] },
    checks: [recoveredAs("read", "rerun"), toolCallsPaired(), toolErrors(0), answerIncludes("0.4.0")],
  },
];
