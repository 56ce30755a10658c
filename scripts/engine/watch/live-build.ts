import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";

import { removeOrphanOutputs, WatchCompiler, type CompileRound } from "./compiler.js";
import { filesUnder } from "../../kit-cache.mjs";
import { COURSE_PACKAGE } from "../paths.js";
import type { BuildResult } from "../runner.js";

/**
 * watch 的编译调度：什么时候 dist/ 里的输出对应磁盘上最新的源文件、可以拿去测。
 *
 * 一直开着的 tsc --watch 自己也在监视文件，它什么时候重新编译、编译的是哪一刻的文件，
 * 要从它的输出推断。规则只有一条：某次保存改变了某个源文件的内容，就一定要等到一轮
 * 在那次保存之后才开始的编译结束，才运行测试——在那之前 dist/ 里是旧代码。
 * 内容没变的保存（:w、touch）和不属于程序的文件不需要等编译，直接重测。
 * 编译器在给定时间内对一次保存毫无反应、或者自己退出了，就重启它（从空的 dist/ 全量编译）；
 * 反复退出时退回冷编译：每次运行都由检查自己从头编译。
 */
export type Compiled = { build: BuildResult; ms: number };

export interface LiveBuildEvents {
  /** 输出与源文件一致，可以测了；compiled 为 undefined 表示冷编译模式（检查自己编译）。 */
  ready(compiled: Compiled | undefined): void;
  /** 新的一轮编译开始了（或即将开始）：正在跑的测试测的是旧代码，作废。返回是否真的作废了一次运行。 */
  stale(): boolean;
  notice(text: string): void;
}

/** 一次保存之后等编译器开始新一轮的最长时间；超过就重启编译器。 */
export const COMPILER_REACTION_MS = 4_000;
const MAX_RESTARTS = 2;

const SOURCE = /^(src|test)\/.+\.(ts|tsx|mts|cts)$/;
const CONFIG = /^(tsconfig\.json|package\.json)$/;

export class LiveBuild {
  private compiler: WatchCompiler | undefined;
  private mode: "watch" | "cold";
  private readonly hashes = new Map<string, string | null>();
  /** 在等一轮开始于这个时刻之后的编译。 */
  private awaitAfter: number | undefined;
  private latest: CompileRound | undefined;
  private wanted = false;
  private safety: NodeJS.Timeout | undefined;
  private restarts = 0;
  private closed = false;

  private constructor(
    private readonly dir: string,
    cold: boolean,
    private readonly events: LiveBuildEvents,
  ) {
    this.mode = cold ? "cold" : "watch";
  }

  /** cold 为 true 时（--poll：tsc 自己的文件事件在那种文件系统上同样收不到）每次都冷编译。 */
  static async start(dir: string, options: { cold: boolean }, events: LiveBuildEvents): Promise<LiveBuild> {
    const live = new LiveBuild(dir, options.cold, events);
    if (live.mode === "cold") {
      events.ready(undefined);
      return live;
    }
    for (const file of sourceFiles(path.join(dir, COURSE_PACKAGE))) live.hashes.set(file, hashOf(path.join(dir, COURSE_PACKAGE, file)));
    live.wanted = true;
    await live.launch();
    return live;
  }

  get compiling(): "watch" | "cold" {
    return this.mode;
  }

  /** 一批保存（相对 packages/pi-course 的路径），lastEventAt 是最后一个文件事件的时刻。 */
  saved(files: readonly string[], lastEventAt: number): void {
    if (this.closed) return;
    if (this.mode === "cold") {
      this.events.ready(undefined);
      return;
    }
    if (files.some((file) => CONFIG.test(file))) {
      // 编译选项变了：从空的 dist/ 重新开始，旧选项编出的文件一个都不留
      this.events.stale();
      void this.restart();
      return;
    }
    const changed = files.filter((file) => SOURCE.test(file) && this.contentChanged(file));
    this.wanted = true;
    if (changed.length > 0) {
      this.events.stale();
      const busy = this.compiler?.busy ?? false;
      const settled = !busy && this.latest !== undefined && this.latest.startedAt >= lastEventAt;
      if (!settled) {
        this.awaitAfter = lastEventAt;
        // 已经有一轮在这次保存之后开始了：等它结束即可，不必担心编译器没反应
        if (!(busy && (this.compiler?.roundStartedAt ?? 0) >= lastEventAt)) this.armSafety();
      }
    }
    this.pump();
  }

  /** 手动重跑：不等编译，测当前的输出（它已经对应最近看到的源文件）。 */
  rerun(): void {
    if (this.mode === "cold") this.events.ready(undefined);
    else {
      this.wanted = true;
      this.pump();
    }
  }

  /** 文件事件不可用了（改成了轮询）：tsc 的监视多半也失灵，改为冷编译。 */
  toCold(reason: string): void {
    if (this.mode === "cold") return;
    this.mode = "cold";
    this.stopCompiler();
    this.events.notice(reason);
  }

  close(): void {
    this.closed = true;
    this.stopCompiler();
  }

  private contentChanged(file: string): boolean {
    const hash = hashOf(path.join(this.dir, COURSE_PACKAGE, file));
    if (this.hashes.get(file) === hash && this.hashes.has(file)) return false;
    this.hashes.set(file, hash);
    return true;
  }

  private pump(): void {
    if (this.closed || this.mode !== "watch" || !this.wanted) return;
    if (this.awaitAfter !== undefined || this.compiler?.busy || !this.latest) return;
    this.wanted = false;
    removeOrphanOutputs(this.dir);
    this.events.ready({ build: this.latest.build, ms: this.latest.ms });
  }

  private async launch(): Promise<void> {
    rmSync(path.join(this.dir, COURSE_PACKAGE, "dist"), { recursive: true, force: true });
    this.latest = undefined;
    const compiler = await WatchCompiler.start(this.dir, {
      started: () => {
        if (compiler !== this.compiler) return;
        if (this.awaitAfter !== undefined) this.disarmSafety(); // 这一轮开始于保存之后：等它结束即可
        // 正在跑的测试作废；那次运行要在这一轮之后补上。没在跑就不必：
        // 一轮编译本身不是运行的理由（tsc 也会对编辑器的临时 .ts 文件作出反应），保存才是
        if (this.events.stale()) this.wanted = true;
      },
      finished: (round) => {
        if (compiler !== this.compiler) return;
        this.latest = round;
        if (this.awaitAfter !== undefined && round.startedAt >= this.awaitAfter) this.awaitAfter = undefined;
        if (this.awaitAfter !== undefined && round.generation === 1) {
          // 在第一轮编译途中保存的：tsc 那时还没开始监视，不会再为它编译一轮。重新开始最快
          void this.restart();
          return;
        }
        this.pump();
      },
      exited: (code, output) => {
        if (compiler !== this.compiler || this.closed) return;
        this.compiler = undefined;
        this.restarts += 1;
        if (this.restarts > MAX_RESTARTS) {
          this.mode = "cold";
          this.disarmSafety();
          this.events.notice(`tsc --watch 反复退出（${code ?? "信号"}），改为每次冷编译：${lastLine(output)}`);
          this.events.ready(undefined);
          return;
        }
        this.events.notice(`tsc --watch 意外退出（${code ?? "信号"}），已重启`);
        void this.restart();
      },
    });
    if (this.closed) compiler.close();
    else this.compiler = compiler;
  }

  private async restart(): Promise<void> {
    this.stopCompiler();
    this.awaitAfter = undefined;
    this.wanted = true;
    if (this.closed || this.mode !== "watch") return;
    await this.launch();
  }

  private stopCompiler(): void {
    this.disarmSafety();
    const compiler = this.compiler;
    this.compiler = undefined;
    compiler?.close();
  }

  private armSafety(): void {
    this.disarmSafety();
    this.safety = setTimeout(() => {
      this.safety = undefined;
      if (this.closed || this.awaitAfter === undefined) return;
      this.events.notice(`编译器 ${COMPILER_REACTION_MS / 1000} 秒内没有对这次保存作出反应，已重启它`);
      void this.restart();
    }, COMPILER_REACTION_MS);
  }

  private disarmSafety(): void {
    if (this.safety) clearTimeout(this.safety);
    this.safety = undefined;
  }
}

function hashOf(file: string): string | null {
  try {
    return createHash("sha1").update(readFileSync(file)).digest("hex");
  } catch {
    return null; // 不存在（被删掉、改名）
  }
}

/** packages/pi-course 下 src/ 与 test/ 里的源文件（相对路径，/ 分隔）。 */
function sourceFiles(root: string): string[] {
  return ["src", "test"].flatMap((top) => filesUnder(root, top)).filter((file) => SOURCE.test(file));
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

