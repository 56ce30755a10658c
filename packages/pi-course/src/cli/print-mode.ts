/**
 * 打印模式与 JSON 模式：把任务依次交给会话，跑完就走。
 *   print：只把最后一条 assistant 的文字写到 stdout，别的什么都不写，脚本可以直接拿去用；
 *   json ：每个事件一行 JSON，一行一个完整的对象，脚本逐行 JSON.parse。
 * 失败写到 stderr，退出码 1；stdout 被下游关掉（EPIPE）就停下这次运行，不再写。
 */

import type { AgentEvent } from "../agent-loop.js";
import type { AgentState } from "../agent-state.js";
import { sessionWriteFailure, type Runtime } from "../runtime.js";
import { textOf, type AgentMessage } from "../types.js";
import type { Output } from "./output.js";

// ── 纯函数 ──────────────────────────────────────────────────────

/** 一次运行失败了没有：失败就给出一句写给人看的话，成功是 undefined。 */
export function runFailure(state: AgentState): string | undefined {
  // #region lab 13.3
  switch (state.stopReason) {
    case undefined:
    case "stop":
    case "length":
      return undefined;
    case "aborted":
      return "运行被中止。";
    default:
      return `运行失败（${state.stopReason}）：${state.error ?? "没有说明"}`;
  }
  // #endregion
}

/** 打印模式写出的东西：最后一条 assistant 的文字；最后一条不是 assistant（例如 `!cmd`）就是它的输出。 */
export function finalAnswer(messages: readonly AgentMessage[]): string {
  const last = messages.at(-1);
  if (last === undefined) return "";
  if (last.role === "assistant") return textOf(last);
  if (last.role === "bashExecution") return last.output;
  return "";
}

/**
 * JSON 模式的一行：一个事件一个对象，结尾一个换行。
 * message_update 只写增量：每个更新都带着到此为止的整条 partial（两份），照原样写出，
 * 输出就随回答长度的平方增长（32 KB 的回答写出十几 MB）。完整的消息在 message_end 里有一份。
 */
export function jsonLine(event: AgentEvent): string {
  return `${JSON.stringify(event.type === "message_update" ? updateDelta(event) : event)}\n`;
}

/** 一个 message_update 去掉两份 partial 之后剩下的：事件种类、槽位、增量（toolcall_end 还有整个调用）。 */
function updateDelta(event: Extract<AgentEvent, { type: "message_update" }>): object {
  const { partial: _partial, ...delta } = event.event as { partial?: unknown; [field: string]: unknown };
  return { type: event.type, event: delta };
}

// ── 运行 ────────────────────────────────────────────────────────

/**
 * 问一次，记下这次运行里结束的每条消息（出错时它们就是“已经得到的回答”）；
 * prompt 抛出的错误换成一句给人看的话，写不进会话文件时点名那个文件。没有抛出时 thrown 是 undefined。
 */
async function askOnce(runtime: Runtime, message: string): Promise<{ thrown: string | undefined; ended: AgentMessage[] }> {
  const ended: AgentMessage[] = [];
  const unsubscribe = runtime.session.subscribe((event) => {
    if (event.type === "message_end") ended.push(event.message);
  });
  try {
    await runtime.session.prompt(message);
    return { thrown: undefined, ended };
  } catch (error) {
    // 带 syscall 的是文件系统的错误：prompt 里碰文件系统的只有会话文件的写入（工具的错误都变成了结果）。
    if ((error as NodeJS.ErrnoException).syscall !== undefined) return { thrown: sessionWriteFailure(runtime.sessionFile, error), ended };
    return { thrown: error instanceof Error ? error.message : String(error), ended };
  } finally {
    unsubscribe();
  }
}

export async function runPrintMode(runtime: Runtime, mode: "print" | "json", messages: readonly string[], out: Output, err: Output): Promise<number> {
  // #region lab 13.3
  const { session } = runtime;
  // 下游不读了：再跑下去的结果没人看，停下这次运行。
  out.onClose(() => session.agent.abort());
  const unsubscribe = mode === "json" ? session.subscribe((event) => out.write(jsonLine(event))) : () => {};
  try {
    for (const message of messages) {
      if (out.closed) return 0;
      const { thrown, ended } = await askOnce(runtime, message);
      if (out.closed) return 0;
      if (thrown !== undefined) {
        // 会话写不进去、自动压缩失败：一句话；这次已经得到的回答照样交出去，它不该跟着丢。
        err.write(`tiny-pi：${thrown}\n`);
        const answer = finalAnswer(ended);
        if (mode === "print" && answer !== "") out.write(`${answer}\n`);
        return 1;
      }
      const failure = runFailure(session.agent.state);
      if (failure !== undefined) {
        err.write(`tiny-pi：${failure}\n`);
        return 1;
      }
    }
    if (mode === "print") out.write(`${finalAnswer(session.messages)}\n`);
    return 0;
  } finally {
    unsubscribe();
  }
  // #endregion
}
