import path from "node:path";

import type { Chapter } from "../chapters.js";
import { isCourseError } from "../errors.js";
import { LADDER_HEIGHT, revealHint } from "../hints.js";
import { ensureHistory } from "../history.js";
import { currentLab } from "../labs.js";
import { labPrediction } from "../lesson.js";
import { COURSE_PACKAGE } from "../paths.js";
import { readPracticeMarker } from "../practice.js";
import { emptyProgress, hintsShown, inspectProgress, type Progress } from "../progress.js";
import { alreadyAtStart, resetFile, resetQuestion, startContent } from "../reset.js";
import { buildLine, deviationLines, hintLine, inlineMarkdown, seconds, watchFooter, type Painter, type WatchScreen } from "../screen.js";
import type { PracticeCheck } from "../verify.js";

/**
 * watch 的状态机：保存、编译好的结果、测试的进展与按键进来，一屏一屏的内容出去。
 * 它不碰终端、不开进程：命令（scripts/watch.ts）把文件监视、常开的编译器、预热的测试进程和键盘接到这里，
 * 再把 screen() 交给终端。所以按键与还原的规则可以在进程内测试。
 */
export interface WatchSessionOptions {
  kitRoot: string;
  chapter: Chapter;
  chapters: readonly Chapter[];
  dir: string;
  progressFile: string;
  paint: Painter;
}

/** 按键之后命令要做的事：重跑、退出，或者只是重画一屏。 */
export type KeyEffect = "rerun" | "stop" | "render" | "none";

type Resetting = { stage: "choose" } | { stage: "confirm"; file: string; start: Buffer | undefined };

export class WatchSession {
  /** 是否在读键盘（只在终端里）；决定页脚与提示行要不要列出按键。 */
  keys = false;
  /** 文件监视用的方式（页脚里说）。 */
  mode: "events" | "poll" = "events";
  private runs = 0;
  private trigger: string[] = [];
  /** 当前的触发是否已经画在屏幕上了。 */
  private shownTrigger = true;
  /** 触发这次运行的保存发生在什么时刻：屏幕上的用时从这里算起（保存 → 结果）。 */
  private savedAt = performance.now();
  private last: PracticeCheck | undefined;
  private lastMs = 0;
  private shownHint: string[] = [];
  private notice = "";
  /** x 键的还原：先选文件，再确认（与 npm run reset 问同一句）。 */
  private resetting: Resetting | undefined;
  private resetLines: string[] = [];

  constructor(private readonly options: WatchSessionOptions) {}

  /** 一批保存（相对 packages/pi-course 的路径）：上一批还没画出结果时（那次运行被作废了），两批一起算作触发。 */
  saved(files: readonly string[], at: number): void {
    const earlier = this.shownTrigger ? [] : this.trigger;
    this.shownTrigger = false;
    this.trigger = [...new Set([...earlier, ...files.map((file) => `${COURSE_PACKAGE}/${file}`)])].sort();
    this.savedAt = at;
    this.shownHint = [];
  }

  /** 一条要让学习者看到的说明（编译器退回冷启动、进度写不进去……），留在屏幕上直到被下一条替换。 */
  say(notice: string): void {
    this.notice = notice;
  }

  /** 第一处偏差已经定下、其余测试还在跑：先画这一屏。 */
  settled(pending: PracticeCheck, now: number): void {
    this.last = pending;
    this.lastMs = now - this.savedAt;
  }

  /** 一次运行结束：结果，或者运行本身出了错。 */
  finished(outcome: PracticeCheck | Error, now: number): void {
    if (outcome instanceof Error) {
      this.last = undefined;
      this.notice = `这次运行出错了：${outcome.message}`;
    } else {
      this.last = outcome;
    }
    this.runs += 1;
    this.shownTrigger = true;
    this.lastMs = now - this.savedAt;
  }

  /** 在终端里：r/回车 重跑，h 看下一级提示，x 还原一个教学文件，q/Ctrl-C 退出。 */
  async key(key: string, now: number = performance.now()): Promise<KeyEffect> {
    if (key === "\u0003") return "stop";
    if (this.resetting) return this.answerReset(key);
    if (key === "q") return "stop";
    if (key === "r" || key === "\r" || key === "\n") {
      this.resetLines = [];
      this.trigger = ["（手动重跑）"];
      this.shownTrigger = false;
      this.savedAt = now;
      this.shownHint = [];
      return "rerun";
    }
    if (key === "h") {
      this.resetLines = [];
      return this.revealHint();
    }
    if (key === "x") return this.offerReset();
    return "none";
  }

  /** 这一屏的内容（还没按终端的宽高收拢）。time 是屏幕底部显示的钟点。 */
  screen(time: string): WatchScreen {
    const { chapter, chapters, paint } = this.options;
    const inspected = inspectProgress(this.options.progressFile); // 只读：每次重画都看一眼，另一个终端里的 hint、verify 也算数
    const progress = inspected.state === "ok" ? inspected.progress : undefined;
    const top = [paint("bold", `第 ${chapter.id} 章 · ${chapter.title}`) + paint("dim", "  · watch"), paint("dim", `练习目录：${this.options.dir}`)];
    const body: string[] = [];
    const check = this.last;
    if (check) {
      const lit = chapters.filter((other) => progress?.verified[other.id] !== undefined).length;
      const done = check.labs.filter((result) => result.ok).length;
      top.push(paint("dim", `进度：本章实践 ${done}/${check.labs.length} 通过 · 已点亮 ${lit}/${chapters.length} 章`), "", buildLine(check, paint));
      body.push("", ...this.resultLines(check, progress));
    }
    if (this.resetLines.length > 0) body.push("", ...this.resetLines);
    if (this.notice) body.push("", paint("yellow", this.notice));
    const cause = this.trigger.length > 0 ? ` · 触发：${this.trigger.slice(0, 3).join("、")}${this.trigger.length > 3 ? " 等" : ""}` : "";
    const bottom = [""];
    if (check?.pending) {
      bottom.push(paint("dim", `[${time}] 第 ${this.runs + 1} 次运行 · ${seconds(this.lastMs)} 时定下了第一处偏差${cause}`));
      bottom.push(paint("dim", "其余测试还在运行，跑完后这一屏会更新"));
    } else {
      bottom.push(paint("dim", `[${time}] 第 ${this.runs} 次运行 · 用时 ${seconds(this.lastMs)}${cause}`));
      bottom.push(paint("dim", watchFooter(this.mode, this.keys)));
    }
    return { top, labs: check?.labs ?? [], body, bottom };
  }

  /** 全部通过时说下一步；否则是当前实践、第一处偏差、提示行与预测问题。 */
  private resultLines(check: PracticeCheck, progress: Progress | undefined): string[] {
    const { chapter, paint, kitRoot, dir } = this.options;
    const lines: string[] = [];
    const failing = currentLab(check.labs);
    if (check.passed || (!failing && !check.deviation)) {
      lines.push(paint("green", `✓ 聚焦测试全部通过（${check.focused.length}/${chapter.focusedTest.count}）。`));
      lines.push(`下一步：${paint("cyan", `npm run verify -- ${chapter.id}`)} 连同更早章节一起验证，并点亮本章。`);
      if (this.shownHint.length > 0) lines.push("", ...this.shownHint);
      return lines;
    }
    if (failing) {
      lines.push(paint("bold", `当前实践：${failing.lab.id} · ${failing.lab.title}`));
      lines.push(`  目标：${inlineMarkdown(failing.lab.goal, paint)}`);
    }
    if (check.deviation) {
      lines.push(paint("bold", "第一处偏差："));
      for (const line of deviationLines(check.deviation, { kitRoot, dir }, paint)) lines.push(`  ${line}`);
    }
    if (failing) {
      const shown = progress ? hintsShown(progress, chapter.id, failing.lab.id) : 0;
      lines.push("", hintLine(chapter, failing.lab, shown, paint, this.keys ? "h" : undefined));
      const prediction = labPrediction(chapter, failing.lab.id);
      if (prediction) lines.push(paint("dim", `  先预测（课文「实践 ${failing.lab.id}」一节）：${inlineMarkdown(prediction, paint)}`));
    }
    if (this.shownHint.length > 0) lines.push("", ...this.shownHint);
    return lines;
  }

  /** h：当前实践的下一级提示（与 npm run hint 同一处展开、同一份进度）。 */
  private revealHint(): KeyEffect {
    const check = this.last;
    if (!check) return "none"; // 第一次运行还没结束，或者刚才那次出错了
    const { chapter, paint, progressFile } = this.options;
    const failing = currentLab(check.labs);
    if (!failing) {
      // 没有没通过的实践：要么全绿，要么偏差不属于任何实践（看上面的第一处偏差）
      this.shownHint = [check.deviation ? "没有哪个实践没通过，所以没有提示可给：先看上面的第一处偏差。" : paint("green", "聚焦测试全部通过，不需要提示。")];
      return "render";
    }
    try {
      const inspected = inspectProgress(progressFile);
      const { step, warning } = revealHint(progressFile, inspected.state === "ok" ? inspected.progress : emptyProgress(), chapter, failing.lab);
      this.shownHint = [paint("cyan", `提示 ${step.level}/${LADDER_HEIGHT} · ${step.name}`), ...step.text.split("\n").map((line) => `  ${line}`)];
      if (warning) this.notice = warning;
    } catch (error) {
      if (!isCourseError(error)) throw error;
      this.notice = error.message; // 进度写不进去：提示照样不给出来，但监视继续
    }
    return "render";
  }

  /** x：本章只有一个教学文件时直接问，否则先列出来按数字选。 */
  private async offerReset(): Promise<KeyEffect> {
    const files = this.options.chapter.teachingFiles;
    if (files.length === 1 && files[0] !== undefined) return this.askReset(files[0]);
    this.resetting = { stage: "choose" };
    this.resetLines = [this.options.paint("bold", "还原哪个文件到本章起点？按数字选择，其他键取消："), ...files.map((file, index) => `  ${index + 1}  ${file}`)];
    return "render";
  }

  private async askReset(file: string): Promise<KeyEffect> {
    const { kitRoot, chapter, chapters, dir, paint } = this.options;
    try {
      const marker = readPracticeMarker(dir);
      if (!marker) throw new Error("练习目录的标记不见了");
      const history = await ensureHistory(kitRoot, chapters);
      const start = await startContent(kitRoot, chapter, history, dir, marker, file);
      if (alreadyAtStart(dir, file, start)) {
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
    return "render";
  }

  /** 还原进行到一半时的按键：选文件的数字、确认的 y，其他键都取消。 */
  private async answerReset(key: string): Promise<KeyEffect> {
    const { chapter, dir, paint } = this.options;
    const state = this.resetting;
    if (state?.stage === "choose") {
      const file = chapter.teachingFiles[Number(key) - 1];
      if (/^[1-9]$/.test(key) && file !== undefined) return this.askReset(file);
    } else if (state?.stage === "confirm" && (key === "y" || key === "Y")) {
      this.resetting = undefined;
      try {
        const outcome = resetFile(dir, state.file, state.start);
        this.resetLines =
          outcome.kind === "unchanged"
            ? [`${state.file} 已经是本章起点的样子，什么也没做。`]
            : [
                paint("green", outcome.removed ? `已还原 ${state.file}：起点时还没有这个文件，现在它不在了。` : `已把 ${state.file} 还原到本章起点。`),
                ...(outcome.backup ? [`你的版本在 ${path.join(dir, outcome.backup)}（要拿回来：把它挪回原处）。`] : []),
              ];
      } catch (error) {
        this.resetLines = [`没能还原：${(error as Error).message}`];
      }
      return "render"; // 文件变了：监视会照常重跑
    }
    this.resetting = undefined;
    this.resetLines = ["没有还原，文件原样未动。"];
    return "render";
  }
}
