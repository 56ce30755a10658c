/**
 * 跑一个任务：新的临时工作区、新的 agentDir，里面是第 13 章真正的 createRuntime——
 * eval 不另搭一个“差不多的”Agent，它检验的就是 tiny-pi 本身。
 *
 *   建目录、写 fixture → createRuntime → 依次输入 prompts → dispose
 *   → 从磁盘读回会话文件 → 逐项检查 → 删掉临时目录 → 一份 EvalReport
 */

import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

import type { AgentEvent } from "../agent-loop.js";
import type { AgentSession } from "../agent-session.js";
import { estimateContext } from "../compaction.js";
import { createRuntime } from "../runtime.js";
import { ScriptedModel } from "../scripted-model.js";
import type { SessionEntry } from "../session-entries.js";
import { JsonlSessionStore } from "../session-store.js";
import { textOf, type AgentContext, type Model } from "../types.js";
import { fail, sessionMessages } from "./checks.js";
import { runDurableTask, type DurableRun } from "./durable.js";
import { routingCatalog, startLoopback } from "./routing.js";
import type { CheckReport, EvalCheck, EvalContext, EvalReport, EvalTask } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface RunEvalOptions {
  /**
   * 换掉任务的脚本：例如 --live 时的真实模型。这时回答不是脚本写的，
   * 只有 workspace 检查还成立，其余检查不跑，脚本用没用完也不再算数。
   */
  model?: Model;
  /** 临时目录建在哪里；默认系统的临时目录。 */
  tmpRoot?: string;
  /** 第 18 章：runEvalTask 为带 routing 的任务起的回环服务器（调用方不用给）。 */
  loopbackUrl?: string;
}

/** 记下每一次请求的模型：包在任何模型外面，原样转交。 */
export interface RecordingModel extends Model {
  readonly requests: readonly AgentContext[];
}

// ── 纯帮手 ──────────────────────────────────────────────────────

export function recordRequests(model: Model): RecordingModel {
  const requests: AgentContext[] = [];
  return {
    provider: model.provider,
    id: model.id,
    requests,
    stream(context, options) {
      // 调用方之后还会改同一个数组：记录要停在这一刻。
      requests.push(structuredClone(context));
      return model.stream(context, options);
    },
  };
}

/** 会话里最后一条 assistant 消息的文字。 */
export function finalAnswer(entries: readonly SessionEntry[]): string {
  const last = sessionMessages(entries).findLast((message) => message.role === "assistant");
  return last?.role === "assistant" ? textOf(last) : "";
}

/** 模型读到的 token 估算：每次请求按第 11 章的办法估一遍，再相加。 */
export function requestTokens(requests: readonly AgentContext[]): number {
  return requests.reduce((sum, request) => sum + estimateContext(request.messages).total, 0);
}

/** 运行为什么没有正常结束：Agent 以失败结束，或者脚本与请求次数对不上。 */
export function runProblem(events: readonly AgentEvent[], steps: number, scripted: number | undefined): string | undefined {
  for (const event of events) {
    if (event.type === "agent_end" && event.reason !== "stop" && event.reason !== "length") {
      return `Agent 以 ${event.reason} 结束${event.errorMessage === undefined ? "" : `：${event.errorMessage}`}`;
    }
  }
  if (scripted !== undefined && steps !== scripted) return `脚本准备了 ${scripted} 个回答，模型却被调用了 ${steps} 次`;
  return undefined;
}

/** `/branch <片段>` 的落点：当前路径上最近一条含这段文字的用户消息，它的父条目。 */
export function branchPoint(path: readonly SessionEntry[], fragment: string): string {
  const entry = path.findLast((candidate) => candidate.type === "message" && candidate.message.role === "user" && textOf(candidate.message).includes(fragment));
  if (entry === undefined || entry.parentId === null) throw new Error(`/branch：当前路径上没有含“${fragment}”的用户消息可以回到`);
  return entry.parentId;
}

// ── 效果 ────────────────────────────────────────────────────────

async function writeFixture(dir: string, files: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(dir, file);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
  }
}

/** 用户的一句话；`/compact` 与 `/branch` 是 eval 自己的两个步骤，别的原样交给 session.prompt。 */
export async function runStep(session: AgentSession, input: string): Promise<void> {
  // #region lab 14.2
  if (input === "/compact") {
    await session.compact();
    return;
  }
  const branch = /^\/branch (.+)$/.exec(input);
  if (branch !== null) {
    session.branch(branchPoint(session.tree.getBranch(), branch[1] ?? ""));
    return;
  }
  await session.prompt(input);
  // #endregion
}

/** 逐项检查；检查自己抛出也只算这一项失败，其余照跑。 */
export async function runChecks(checks: readonly EvalCheck[], context: EvalContext): Promise<CheckReport[]> {
  const reports: CheckReport[] = [];
  for (const check of checks) {
    // #region lab 14.2
    let outcome;
    try {
      outcome = await check.run(context);
    } catch (error) {
      outcome = fail(`检查本身出错：${(error as Error).message}`);
    }
    reports.push({ name: check.name, scope: check.scope, ok: outcome.ok, reason: outcome.reason });
    // #endregion
  }
  return reports;
}

/** 在 root 里跑一个任务，交回除挂钟时间以外的报告。 */
async function runInside(task: EvalTask, root: string, options: RunEvalOptions): Promise<Omit<EvalReport, "wallMs">> {
  // #region lab 14.2
  const workspace = path.join(root, "workspace");
  await writeFixture(workspace, task.files);
  const live = options.model !== undefined;
  const model = recordRequests(options.model ?? new ScriptedModel(task.turns));
  const events: AgentEvent[] = [];
  let error: string | undefined;
  let sessionFile: string | undefined;
  try {
    const runtime = await createRuntime({
      cwd: workspace,
      env: {},
      model,
      agentDir: path.join(root, "agent"),
      session: "new",
      // 上下文文件只找到工作区为止：临时目录上面（也许是某个项目）的 AGENTS.md 不该混进任务的请求。
      contextStopAt: workspace,
      compaction: task.compaction,
      // #endregion
      // #region lab 16.4 扩展
      // 第 16 章：评测跑的是真正的 tiny-pi，它有 codemode。
      codemode: true,
      // #endregion
      // #region lab 18.4 扩展
      // 第 18 章：带 routing 的任务经过模型目录：回环服务器在前，脚本模型是备选。
      ...(task.routing === undefined || options.loopbackUrl === undefined ? {} : { catalog: routingCatalog(options.loopbackUrl, model) }),
      // #endregion
      // #region lab 14.2
    });
    sessionFile = runtime.sessionFile;
    try {
      runtime.session.subscribe((event) => events.push(event));
      for (const input of task.prompts) await runStep(runtime.session, input);
    } finally {
      await runtime.dispose();
    }
  } catch (thrown) {
    error = (thrown as Error).message;
  }
  // 检查读的是磁盘上的会话文件，不是内存里的树：写进文件的才算发生过。
  const entries = sessionFile === undefined ? [] : (await new JsonlSessionStore(sessionFile).load()).entries;
  const steps = model.requests.length;
  error ??= runProblem(events, steps, live ? undefined : task.turns.length);
  const context: EvalContext = { workspace, entries, requests: model.requests, events, finalAnswer: finalAnswer(entries) };
  const checks = await runChecks(task.checks.filter((check) => !live || check.scope === "workspace"), context);
  const toolErrors = sessionMessages(entries).filter((message) => message.role === "toolResult" && message.isError).length;
  return {
    id: task.id,
    title: task.title,
    // 一项检查也没跑（--live 时任务只有 run 检查）就无从判断：0/0 不是全部通过。
    ok: error === undefined && checks.length > 0 && checks.every((check) => check.ok),
    checks,
    steps,
    toolErrors,
    tokens: requestTokens(model.requests),
    ...(error === undefined ? {} : { error }),
  };
  // #endregion
}

/** 第 19 章：持久会话的任务。证据换成重新打开之后的记录，检查与报告和 runInside 相同。 */
async function runDurableInside(task: EvalTask, root: string, options: RunEvalOptions): Promise<Omit<EvalReport, "wallMs">> {
  const workspace = path.join(root, "workspace");
  await writeFixture(workspace, task.files);
  await mkdir(path.join(root, "agent"), { recursive: true });
  const live = options.model !== undefined;
  const model = recordRequests(options.model ?? new ScriptedModel(task.turns));
  let run: DurableRun;
  try {
    run = await runDurableTask(task, workspace, path.join(root, "agent"), model);
  } catch (thrown) {
    run = { entries: [], events: [], error: (thrown as Error).message };
  }
  const steps = model.requests.length;
  const error = run.error ?? runProblem(run.events, steps, live ? undefined : task.turns.length);
  const context: EvalContext = { workspace, entries: run.entries, requests: model.requests, events: run.events, finalAnswer: finalAnswer(run.entries) };
  const checks = await runChecks(task.checks.filter((check) => !live || check.scope === "workspace"), context);
  const toolErrors = sessionMessages(run.entries).filter((message) => message.role === "toolResult" && message.isError).length;
  return {
    id: task.id,
    title: task.title,
    ok: error === undefined && checks.length > 0 && checks.every((check) => check.ok),
    checks,
    steps,
    toolErrors,
    tokens: requestTokens(model.requests),
    ...(error === undefined ? {} : { error }),
  };
}

/** 跑一个任务：每个任务一个新的临时目录，跑完（成功或失败）都删掉。 */
export async function runEvalTask(task: EvalTask, options: RunEvalOptions = {}): Promise<EvalReport> {
  const started = performance.now();
  const root = await mkdtemp(path.join(options.tmpRoot ?? os.tmpdir(), `pi-eval-${task.id}-`));
  let report: Omit<EvalReport, "wallMs">;
  // 第 18 章：带 routing 的任务先起一个回环服务器，跑完（成功或失败）就关掉。
  const loopback = task.routing === undefined ? undefined : await startLoopback(task.routing.failWith);
  try {
    // 第 17 章：agent 目录里的文件（mcp.json）在 runtime 启动之前写好。
    if (task.agentFiles !== undefined) await writeFixture(path.join(root, "agent"), task.agentFiles);
    report =
      task.durable !== undefined
        ? await runDurableInside(task, root, options)
        : await runInside(task, root, loopback === undefined ? options : { ...options, loopbackUrl: loopback.baseUrl });
  } finally {
    await loopback?.close();
    await rm(root, { recursive: true, force: true });
  }
  return { ...report, wallMs: Math.round(performance.now() - started) };
}

/** 依次跑一组任务：一个接一个，互不共享目录与会话。 */
export async function runEval(tasks: readonly EvalTask[], options: RunEvalOptions = {}): Promise<EvalReport[]> {
  const reports: EvalReport[] = [];
  for (const task of tasks) reports.push(await runEvalTask(task, options));
  return reports;
}
