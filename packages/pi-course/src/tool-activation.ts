/**
 * deferred 工具的加载与卸载。
 *
 * 三百个工具全写进请求，每次请求都要为它们的定义付 token，模型也更容易挑错。deferred 工具先不声明，
 * 等 tool_search 找到它们才加载：加载的工具从下一次请求起声明（第 09 章的 system 补丁），
 * 已声明的工具有一个上限，超了就卸载最久没用过的那个。
 *
 * 这里回答两个问题，答案的来源不同：
 *   loaded    下一次请求该声明哪些：由 load() 与上限决定，记着每个工具最近一次使用。
 *   declared  transcript 此刻声明了哪些：每次都从 transcript 重放，从不另记一份。
 * 模型能不能直接调用一个 deferred 工具，看的是 declared：它只能调用请求里见过的工具。
 */

import type { AgentTool, DeferredState } from "./tools.js";
import { currentTools, type AgentMessage } from "./types.js";

export interface ToolActivationOptions {
  /** 同时加载的 deferred 工具最多几个；默认 8。 */
  maxLoaded?: number;
}

/** 一次加载的结果：这次加载的，以及为了守住上限卸载的。 */
export interface ActivationChange {
  loaded: string[];
  unloaded: string[];
}

export const DEFAULT_MAX_LOADED = 8;

/** 谁的 transcript 说了算：Agent 就是一个（它的 state.messages 随每个事件更新）。 */
export interface TranscriptSource {
  readonly state: { readonly messages: readonly AgentMessage[] };
}

export class ToolActivation {
  readonly maxLoaded: number;
  /** 交给 Agent 的 deferred 工具：带着 DeferredState，执行时记一次使用。 */
  readonly tools: readonly AgentTool<any>[];
  /** 名字 → 最近一次使用的序号；Map 的顺序无关紧要，淘汰看序号。 */
  private readonly lastUse = new Map<string, number>();
  private clock = 0;
  private source: TranscriptSource | undefined;

  constructor(tools: readonly AgentTool<any>[], options: ToolActivationOptions = {}) {
    this.maxLoaded = options.maxLoaded ?? DEFAULT_MAX_LOADED;
    if (!Number.isInteger(this.maxLoaded) || this.maxLoaded < 1) {
      throw new Error(`maxLoaded 必须是正整数（收到 ${String(options.maxLoaded)}）：至少要能加载一个 deferred 工具。`);
    }
    this.tools = tools.map((tool) => this.deferredView(tool));
  }

  isLoaded(name: string): boolean {
    return this.lastUse.has(name);
  }

  /** 没有跟着任何 transcript 时，什么都没声明过。 */
  isDeclared(name: string): boolean {
    // #region lab 15.4
    if (this.source === undefined) return false;
    return this.declaredIn(this.source.state.messages).includes(name);
    // #endregion
  }

  /** 已加载的工具，最久没用的在前。 */
  get loadedNames(): string[] {
    return [...this.lastUse.entries()].sort((a, b) => a[1] - b[1]).map(([name]) => name);
  }

  /**
   * 加载这些工具（已经加载的算一次使用），然后守住上限：超出的部分从最久没用的开始卸载。
   * 不认识的名字抛错：只有登记在这里的 deferred 工具才能加载。
   */
  load(names: readonly string[]): ActivationChange {
    // #region lab 15.4
    const known = new Set(this.tools.map((tool) => tool.name));
    for (const name of names) {
      if (!known.has(name)) throw new Error(`${name} 不是登记过的 deferred 工具，不能加载。`);
    }
    const loaded = names.filter((name) => !this.isLoaded(name));
    for (const name of names) this.touch(name);
    const unloaded: string[] = [];
    for (const name of this.loadedNames) {
      if (this.lastUse.size <= this.maxLoaded) break;
      this.lastUse.delete(name);
      unloaded.push(name);
    }
    return { loaded: loaded.filter((name) => this.isLoaded(name)), unloaded };
    // #endregion
  }

  /**
   * 跟着一份 transcript（通常是 Agent）：此后 isDeclared 每次都从它重放。
   * 续上的会话（第 10 章）里已经声明过的 deferred 工具，此刻就算已加载，按声明的先后排：声明集与上次一模一样。
   */
  follow(source: TranscriptSource): void {
    // #region lab 15.4
    this.source = source;
    this.lastUse.clear();
    for (const name of this.declaredIn(source.state.messages)) this.touch(name);
    // #endregion
  }

  private touch(name: string): void {
    this.clock += 1;
    this.lastUse.set(name, this.clock);
  }

  private deferredView(tool: AgentTool<any>): AgentTool<any> {
    const state: DeferredState = {
      isLoaded: () => this.isLoaded(tool.name),
      isDeclared: () => this.isDeclared(tool.name),
    };
    return {
      ...tool,
      exposure: "deferred",
      deferred: state,
      execute: (args, context) => {
        // 被调用就是被用到：它成了最近用过的，上限逼近时最后才轮到它。
        if (this.isLoaded(tool.name)) this.touch(tool.name);
        return tool.execute(args, context);
      },
    };
  }

  // #region lab 15.4 辅助
  /** transcript 此刻声明的工具里，哪些是登记在这里的 deferred 工具；按声明的先后。 */
  private declaredIn(messages: readonly AgentMessage[]): string[] {
    const mine = new Set(this.tools.map((tool) => tool.name));
    return currentTools(messages)
      .map((tool) => tool.name)
      .filter((name) => mine.has(name));
  }
  // #endregion
}
