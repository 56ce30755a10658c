/**
 * 路由与分支状态：虚拟模型的 route() 是应用写的代码，它可能抛出、可能指错名字；
 * 这里把每一种结局都变成数据（挑中的物理模型，或一句错误），循环那一头只会看到一条 error 回复，不会崩。
 *
 * 选中哪个模型（/model）和路由器的状态都是会话里的 custom 条目（第 10 章）：它们挂在当前分支上，
 * 续上会话时沿分支读回来，换一个分支就是另一份。
 */

import type { SessionEntry } from "../session-entries.js";
import type { SessionTree } from "../session-tree.js";
import { ModelCatalog, ModelLookupError, type PhysicalModel, type RouteReason, type RouteRequest, type VirtualModelSpec } from "./catalog.js";

// ── 路由 ────────────────────────────────────────────────────────

export type RouteOutcome =
  | { ok: true; targets: PhysicalModel[]; state?: unknown; stateChanged: boolean }
  | { ok: false; message: string };

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** 问一次路由器。挑中的每个名字都要是目录里的物理模型；一个不对，整次路由就是错误。 */
export async function routeOnce(catalog: ModelCatalog, virtual: VirtualModelSpec, request: RouteRequest): Promise<RouteOutcome> {
  // #region lab 18.2
  let decision;
  try {
    decision = await virtual.route(request);
  } catch (error) {
    return { ok: false, message: `Router ${virtual.name} failed: ${describe(error)}` };
  }
  const names = typeof decision.models === "string" ? [decision.models] : [...decision.models];
  if (names.length === 0) return { ok: false, message: `Router ${virtual.name} chose no model.` };
  const targets: PhysicalModel[] = [];
  for (const name of names) {
    try {
      targets.push(catalog.physicalModel(name));
    } catch (error) {
      if (!(error instanceof ModelLookupError)) throw error;
      return { ok: false, message: `Router ${virtual.name} chose ${name}: ${error.message}` };
    }
  }
  const stateChanged = "state" in decision && decision.state !== undefined;
  return stateChanged ? { ok: true, targets, state: decision.state, stateChanged } : { ok: true, targets, stateChanged };
  // #endregion
}

// ── 分支上的元数据 ──────────────────────────────────────────────

export const MODEL_SELECTION = "model_selection";
export const ROUTER_STATE = "router_state";
export const ROUTE_ATTEMPT = "route_attempt";

export interface ModelSelectionData {
  model: string;
}
export interface RouterStateData {
  model: string;
  state: unknown;
}

/** 一次发往物理模型的尝试（或发之前就拒绝的那次）。 */
export interface RouteAttempt {
  virtual: string;
  reason: RouteReason;
  target: string;
  outcome: "ok" | "failed" | "retried" | "refused";
  thinking?: string;
  error?: string;
}

/** 路由需要从会话读写的三样东西。测试可以给一个内存里的实现。 */
export interface RouteLedger {
  selection(): string | undefined;
  /** /model：把选择写进当前分支（名字已经查过）。 */
  select(model: string): void;
  routerState(virtual: string): unknown;
  saveRouterState(virtual: string, state: unknown): void;
  recordAttempt(attempt: RouteAttempt): void;
}

function customOf(entry: SessionEntry, customType: string): unknown {
  return entry.type === "custom" && entry.customType === customType ? entry.data : undefined;
}

/** 沿分支（根在前）读出最后一次选择。 */
export function selectionOn(branch: readonly SessionEntry[]): string | undefined {
  // #region lab 18.2
  let selected: string | undefined;
  for (const entry of branch) {
    const data = customOf(entry, MODEL_SELECTION) as ModelSelectionData | undefined;
    if (data !== undefined) selected = data.model;
  }
  return selected;
  // #endregion
}

/** 沿分支读出某个虚拟模型最后存下的状态。 */
export function routerStateOn(branch: readonly SessionEntry[], virtual: string): unknown {
  // #region lab 18.2
  let state: unknown;
  for (const entry of branch) {
    const data = customOf(entry, ROUTER_STATE) as RouterStateData | undefined;
    if (data !== undefined && data.model === virtual) state = data.state;
  }
  return state;
  // #endregion
}

/** 会话树上的 ledger：读总是沿当前分支，写总是挂在 leaf 下面。 */
export function sessionLedger(tree: SessionTree): RouteLedger {
  return {
    selection: () => selectionOn(tree.getBranch()),
    select: (model) => void tree.appendCustomEntry<ModelSelectionData>(MODEL_SELECTION, { model }),
    routerState: (virtual) => routerStateOn(tree.getBranch(), virtual),
    saveRouterState: (virtual, state) => void tree.appendCustomEntry<RouterStateData>(ROUTER_STATE, { model: virtual, state }),
    recordAttempt: (attempt) => void tree.appendCustomEntry<RouteAttempt>(ROUTE_ATTEMPT, attempt),
  };
}

/** /model：选择也是分支上的一个条目。查不到的名字不写。 */
export function selectModel(tree: SessionTree, catalog: ModelCatalog, name: string): void {
  catalog.lookup(name);
  sessionLedger(tree).select(name);
}

/** 组合根先造模型、后开会话树：这个 ledger 先收下，树开好之后再接上。接上之前什么也不记。 */
export class LateLedger implements RouteLedger {
  private target: RouteLedger | undefined;

  attach(ledger: RouteLedger): void {
    this.target = ledger;
  }

  selection(): string | undefined {
    return this.target?.selection();
  }

  select(model: string): void {
    if (this.target === undefined) throw new Error("会话还没有打开，不能选择模型。");
    this.target.select(model);
  }

  routerState(virtual: string): unknown {
    return this.target?.routerState(virtual);
  }

  saveRouterState(virtual: string, state: unknown): void {
    this.target?.saveRouterState(virtual, state);
  }

  recordAttempt(attempt: RouteAttempt): void {
    this.target?.recordAttempt(attempt);
  }
}
