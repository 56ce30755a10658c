/**
 * 目录模型：循环手里的那个 Model。当前分支选中的是物理模型时，它把请求原样交给那个模型（一个字节也不多）；
 * 选中的是虚拟模型时，每次请求：
 *
 *   1. 问路由器（reason、上一次的回复、分支上的状态、消息），挑出一个或按顺序排好的几个物理模型；
 *   2. 上下文窗口放不下这次请求（第 11 章的估算）的目标在发送之前就被拒绝，换下一个；
 *   3. 思考档位夹到目标支持的范围里，历史按目标归一化，再发出去；
 *   4. 可重试的失败（HTTP 429 / 5xx、连接失败）且还没送出任何内容：以 reason retry 再问一次路由器，
 *      换一个物理模型重试一次；401、坏掉的 schema 这类失败从不重试。
 *
 * 每一次尝试都记进分支的元数据。路由出错、名字不对、没有能用的目标，都是一条 error 回复：循环照常收场。
 */

import { estimateContext } from "../compaction.js";
import { AssistantMessageEventStream } from "../event-stream.js";
import { assistantMessage, type AgentContext, type AssistantMessage, type DoneReason, type Message, type Model, type ModelEvent, type ModelStream, type StreamOptions } from "../types.js";
import { THINKING_LEVELS, type ModelCatalog, type PhysicalModel, type RouteReason, type RouteRequest, type ThinkingLevel, type VirtualModelSpec } from "./catalog.js";
import { normalizeForTarget } from "./normalize.js";
import { routeOnce, type RouteAttempt, type RouteLedger } from "./routing.js";

declare module "../types.js" {
  interface StreamOptions {
    /** 为什么发这次请求；省略时由最后一条消息推断（user → user，其余 → continuation）。 */
    reason?: RouteReason;
    /** 想要的思考档位；发给物理模型之前夹到它支持的范围里。 */
    thinking?: ThinkingLevel;
  }
}

export interface CatalogModelOptions {
  catalog: ModelCatalog;
  ledger: RouteLedger;
  /** 分支上还没有 /model 的选择时用哪个名字。 */
  defaultModel: string;
  /** 默认的思考档位。 */
  thinking?: ThinkingLevel;
}

// ── 纯函数 ──────────────────────────────────────────────────────

/** 可重试：服务器说“忙”或“坏了”（429、5xx），或者连接本身失败。别的 HTTP 状态与内容错误重试也不会变好。 */
export function isRetryable(message: AssistantMessage): boolean {
  // #region lab 18.4
  if (message.stopReason !== "error") return false;
  const error = message.errorMessage ?? "";
  const status = /^HTTP (\d{3})/.exec(error);
  if (status !== null) return status[1] === "429" || status[1]!.startsWith("5");
  return /fetch failed|ECONNRESET|ECONNREFUSED|other side closed/.test(error);
  // #endregion
}

/** 不超过想要的档位里目标支持的最高一档；目标连最低的都比它高时，用目标最低的一档。 */
export function clampThinking(wanted: ThinkingLevel, supported: readonly ThinkingLevel[] = ["off"]): ThinkingLevel {
  // #region lab 18.4
  const rank = THINKING_LEVELS.indexOf(wanted);
  const ordered = THINKING_LEVELS.filter((level) => supported.includes(level));
  const fitting = ordered.filter((level) => THINKING_LEVELS.indexOf(level) <= rank);
  return fitting[fitting.length - 1] ?? ordered[0] ?? "off";
  // #endregion
}

/** 这次请求为什么发：调用方说了算；没说时看最后一条消息。 */
export function reasonOf(messages: readonly Message[], given?: RouteReason): RouteReason {
  if (given !== undefined) return given;
  return messages[messages.length - 1]?.role === "user" ? "user" : "continuation";
}

function previousReply(messages: readonly Message[]): AssistantMessage | undefined {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    if (message.role === "assistant") return message;
  }
  return undefined;
}

/** 物理模型说的话记在它自己（目录里的 provider 与 id）名下：下一次归一化才分得出谁是外人。 */
function stamped(message: AssistantMessage, target: PhysicalModel): AssistantMessage {
  return { ...message, provider: target.provider, model: target.id };
}

function stampedEvent(event: ModelEvent, target: PhysicalModel): ModelEvent {
  switch (event.type) {
    case "done":
      return { ...event, message: stamped(event.message, target) };
    case "error":
      return { ...event, error: stamped(event.error, target) };
    default:
      return { ...event, partial: stamped(event.partial, target) };
  }
}

function attempt(virtual: string, reason: RouteReason, target: PhysicalModel, outcome: RouteAttempt["outcome"], extra: Partial<RouteAttempt> = {}): RouteAttempt {
  return { virtual, reason, target: target.key, outcome, ...extra };
}

// ── 模型 ────────────────────────────────────────────────────────

export class CatalogModel implements Model {
  private readonly options: CatalogModelOptions;

  constructor(options: CatalogModelOptions) {
    this.options = options;
  }

  /** 此刻选中的名字（分支上最后一次 /model，否则是默认的）。 */
  get selected(): string {
    return this.options.ledger.selection() ?? this.options.defaultModel;
  }

  get catalog(): ModelCatalog {
    return this.options.catalog;
  }

  /** /model：名字要在目录里（查不到就抛出目录的那句错误），然后写进当前分支。 */
  select(name: string): void {
    this.options.catalog.lookup(name);
    this.options.ledger.select(name);
  }

  get provider(): string {
    const entry = this.entry();
    return entry?.kind === "physical" ? entry.model.provider : "virtual";
  }

  get id(): string {
    const entry = this.entry();
    return entry?.kind === "physical" ? entry.model.id : this.selected;
  }

  private entry() {
    try {
      return this.options.catalog.lookup(this.selected);
    } catch {
      return undefined;
    }
  }

  stream(context: AgentContext, options: StreamOptions = {}): ModelStream {
    const name = this.selected;
    let entry;
    try {
      entry = this.options.catalog.lookup(name);
    } catch (error) {
      return failedStream(name, error instanceof Error ? error.message : String(error));
    }
    // 物理模型：原样转交。没有虚拟模型时，请求与事件和没有目录时完全一样。
    if (entry.kind === "physical") {
      let model;
      try {
        model = this.options.catalog.instance(entry.model);
      } catch (error) {
        return failedStream(name, error instanceof Error ? error.message : String(error));
      }
      return model.stream(context, options);
    }
    const output = new AssistantMessageEventStream();
    void this.routed(entry.model, context, options, output);
    return output;
  }

  private async routed(virtual: VirtualModelSpec, context: AgentContext, options: StreamOptions, output: AssistantMessageEventStream): Promise<void> {
    const { catalog, ledger } = this.options;
    const fail = (message: string) => output.push(failureEvent(virtual.name, message));
    try {
      // #region lab 18.4
      const reason = reasonOf(context.messages, options.reason);
      // 路由器交回了新的状态就存进分支：下一次请求（哪怕是重试）读到的就是它。
      const ask = async (request: RouteRequest) => {
        const outcome = await routeOnce(catalog, virtual, request);
        if (outcome.ok && outcome.stateChanged) ledger.saveRouterState(virtual.name, outcome.state);
        return outcome;
      };
      const previous = previousReply(context.messages);
      const first: RouteRequest = { reason, messages: context.messages, state: ledger.routerState(virtual.name) };
      if (previous !== undefined) first.previous = previous;
      let outcome = await ask(first);
      if (!outcome.ok) return fail(outcome.message);

      const estimate = estimateContext(context.messages).total;
      const wanted = options.thinking ?? this.options.thinking ?? "off";
      let candidates = outcome.targets;
      let currentReason = reason;
      let retried = false;
      for (;;) {
        // 放不下的目标在发送之前就拒绝，一个字节也不发给它。
        const fits: PhysicalModel[] = [];
        for (const target of candidates) {
          if (target.contextWindow !== undefined && target.contextWindow < estimate) {
            ledger.recordAttempt(attempt(virtual.name, currentReason, target, "refused", { error: `needs ~${estimate} tokens, window is ${target.contextWindow}` }));
          } else fits.push(target);
        }
        const target = fits[0];
        if (target === undefined) return fail(`No model chosen by ${virtual.name} has a context window for this request (~${estimate} tokens).`);

        const thinking = clampThinking(wanted, target.thinking);
        const messages = normalizeForTarget(context.messages, target);
        const stream = catalog.instance(target).stream({ ...context, messages }, { ...options, thinking });
        let forwarded = false;
        for await (const event of stream) {
          if (event.type === "done" || event.type === "error") break;
          forwarded = true;
          output.push(stampedEvent(event, target));
        }
        const reply = stamped(await stream.result(), target);

        if (!forwarded && !retried && isRetryable(reply)) {
          // 还什么都没送出：换一个物理模型重试一次，路由器看得到这次失败。
          ledger.recordAttempt(attempt(virtual.name, currentReason, target, "retried", { thinking, error: reply.errorMessage ?? "" }));
          retried = true;
          currentReason = "retry";
          outcome = await ask({ reason: "retry", messages: context.messages, failed: reply, state: ledger.routerState(virtual.name) });
          if (!outcome.ok) return fail(outcome.message);
          candidates = outcome.targets.filter((next) => next.key !== target.key);
          if (candidates.length > 0) continue;
        }
        const failed = reply.stopReason === "error" || reply.stopReason === "aborted";
        ledger.recordAttempt(attempt(virtual.name, currentReason, target, failed ? "failed" : "ok", failed ? { thinking, error: reply.errorMessage ?? "" } : { thinking }));
        output.push(failed ? { type: "error", reason: reply.stopReason === "aborted" ? "aborted" : "error", error: reply } : { type: "done", reason: reply.stopReason as DoneReason, message: reply });
        return;
      }
      // #endregion
    } catch (error) {
      fail(`Routing through ${virtual.name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function failureEvent(name: string, errorMessage: string): ModelEvent {
  const error = assistantMessage([], "error", { provider: "virtual", model: name, errorMessage, timestamp: Date.now() });
  return { type: "error", reason: "error", error };
}

function failedStream(name: string, errorMessage: string): ModelStream {
  const output = new AssistantMessageEventStream();
  output.push(failureEvent(name, errorMessage));
  return output;
}

/** 压缩与扩展直接发起的调用：reason 是 direct。 */
export function directModel(model: Model): Model {
  return {
    get provider() {
      return model.provider;
    },
    get id() {
      return model.id;
    },
    stream: (context, options = {}) => model.stream(context, { ...options, reason: "direct" }),
  };
}
