/**
 * tiny-pi --durable：同一个项目只有一份持久会话，存在 agent 目录的 durable/ 里。
 * 这一版 Node 有 node:sqlite 就用 SQLite（<项目>.sqlite），没有（Node 20）就用 JSONL（<项目>.jsonl），并说一句。
 *
 * 每次启动先续上：打印已提交的历史（被打断的回复标成“中断”），做恢复，再依次问给定的任务。
 * 屏幕上只出现已提交的东西：流式回复按检查点一段段显示，进程在哪里被杀，重新打开看到的就到哪里。
 * 这个模式只带只读的 read 工具：它没有第 12 章的批准闸门，也就不跑会改动工作区的工具。
 */

import { mkdir } from "node:fs/promises";
import path from "node:path";

import { readTool } from "../coding-tools.js";
import { defaultAgentDir, resolveModel, sessionFolderName } from "../runtime.js";
import { textOf, type Message, type Model } from "../types.js";
import { Workspace } from "../workspace.js";
import type { AssistantMessage } from "../types.js";
import { DurableSession } from "./session.js";
import { DurableLog, JsonlDurableStore, loadSqlite, SqliteDurableStore, type DurableStore } from "./store.js";
import type { EntryRecord } from "./entries.js";

export interface DurableModeIo {
  cwd: string;
  env: Record<string, string | undefined>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  model?: Model;
  now?: () => number;
}

/** 重新打开时显示的被打断的回复以它开头。 */
export const ABORTED_MARK = "[中断]";

/** 这个项目的持久会话存在哪里、用哪种存储；Node 20 上 note 是那一句说明。 */
export async function openProjectStore(agentDir: string, cwd: string): Promise<{ store: DurableStore; file: string; note?: string }> {
  const dir = path.join(agentDir, "durable");
  await mkdir(dir, { recursive: true });
  const base = path.join(dir, sessionFolderName(cwd));
  if ((await loadSqlite()) !== undefined) return { store: await SqliteDurableStore.open(`${base}.sqlite`), file: `${base}.sqlite` };
  const file = `${base}.jsonl`;
  return { store: new JsonlDurableStore(file), file, note: `这一版 Node（${process.version}）没有内置的 node:sqlite，持久会话改存 JSONL：${file}` };
}

/** 一条消息在屏幕上的样子：用户的话以 > 开头；被打断的回复标成中断；工具结果只写一行。 */
export function displayLine(message: Message): string | undefined {
  switch (message.role) {
    case "user":
      return `> ${textOf(message)}`;
    case "assistant": {
      const calls = message.content.flatMap((block) => (block.type === "toolCall" ? [`[调用 ${block.name}]`] : []));
      const words = [textOf(message), ...calls].filter((part) => part !== "").join(" ");
      return message.stopReason === "aborted" ? `${ABORTED_MARK} ${words}` : words;
    }
    case "toolResult":
      return `[${message.toolName}${message.isError ? " 出错" : ""}] ${textOf(message).split("\n")[0] ?? ""}`;
    case "system":
      return undefined;
  }
}

function partialText(entry: EntryRecord): string | undefined {
  if (entry.kind !== "pi.partial") return undefined;
  return textOf((entry.data as { partial: AssistantMessage }).partial);
}

export async function runDurableMode(tasks: readonly string[], io: DurableModeIo): Promise<number> {
  const write = (text: string) => void io.stdout.write(text);
  const agentDir = defaultAgentDir(io.env);
  const { store, file, note } = await openProjectStore(agentDir, io.cwd);
  if (note !== undefined) io.stderr.write(`tiny-pi：${note}\n`);
  try {
    const log = await DurableLog.open(store);
    const history = log.entries;
    if (history.length > 0) write(`续上持久会话 ${file}（${history.length} 个条目）\n`);
    const workspace = await Workspace.open(io.cwd);
    const session = await DurableSession.open({
      log,
      model: resolveModel({ model: io.model, env: io.env, now: io.now }),
      tools: [readTool(workspace)],
      safeTools: ["read"],
      system: () => ({ preamble: "You are tiny-pi, a coding agent. Be brief.", cwd: `<cwd>${io.cwd}</cwd>` }),
      ...(io.now === undefined ? {} : { now: io.now }),
    });
    // 已提交的历史（恢复时刚写下的也在里面）。
    for (const entry of session.entries) {
      for (const message of entry.model ?? []) {
        const line = displayLine(message);
        if (line !== undefined) write(`${line}\n`);
      }
    }
    // 之后只显示提交过的：检查点一段段补上文字，回复提交时补齐剩下的。
    let shown = "";
    session.subscribe((batch) => {
      for (const entry of batch) {
        const partial = partialText(entry);
        if (partial !== undefined) {
          write(partial.slice(shown.length));
          shown = partial;
          continue;
        }
        for (const message of entry.model ?? []) {
          if (message.role === "assistant") {
            const line = displayLine(message) ?? "";
            write(`${line.startsWith(shown) && shown !== "" ? line.slice(shown.length) : line}\n`);
            shown = "";
          } else if (message.role === "toolResult") {
            write(`${displayLine(message)}\n`);
          }
        }
      }
    });
    for (const task of tasks) {
      write(`> ${task}\n`);
      await session.prompt(task);
    }
    return 0;
  } catch (error) {
    io.stderr.write(`tiny-pi：${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await store.close();
  }
}
