/**
 * eval 的数据：一个任务是什么，一项检查看得到什么，一份报告记下什么。
 *
 *   任务 = 工作区的初始文件 + 用户依次说的话 + 模型依次的回答（脚本）+ 对结果的检查。
 *   检查只看真正发生过的事：跑完之后磁盘上的文件、从磁盘读回的会话条目、模型收到的每一次请求。
 *   它从不看 Agent 自己“说”做了什么——那正是要被检验的东西。
 */

import type { AgentEvent } from "../agent-loop.js";
import type { CompactionSettings } from "../compaction.js";
import type { ScriptedTurn } from "../scripted-model.js";
import type { SessionEntry } from "../session-entries.js";
import type { AgentContext } from "../types.js";

/**
 * 一项检查依据的是哪类证据。
 * workspace：只看工作区里的文件——换成真实模型（--live）时，回答不再是脚本，只有它仍然成立。
 * run：还要看会话、请求、事件或最终回答——只对脚本模型有意义。
 */
export type CheckScope = "workspace" | "run";

/** 一个任务跑完之后，检查能看到的全部证据。 */
export interface EvalContext {
  /** 任务的临时工作区（绝对路径）；检查运行时它还在，报告写完才删。 */
  workspace: string;
  /** 从会话文件读回的条目，按写下的顺序：写进文件的才算发生过。 */
  entries: readonly SessionEntry[];
  /** 模型收到的每一次请求（包括写摘要的那几次），按调用顺序。 */
  requests: readonly AgentContext[];
  /** Agent 发出的全部事件。 */
  events: readonly AgentEvent[];
  /** 最后一条 assistant 消息的文字；没有就是空串。 */
  finalAnswer: string;
}

/** 一项检查的结论：reason 是给人读的中文，失败时说清看到了什么。 */
export interface CheckOutcome {
  ok: boolean;
  reason: string;
}

export interface EvalCheck {
  /** 表格与 JSON 里的名字，一句中文。 */
  name: string;
  scope: CheckScope;
  run(context: EvalContext): CheckOutcome | Promise<CheckOutcome>;
}

/** 经过模型目录的任务（第 18 章）：第一个物理模型是回环服务器，每次都回这个 HTTP 状态。 */
export interface EvalRouting {
  failWith: number;
}

/** 持久会话的任务（第 19 章）：第一次运行死在 crashIn 这个工具里，再打开、恢复、续上。 */
export interface EvalDurable {
  crashIn: string;
  /** 恢复时可以重跑的工具。 */
  safeTools: string[];
}

export interface EvalTask {
  id: string;
  title: string;
  /** 工作区的初始文件：相对路径 → 内容。 */
  files: Record<string, string>;
  /**
   * 用户依次输入的话，原样交给 session.prompt（所以 `!cmd`、`!!cmd` 照常生效）。
   * 两个 eval 自己的步骤：`/compact` 请模型压缩会话；`/branch <片段>` 回到最近一条含这段文字的用户消息之前，
   * 从那里另起一支（被离开的那支留在文件里，不该再进请求）。
   */
  prompts: string[];
  /** 脚本模型依次的回答：每次请求消耗一个。 */
  turns: ScriptedTurn[];
  checks: EvalCheck[];
  /** 第 17 章：agent 目录里的初始文件（例如 mcp.json）：相对路径 → 内容。 */
  agentFiles?: Record<string, string>;
  /** 这个任务的上下文预算；省略时用 runtime 的默认值。 */
  compaction?: CompactionSettings;
  /** 第 18 章：经过模型目录跑，第一个物理模型是回这个状态的回环服务器，脚本模型是备选。 */
  routing?: EvalRouting;
  /** 第 19 章：跑在持久会话上，中途死掉一次再续上。 */
  durable?: EvalDurable;
}

export interface CheckReport {
  name: string;
  scope: CheckScope;
  ok: boolean;
  reason: string;
}

/** 一个任务的结果：表格和 JSON 都只从这里取数。 */
export interface EvalReport {
  id: string;
  title: string;
  /** 任务跑完了，并且每一项检查都通过。 */
  ok: boolean;
  checks: CheckReport[];
  /** 调用模型的次数。 */
  steps: number;
  /** 会话里 isError 的工具结果条数。 */
  toolErrors: number;
  /** 模型读到的 token 估算（每次请求按第 11 章的估算相加）。 */
  tokens: number;
  /** 从建工作区到删掉它的挂钟时间。 */
  wallMs: number;
  /** 任务没能跑完（runtime 抛出、脚本用完等）时的原因。 */
  error?: string;
}
