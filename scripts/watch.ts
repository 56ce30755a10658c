import path from "node:path";

import { findChapter, loadChapters, type Chapter } from "./engine/chapters.js";
import { chapterAndDir, paint, runCommandLine, type CommandLine } from "./engine/cli.js";
import { openPracticeSession } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import { LiveBuild, type Compiled } from "./engine/watch/live-build.js";
import { COURSE_PACKAGE, KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { withPracticeLock } from "./engine/practice-lock.js";
import { fitWatchScreen, type Painter } from "./engine/screen.js";
import { terminalColumns } from "./engine/terminal.js";
import { checkPractice, type PracticeCheck, type RunFileOptions } from "./engine/verify.js";
import { WarmTests } from "./engine/watch/warm-tests.js";
import { DEFAULT_POLL_INTERVAL_MS, watchTree, type Watcher } from "./engine/watch/file-events.js";
import { WatchSession } from "./engine/watch/session.js";
import { startProgress } from "./progress-line.mjs";

const HELP = `用法：npm run watch -- <章节> [目录] [--poll] [--interval 毫秒]

边写边测：每次保存练习目录里的文件，就重新编译并运行本章的聚焦测试，
一屏显示当前实践、第一处偏差，以及还有没有提示可看。
编译器一直开着（tsc --watch），一次保存只重新检查受影响的文件；测试总是等这次保存的编译结束才跑，
删掉的源文件留下的旧输出会先清掉。编辑器的临时文件（vim 的 .swp、sed -i、JetBrains、emacs）不触发运行，
一串保存只运行一次。
有测试失败时不等整个文件跑完：第一处偏差一确定（它前面的实践都已通过）就先画出来，其余测试跑完再更新这一屏。
全部通过后用 npm run verify -- <章节> 连同更早章节一起验证并点亮本章。

[目录] 默认与 verify 相同（practice 为本章创建的目录）。

  --poll           定时比较文件，而不是等文件变更事件；
                   用于收不到变更事件的文件系统（WSL 的 /mnt/c、网络盘、某些容器挂载）；
                   这时每次保存都从头编译
  --interval 毫秒  --poll 的检查间隔（默认 ${DEFAULT_POLL_INTERVAL_MS}）
  --help           显示本说明

在终端里运行时的按键（每屏最后一行也会列出）：
  r 或回车 重跑 · h 展开当前实践的下一级提示（全部通过时会说不需要提示）
  x 把本章的一个教学文件还原到起点（先选文件，再按 y 确认；你的版本先移到 .pi-course/backup/，同 npm run reset）
  q 或 Ctrl-C 退出`;

const color: Painter = (style, text) => paint(style, text);

const WATCH_OPTIONS = { poll: { type: "boolean" }, interval: { type: "string" } } as const;

async function main({ values, positionals }: CommandLine<typeof WATCH_OPTIONS>): Promise<void> {
  const [chapterInput, dirInput] = chapterAndDir(positionals);
  const intervalMs = values.interval === undefined ? undefined : parseInterval(values.interval);
  if (intervalMs !== undefined && !values.poll) throw usageError("INTERVAL_WITHOUT_POLL", "--interval 只和 --poll 一起使用");
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, chapterInput);
  const { dir, file } = openPracticeSession(chapter, dirInput);

  await new Session(chapter, chapters, dir, file, { poll: values.poll ?? false, ...(intervalMs ? { intervalMs } : {}) }).run();
}

/**
 * 一次 watch 的接线：文件监视、一直开着的编译器（engine/live-build.ts）、预热的测试进程与键盘
 * 接到状态机（engine/watch-session.ts）上，它给出的每一屏写到终端。
 * 新的保存让正在跑的测试作废，只画最新那次的结果。
 */
class Session {
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
  ) {
    this.state = new WatchSession({ kitRoot: KIT_ROOT, chapter, chapters, dir, progressFile, paint: color });
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
      ...(this.options.intervalMs ? { intervalMs: this.options.intervalMs } : {}),
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
    const tty = process.stdout.isTTY === true;
    const rows = tty && process.stdout.rows > 0 ? process.stdout.rows : screenRows(); // 伪终端没设大小时 rows 是 0
    const out = fitWatchScreen(screen, color, terminalColumns(process.stdout), rows);
    process.stdout.write(tty ? "\x1b[2J\x1b[3J\x1b[H" : `${"─".repeat(60)}\n`);
    process.stdout.write(`${out.join("\n")}\n`);
  }

  /** 只在终端里读键盘；管道和测试里不读。 */
  private listenToKeys(): void {
    const stdin = process.stdin;
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
    if (process.stdin.isTTY) {
      process.stdin.setRawMode(false);
      process.stdin.pause();
    }
    process.stdout.write(`\n${paint("dim", "已停止监视。")}\n`);
    this.finish();
  }
}

function parseInterval(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < 50 || value > 60_000) {
    throw usageError("INTERVAL_INVALID", `--interval 应当是 50 到 60000 之间的毫秒数，收到了 “${text}”`);
  }
  return value;
}


await runCommandLine(HELP, WATCH_OPTIONS, main);

/** 管道里的屏高：只有 PI_COURSE_ROWS 给定时才按它收起（测试用它模拟 80×24）。 */
function screenRows(): number | undefined {
  const rows = Number(process.env.PI_COURSE_ROWS);
  return Number.isInteger(rows) && rows > 0 ? rows : undefined;
}
