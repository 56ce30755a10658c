import path from "node:path";

import { findChapter, loadChapters, type Chapter } from "./engine/chapters.js";
import { chapterAndDir, paint, runCommand, parseCommandLine } from "./engine/cli.js";
import { openPracticeSession } from "./engine/course.js";
import { isCourseError, usageError } from "./engine/errors.js";
import { LADDER_HEIGHT, revealHint } from "./engine/hints.js";
import { currentLab } from "./engine/labs.js";
import { labPrediction } from "./engine/lesson.js";
import { ensureHistory } from "./engine/history.js";
import { COURSE_PACKAGE, KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { readPracticeMarker } from "./engine/practice.js";
import { alreadyAtStart, resetFile, resetQuestion, startContent } from "./engine/reset.js";
import { withPracticeLock } from "./engine/practice-lock.js";
import { emptyProgress, hintsShown, inspectProgress } from "./engine/progress.js";
import { buildLine, deviationLines, fitWatchScreen, hintLine, inlineMarkdown, seconds, watchFooter, type Painter } from "./engine/screen.js";
import { terminalColumns } from "./engine/terminal.js";
import { startProgress } from "./progress-line.mjs";
import { checkPractice, type PracticeCheck, type RunFileOptions } from "./engine/verify.js";
import { LiveBuild, type Compiled } from "./engine/live-build.js";
import { WarmTests } from "./engine/warm-tests.js";
import { DEFAULT_POLL_INTERVAL_MS, watchTree, type Watcher } from "./engine/watch.js";

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

async function main(): Promise<void> {
  const { values, positionals } = parseCommandLine({ poll: { type: "boolean" }, interval: { type: "string" } });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const [chapterInput, dirInput] = chapterAndDir(positionals);
  const intervalMs = values.interval === undefined ? undefined : parseInterval(values.interval);
  if (intervalMs !== undefined && !values.poll) throw usageError("INTERVAL_WITHOUT_POLL", "--interval 只和 --poll 一起使用");
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, chapterInput);
  const { dir, file } = openPracticeSession(chapter, dirInput);

  await new Session(chapter, chapters, dir, file, { poll: values.poll ?? false, ...(intervalMs ? { intervalMs } : {}) }).run();
}

/**
 * 一次 watch：一直开着的编译器（见 engine/live-build.ts）给出与源文件一致的输出，
 * 每次就绪就运行本章的聚焦测试；新的保存让正在跑的测试作废，只画最新那次的结果。
 */
class Session {
  private watcher: Watcher | undefined;
  private live: LiveBuild | undefined;
  private readonly tests: WarmTests;
  private running: AbortController | undefined;
  private runs = 0;
  private trigger: string[] = [];
  /** 当前的触发是否已经画在屏幕上了。 */
  private shownTrigger = true;
  /** 触发这次运行的保存发生在什么时刻：屏幕上的用时从这里算起（保存 → 结果）。 */
  private savedAt = performance.now();
  private last: PracticeCheck | undefined;
  private shownHint: string[] = [];
  private notice = "";
  /** x 键的还原：先选文件，再确认（与 npm run reset 问同一句）。 */
  private resetting: { stage: "choose" } | { stage: "confirm"; file: string; start: Buffer | undefined } | undefined;
  private resetLines: string[] = [];
  private stopped = false;
  private lastMs = 0;
  private starting: () => void = () => {};
  /** 是否在读键盘（只在终端里）；决定页脚要不要列出按键。 */
  private keys = false;
  private finish: () => void = () => {};

  constructor(
    private readonly chapter: Chapter,
    private readonly chapters: readonly Chapter[],
    private readonly dir: string,
    private readonly progressFile: string,
    private readonly options: { poll: boolean; intervalMs?: number },
  ) {
    this.tests = new WarmTests();
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
      onChange: (files, lastEventAt) => this.saved(files, lastEventAt),
      onFallback: (reason) => {
        this.notice = reason;
        this.live?.toCold(reason);
      },
    });
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
        notice: (text) => {
          this.notice = text;
        },
      },
    );
    if (this.stopped) this.live.close();
    await stopped;
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }

  private saved(files: string[], lastEventAt: number): void {
    // 上一批还没画出结果（那次运行被这一批作废了）：两批一起算作这次的触发
    const earlier = this.shownTrigger ? [] : this.trigger;
    this.shownTrigger = false;
    this.trigger = [...new Set([...earlier, ...files.map((file) => `${COURSE_PACKAGE}/${file}`)])].sort();
    this.savedAt = lastEventAt;
    this.shownHint = [];
    this.live?.saved(files, lastEventAt);
  }

  private rerun(): void {
    this.trigger = ["（手动重跑）"];
    this.shownTrigger = false;
    this.savedAt = performance.now();
    this.shownHint = [];
    this.live?.rerun();
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
        this.last = pending;
        this.render(performance.now() - this.savedAt);
      },
    };
    try {
      const check = await withPracticeLock(this.dir, () => checkPractice(compiled ? { ...options, compiled } : options));
      if (controller.signal.aborted || this.stopped) return;
      this.last = check;
    } catch (error) {
      if (controller.signal.aborted || this.stopped) return;
      this.last = undefined;
      this.notice = `这次运行出错了：${(error as Error).message}`;
    } finally {
      if (this.running === controller) this.running = undefined;
    }
    this.runs += 1;
    this.shownTrigger = true;
    this.render(performance.now() - this.savedAt);
  }

  private render(ms: number): void {
    this.starting();
    this.lastMs = ms;
    const { chapter } = this;
    const inspected = inspectProgress(this.progressFile); // 只读：每次重跑都看一眼，另一个终端里的 hint、verify 也算数
    const progress = inspected.state === "ok" ? inspected.progress : undefined;
    const top = [paint("bold", `第 ${chapter.id} 章 · ${chapter.title}`) + paint("dim", "  · watch"), paint("dim", `练习目录：${this.dir}`)];
    const body: string[] = [];
    const check = this.last;
    let labs: PracticeCheck["labs"] = [];
    if (check) {
      const lit = this.chapters.filter((other) => progress?.verified[other.id] !== undefined).length;
      const done = check.labs.filter((result) => result.ok).length;
      top.push(paint("dim", `进度：本章实践 ${done}/${check.labs.length} 通过 · 已点亮 ${lit}/${this.chapters.length} 章`), "", buildLine(check, color));
      labs = check.labs;
      body.push("");
      const failing = currentLab(check.labs);
      if (check.passed || (!failing && !check.deviation)) {
        body.push(paint("green", `✓ 聚焦测试全部通过（${check.focused.length}/${chapter.focusedTest.count}）。`));
        body.push(`下一步：${paint("cyan", `npm run verify -- ${chapter.id}`)} 连同更早章节一起验证，并点亮本章。`);
        if (this.shownHint.length > 0) body.push("", ...this.shownHint);
      } else {
        if (failing) {
          body.push(paint("bold", `当前实践：${failing.lab.id} · ${failing.lab.title}`));
          body.push(`  目标：${inlineMarkdown(failing.lab.goal, color)}`);
        }
        if (check.deviation) {
          body.push(paint("bold", "第一处偏差："));
          for (const line of deviationLines(check.deviation, { kitRoot: KIT_ROOT, dir: this.dir }, color)) body.push(`  ${line}`);
        }
        if (failing) {
          const shown = progress ? hintsShown(progress, chapter.id, failing.lab.id) : 0;
          body.push("", hintLine(chapter, failing.lab, shown, color, this.keys ? "h" : undefined));
          const prediction = labPrediction(chapter, failing.lab.id);
          if (prediction) body.push(paint("dim", `  先预测（课文「实践 ${failing.lab.id}」一节）：${inlineMarkdown(prediction, color)}`));
        }
        if (this.shownHint.length > 0) body.push("", ...this.shownHint);
      }
    }
    if (this.resetLines.length > 0) body.push("", ...this.resetLines);
    if (this.notice) body.push("", paint("yellow", this.notice));
    const time = new Date().toLocaleTimeString("zh-CN", { hour12: false });
    const cause = this.trigger.length > 0 ? ` · 触发：${this.trigger.slice(0, 3).join("、")}${this.trigger.length > 3 ? " 等" : ""}` : "";
    const bottom = [""];
    if (check?.pending) {
      bottom.push(paint("dim", `[${time}] 第 ${this.runs + 1} 次运行 · ${seconds(ms)} 时定下了第一处偏差${cause}`));
      bottom.push(paint("dim", "其余测试还在运行，跑完后这一屏会更新"));
    } else {
      bottom.push(paint("dim", `[${time}] 第 ${this.runs} 次运行 · 用时 ${seconds(ms)}${cause}`));
      bottom.push(paint("dim", watchFooter(this.watcher?.mode ?? "poll", this.keys)));
    }
    // 终端里一屏放下（宽度折行、矮时收起实践列表）；管道里原样输出，每屏之间一条分隔线
    const tty = process.stdout.isTTY === true;
    const columns = terminalColumns(process.stdout);
    const rows = tty && process.stdout.rows > 0 ? process.stdout.rows : screenRows(); // 伪终端没设大小时 rows 是 0
    const out = fitWatchScreen({ top, labs, body, bottom }, color, columns, rows);
    if (tty) process.stdout.write("\x1b[2J\x1b[3J\x1b[H");
    else process.stdout.write(`${"─".repeat(60)}\n`);
    process.stdout.write(`${out.join("\n")}\n`);
  }

  /** 在终端里：r/回车 重跑，h 看下一级提示，q/Ctrl-C 退出。管道和测试里不读键盘。 */
  private listenToKeys(): void {
    const stdin = process.stdin;
    if (!stdin.isTTY) return;
    this.keys = true;
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    stdin.on("data", (key: string) => {
      if (key === "\u0003") this.stop();
      else if (this.resetting) void this.answerReset(key);
      else if (key === "q") this.stop();
      else if (key === "r" || key === "\r" || key === "\n") {
        this.resetLines = [];
        this.rerun();
      } else if (key === "h") {
        this.resetLines = [];
        this.revealHint();
      } else if (key === "x") void this.offerReset();
    });
  }

  private revealHint(): void {
    const check = this.last;
    if (!check) return; // 第一次运行还没结束，或者刚才那次出错了
    const failing = currentLab(check.labs);
    const { chapter } = this;
    if (!failing) {
      // 没有没通过的实践：要么全绿，要么偏差不属于任何实践（看上面的第一处偏差）
      this.shownHint = [check.deviation ? "没有哪个实践没通过，所以没有提示可给：先看上面的第一处偏差。" : paint("green", "聚焦测试全部通过，不需要提示。")];
      this.render(this.lastMs);
      return;
    }
    try {
      const inspected = inspectProgress(this.progressFile);
      const progress = inspected.state === "ok" ? inspected.progress : emptyProgress();
      const { step, warning } = revealHint(this.progressFile, progress, chapter, failing.lab);
      this.shownHint = [paint("cyan", `提示 ${step.level}/${LADDER_HEIGHT} · ${step.name}`), ...step.text.split("\n").map((line) => `  ${line}`)];
      if (warning) this.notice = warning;
    } catch (error) {
      if (!isCourseError(error)) throw error;
      this.notice = error.message; // 进度写不进去：提示照样不给出来，但监视继续
    }
    this.render(this.lastMs);
  }

  /** x：本章只有一个教学文件时直接问，否则先列出来按数字选。 */
  private async offerReset(): Promise<void> {
    const files = this.chapter.teachingFiles;
    if (files.length === 1 && files[0] !== undefined) return this.askReset(files[0]);
    this.resetting = { stage: "choose" };
    this.resetLines = [
      paint("bold", "还原哪个文件到本章起点？按数字选择，其他键取消："),
      ...files.map((file, index) => `  ${index + 1}  ${file}`),
    ];
    this.render(this.lastMs);
  }

  private async askReset(file: string): Promise<void> {
    try {
      const marker = readPracticeMarker(this.dir);
      if (!marker) throw new Error("练习目录的标记不见了");
      const history = await ensureHistory(KIT_ROOT, this.chapters);
      const start = await startContent(KIT_ROOT, this.chapter, history, this.dir, marker, file);
      if (alreadyAtStart(this.dir, file, start)) {
        this.resetting = undefined;
        this.resetLines = [`${file} 已经是本章起点的样子，什么也没做。`];
      } else {
        this.resetting = { stage: "confirm", file, start };
        this.resetLines = [paint("yellow", resetQuestion(file, start)), "按 y 确认，其他键取消。"];
      }
    } catch (error) {
      this.resetting = undefined;
      this.resetLines = [`没能还原：${(error as Error).message}`];
    }
    this.render(this.lastMs);
  }

  private async answerReset(key: string): Promise<void> {
    const state = this.resetting;
    if (state?.stage === "choose") {
      const file = this.chapter.teachingFiles[Number(key) - 1];
      if (/^[1-9]$/.test(key) && file !== undefined) return this.askReset(file);
    } else if (state?.stage === "confirm" && (key === "y" || key === "Y")) {
      this.resetting = undefined;
      try {
        const outcome = resetFile(this.dir, state.file, state.start);
        this.resetLines =
          outcome.kind === "unchanged"
            ? [`${state.file} 已经是本章起点的样子，什么也没做。`]
            : [
                paint("green", outcome.removed ? `已还原 ${state.file}：起点时还没有这个文件，现在它不在了。` : `已把 ${state.file} 还原到本章起点。`),
                ...(outcome.backup ? [`你的版本在 ${path.join(this.dir, outcome.backup)}（要拿回来：把它挪回原处）。`] : []),
              ];
      } catch (error) {
        this.resetLines = [`没能还原：${(error as Error).message}`];
      }
      this.render(this.lastMs);
      return; // 文件变了：监视会照常重跑
    }
    this.resetting = undefined;
    this.resetLines = ["没有还原，文件原样未动。"];
    this.render(this.lastMs);
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


await runCommand(main);

/** 管道里的屏高：只有 PI_COURSE_ROWS 给定时才按它收起（测试用它模拟 80×24）。 */
function screenRows(): number | undefined {
  const rows = Number(process.env.PI_COURSE_ROWS);
  return Number.isInteger(rows) && rows > 0 ? rows : undefined;
}
