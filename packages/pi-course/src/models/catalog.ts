/**
 * 模型目录：一个名字指向什么。物理模型是“哪个 Provider 的哪个模型”（两个 Provider 可以提供同一个 id），
 * 虚拟模型只是一个名字加一个路由函数：每次请求由它挑一个物理模型。
 *
 * 查不到、有歧义、名字重复，都是说清楚的错误；目录从不猜。
 */

import type { AssistantMessage, Message, Model } from "../types.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 思考的档位，从低到高；物理模型声明它支持哪几档。 */
export type ThinkingLevel = "off" | "low" | "medium" | "high";
export const THINKING_LEVELS: readonly ThinkingLevel[] = ["off", "low", "medium", "high"];

export interface PhysicalModelSpec {
  /** 谁提供它：计费、鉴权、消息里的签名都归这个 Provider。 */
  provider: string;
  /** Provider 那边的模型名：两个 Provider 可以用同一个。 */
  id: string;
  /** 一次请求最多多少 token；省略表示不检查。 */
  contextWindow?: number;
  /** 支持的思考档位；省略时只有 off。 */
  thinking?: readonly ThinkingLevel[];
  /** 造出真正发请求的模型（第 05 章的适配器、脚本模型……）。 */
  create: () => Model;
}

/** 为什么要这次请求：用户刚说了话、工具结果回来了、上一次失败了要重试，或者是压缩与扩展直接发起的调用。 */
export type RouteReason = "user" | "continuation" | "retry" | "direct";

export interface RouteRequest {
  reason: RouteReason;
  /** 这次请求要发的消息（已经过循环的两道闸）。 */
  messages: readonly Message[];
  /** transcript 里最近的一条 assistant：上一次是谁回答的。 */
  previous?: AssistantMessage;
  /** reason 为 retry 时：刚刚失败的那次回复。 */
  failed?: AssistantMessage;
  /** 这个虚拟模型在当前分支上存下的状态；从没存过是 undefined。 */
  state: unknown;
}

export interface RouteDecision {
  /** 一个物理模型，或按顺序排好的几个（后面的是重试时的备选）。写 "provider/id"，id 在目录里唯一时也可以只写 id。 */
  models: string | readonly string[];
  /** 给出了就存进当前分支，下一次请求的 state 就是它。 */
  state?: unknown;
}

export interface VirtualModelSpec {
  name: string;
  route: (request: RouteRequest) => RouteDecision | Promise<RouteDecision>;
}

/** 目录里登记好的物理模型：key 是 "provider/id"。 */
export interface PhysicalModel extends PhysicalModelSpec {
  readonly key: string;
}

export type CatalogEntry = { kind: "physical"; model: PhysicalModel } | { kind: "virtual"; model: VirtualModelSpec };

export class ModelLookupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ModelLookupError";
  }
}

// ── 目录 ────────────────────────────────────────────────────────

export function physicalKey(provider: string, id: string): string {
  return `${provider}/${id}`;
}

export class ModelCatalog {
  private readonly physical = new Map<string, PhysicalModel>();
  private readonly virtual = new Map<string, VirtualModelSpec>();
  /** 已经造出来的模型：同一个物理模型只 create 一次。 */
  private readonly created = new Map<string, Model>();

  addPhysical(spec: PhysicalModelSpec): PhysicalModel {
    // #region lab 18.1
    const key = physicalKey(spec.provider, spec.id);
    if (this.physical.has(key) || this.virtual.has(key)) throw new ModelLookupError(`Model ${key} is already in the catalog.`);
    const model: PhysicalModel = { ...spec, key };
    this.physical.set(key, model);
    return model;
    // #endregion
  }

  addVirtual(spec: VirtualModelSpec): VirtualModelSpec {
    // #region lab 18.1
    if (this.virtual.has(spec.name) || this.physical.has(spec.name)) {
      throw new ModelLookupError(`Model ${spec.name} is already in the catalog.`);
    }
    this.virtual.set(spec.name, spec);
    return spec;
    // #endregion
  }

  /** 先按全名（"provider/id" 或虚拟模型的名字）找；再把它当作裸 id，恰好一个 Provider 提供它才算找到。 */
  lookup(name: string): CatalogEntry {
    // #region lab 18.1
    const virtual = this.virtual.get(name);
    if (virtual !== undefined) return { kind: "virtual", model: virtual };
    const exact = this.physical.get(name);
    if (exact !== undefined) return { kind: "physical", model: exact };
    const byId = [...this.physical.values()].filter((model) => model.id === name);
    if (byId.length === 1) return { kind: "physical", model: byId[0]! };
    if (byId.length > 1) {
      const keys = byId.map((model) => model.key).join(", ");
      throw new ModelLookupError(`Model id ${name} is ambiguous: served by ${keys}; write provider/id.`);
    }
    throw new ModelLookupError(`Unknown model ${name}: not in the catalog.`);
    // #endregion
  }

  /** 路由只能落到物理模型上：名字指向虚拟模型也是错误。 */
  physicalModel(name: string): PhysicalModel {
    // #region lab 18.1
    const entry = this.lookup(name);
    if (entry.kind === "virtual") throw new ModelLookupError(`Model ${name} is virtual: a route must name a physical model.`);
    return entry.model;
    // #endregion
  }

  /** 物理模型真正发请求的那个 Model；第一次用到时才 create。 */
  instance(model: PhysicalModel): Model {
    let made = this.created.get(model.key);
    if (made === undefined) {
      made = model.create();
      this.created.set(model.key, made);
    }
    return made;
  }

  names(): string[] {
    return [...this.physical.keys(), ...this.virtual.keys()];
  }
}
