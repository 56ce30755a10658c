import path from "node:path";

import type { Chapter } from "../chapters.js";
import { COURSE_PACKAGE, KIT_ROOT } from "../paths.js";
import { withPracticeLock } from "../practice-lock.js";
import { fitWatchScreen, type Painter } from "../screen.js";
import { terminalColumns } from "../terminal.js";
import { checkPractice, type PracticeCheck, type RunFileOptions } from "../verify.js";
import { startProgress } from "../../progress-line.mjs";
import { watchTree, type Watcher } from "./file-events.js";
import { LiveBuild, type Compiled } from "./live-build.js";
import { WatchSession } from "./session.js";
import { WarmTests } from "./warm-tests.js";

/** watch 接到哪里：终端（或测试里的管道）与上色的办法。 */
export interface WatchTerminal {
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  paint: Painter;
  /** 管道里的屏高（测试用它模拟 80×24）；终端里用终端自己的行数。 */
  pipeRows?: number;
}

/**
 * 一次 watch 的接线：文件监视（file-events.ts）、一直开着的编译器（live-build.ts）、预热的测试进程与键盘
 * 接到状态机（session.ts）上，它给出的每一屏写到 terminal.stdout。
 * 新的保存让正在跑的测试作废，只画最新那次的结果。
 */
export class WatchRun {
  private readonly state: WatchSession;
  private watcher: Watcher | undefined;
  private live: LiveBuild | undefined;
  private readonly tests = new WarmTests();
  private running: AbortController | undefined;
  private stopped = false;
  private starting: () => void = () => {};
  private finish: () => void = () => {};

  constructor(
    private readonly chapter: Chapter,
    private readonly chapters: readonly Chapter[],
    private readonly dir: string,
    progressFile: string,
    private readonly options: { poll: boolean; intervalMs?: number },
    private readonly terminal: WatchTerminal,
  ) {
    this.state = new WatchSession({ kitRoot: KIT_ROOT, chapter, chapters, dir, progressFile, paint: terminal.paint });
    // 整个文件一次，外加每个实践的 pattern（有失败时单独再跑）：各备一个进程
    this.tests.prepare([undefined, ...chapter.labs.flatMap((lab) => lab.runs.map((run) => run.pattern)).filter((pattern) => pattern !== undefined)]);
  }

  async run(): Promise<void> {
    const stopped = new Promise<void>((resolve) => (this.finish = resolve));
    const stop = () => this.stop();
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    this.listenToKeys();
    this.watcher = watchTree({
      root: path.join(this.dir, COURSE_PACKAGE),
      ignore: (relative) => relative === "dist" || relative.startsWith("dist/") || relative.endsWith(".tsbuildinfo"),
      poll: this.options.poll,
      intervalMs: this.options.intervalMs,
      onChange: (files, lastEventAt) => {
        this.state.saved(files, lastEventAt);
        this.live?.saved(files, lastEventAt);
      },
      onFallback: (reason) => {
        this.state.say(reason);
        this.live?.toCold(reason);
      },
    });
    this.state.mode = this.watcher.mode;
    // 第一屏要等编译器起来、第一次编译和测试跑完（几秒）：终端里先说一句，第一屏画出时擦掉
    this.starting = startProgress(`watch：正在编译 ${this.dir} 并运行第 ${this.chapter.id} 章的聚焦测试`);
    this.live = await LiveBuild.start(
      this.dir,
      { cold: this.watcher.mode === "poll" },
      {
        ready: (compiled) => void this.cycle(compiled),
        stale: () => {
          const running = this.running;
          running?.abort();
          return running !== undefined;
        },
        notice: (text) => this.state.say(text),
      },
    );
    if (this.stopped) this.live.close();
    await stopped;
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }

  private async cycle(compiled: Compiled | undefined): Promise<void> {
    this.running?.abort(); // 上一次还没跑完：它测的已经不是最新的代码
    const controller = new AbortController();
    this.running = controller;
    const options = {
      dir: this.dir,
      chapter: this.chapter,
      chapters: this.chapters,
      scope: "focused" as const,
      signal: controller.signal,
      runFile: (file: string, more: RunFileOptions) => this.tests.run(file, more),
      // 第一处偏差一确定就先画出来：学习者要的答案已经有了，不必等同一文件里其余（可能很慢的）测试
      onSettled: (pending: PracticeCheck) => {
        if (controller.signal.aborted || this.stopped) return;
        this.state.settled(pending, performance.now());
        this.render();
      },
    };
    let outcome: PracticeCheck | Error;
    try {
      outcome = await withPracticeLock(this.dir, () => checkPractice(compiled ? { ...options, compiled } : options));
    } catch (error) {
      outcome = error as Error;
    } finally {
      if (this.running === controller) this.running = undefined;
    }
    if (controller.signal.aborted || this.stopped) return;
    this.state.finished(outcome, performance.now());
    this.render();
  }

  private render(): void {
    this.starting();
    const screen = this.state.screen(new Date().toLocaleTimeString("zh-CN", { hour12: false }));
    // 终端里一屏放下（宽度折行、矮时收起实践列表）；管道里原样输出，每屏之间一条分隔线
    const { stdout, paint, pipeRows } = this.terminal;
    const tty = stdout.isTTY === true;
    const rows = tty && stdout.rows > 0 ? stdout.rows : pipeRows; // 伪终端没设大小时 rows 是 0
    const out = fitWatchScreen(screen, paint, terminalColumns(stdout), rows);
    stdout.write(tty ? "\x1b[2J\x1b[3J\x1b[H" : `${"─".repeat(60)}\n`);
    stdout.write(`${out.join("\n")}\n`);
  }

  /** 只在终端里读键盘；管道和测试里不读。 */
  private listenToKeys(): void {
    const stdin = this.terminal.stdin;
    if (!stdin.isTTY) return;
    this.state.keys = true;
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    stdin.on("data", (key: string) => {
      void this.state.key(key).then((effect) => {
        if (effect === "stop") this.stop();
        else if (effect === "rerun") this.live?.rerun();
        else if (effect === "render") this.render();
      });
    });
  }

  private stop(): void {
    if (this.stopped) return; // Ctrl-C 可能同时从终端和 tsx 的转发各来一次
    this.stopped = true;
    this.watcher?.close();
    this.watcher = undefined;
    this.live?.close();
    this.running?.abort();
    this.tests.close();
    const { stdin, stdout, paint } = this.terminal;
    if (stdin.isTTY) {
      stdin.setRawMode(false);
      stdin.pause();
    }
    stdout.write(`\n${paint("dim", "已停止监视。")}\n`);
    this.finish();
  }
}
