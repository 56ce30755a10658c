/**
 * 打印模式与 JSON 模式：把任务依次交给会话，跑完就走。
 *   print：只把最后一条 assistant 的文字写到 stdout，别的什么都不写，脚本可以直接拿去用；
 *   json ：每个事件一行 JSON，一行一个完整的对象，脚本逐行 JSON.parse。
 * 失败写到 stderr，退出码 1；stdout 被下游关掉（EPIPE）就停下这次运行，不再写。
 */

import type { AgentEvent } from "../agent-loop.js";
import type { AgentState } from "../agent-state.js";
import type { Runtime } from "../runtime.js";
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

/** JSON 模式的一行：一个事件一个对象，结尾一个换行。 */
export function jsonLine(event: AgentEvent): string {
  return `${JSON.stringify(event)}\n`;
}

// ── 运行 ────────────────────────────────────────────────────────

export async function runPrintMode(runtime: Runtime, mode: "print" | "json", messages: readonly string[], out: Output, err: Output): Promise<number> {
  // #region lab 13.3
  const { session } = runtime;
  // 下游不读了：再跑下去的结果没人看，停下这次运行。
  out.onClose(() => session.agent.abort());
  const unsubscribe = mode === "json" ? session.subscribe((event) => out.write(jsonLine(event))) : () => {};
  try {
    for (const message of messages) {
      if (out.closed) return 0;
      await session.prompt(message);
      if (out.closed) return 0;
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
