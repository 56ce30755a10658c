import { LESSON_NOT_AN_INPUT, type Chapter } from "./chapters.js";
import {
  checkCitedHashes,
  checkCompileFails,
  checkEarlierChapters,
  checkFault,
  checkFirstRed,
  checkHeldOut,
  checkLesson,
  checkMutations,
  checkPurity,
  checkRegions,
  checkStep,
  checkTarget,
  builtCopy,
  makePracticeDir,
  materialise,
  PROMISES,
  type SelfCheckContext,
} from "./selfcheck.js";

/**
 * 章节契约（DESIGN §4）只在这里写一次：一张检查表。`course check`、npm test 的自检分片、
 * 分片的权重都遍历它，所以三处不会各做各的（比如某项在不同的目录里跑）。
 *
 * 每项检查拿到一个 ChapterRun：需要的目录按需建好、同一章里共用（承诺 2 与 6 共用练习目录，3 与 4 共用目标目录），
 * 会改动文件的检查（故障实验、变异、编译失败、留出测试、步骤）各用自己的新目录。
 */
export interface ChapterRun {
  /** 课文的路径指向一个不存在的文件（见 withoutLessons）：不读课文的检查只看得到这一份。 */
  ctx: SelfCheckContext;
  chapter: Chapter;
  /** 带真课文的那一份：只给声明了 readsLesson 的检查。 */
  withLesson(): { ctx: SelfCheckContext; chapter: Chapter };
  /** 练习目录（起点 + 脚手架 + 聚焦测试），第一次要时才建。 */
  practiceDir(): Promise<string>;
  /** 目标的干净副本（承诺 3 编译过，承诺 4 直接用），第一次要时才建。 */
  targetDir(): Promise<string>;
  /** 某个提交的一份新副本，供会改动文件的检查独用。 */
  freshDir(commit: string, name: string): Promise<string>;
  /** 编译干净的目标的一份副本（含 dist/），供会改动文件、又从目标出发的检查独用（故障实验、变异）。 */
  builtTargetCopy(name: string): Promise<string>;
}

export interface ContractCheck {
  /** 在一章之内唯一：用作缓存键的一部分，也用在测试名里。 */
  id: string;
  /** 显示用的标题（PROMISES 里的说法，步骤带上步骤号）。 */
  title: string;
  /** 大约要做几次“编译 + 跑聚焦测试”：把章节分给几个分片时用它称重。 */
  cost: number;
  /** 单项的时限（npm test 里）。 */
  timeoutMs: number;
  /** 变异只在第一条 Node 版本线上做（见 scripts/ci/node-lines.ts）。 */
  firstLineOnly?: boolean;
  /**
   * 这项检查读课文（lesson.md）。只有它们的缓存键含课文：改一章的课文，只重做这几项。
   * 没声明的检查拿到的章节里课文路径指向不存在的文件，真去读就因找不到文件而失败，声明漏了藏不住。
   */
  readsLesson?: true;
  run(run: ChapterRun): Promise<string[]> | string[];
}

/** 交给一项检查的 ChapterRun：读课文的检查拿带真课文的一份，其余的拿看不到课文的一份。 */
export function runFor(check: ContractCheck, run: ChapterRun): ChapterRun {
  return check.readsLesson ? { ...run, ...run.withLesson() } : run;
}

/** 这一章要做的全部检查，按顺序。 */
export function contractFor(chapter: Chapter): ContractCheck[] {
  // 每项检查都从 run 取章节与上下文（不用这里的 chapter）：不读课文的检查因此真的看不到课文（见 runFor）
  const labRuns = chapter.labs.reduce((sum, lab) => sum + lab.runs.length, 0);
  const target = (run: ChapterRun) => commitsOf(run).target;
  const checks: ContractCheck[] = [
    { id: "history", title: PROMISES.history, cost: 0, timeoutMs: 30_000, readsLesson: true, run: (run) => checkCitedHashes(run.ctx, run.chapter) },
    { id: "red", title: PROMISES.red, cost: 1, timeoutMs: 120_000, run: async (run) => checkFirstRed(run.chapter, await run.practiceDir()) },
    { id: "purity", title: PROMISES.purity, cost: 0, timeoutMs: 60_000, run: async (run) => checkPurity(run.ctx, run.chapter, await run.practiceDir()) },
    { id: "target", title: PROMISES.target, cost: 1 + labRuns, timeoutMs: 240_000, run: async (run) => checkTarget(run.chapter, await run.targetDir()) },
    { id: "earlier", title: PROMISES.earlier, cost: 2, timeoutMs: 240_000, run: async (run) => checkEarlierChapters(run.ctx, run.chapter, await run.targetDir()) },
    { id: "fault", title: PROMISES.fault, cost: 1, timeoutMs: 120_000, run: async (run) => checkFault(run.chapter, await run.builtTargetCopy(`fault-${chapter.id}`)) },
    { id: "lesson", title: PROMISES.lesson, cost: 0, timeoutMs: 30_000, readsLesson: true, run: (run) => checkLesson(run.ctx, run.chapter) },
    { id: "regions", title: PROMISES.regions, cost: 1 + labRuns, timeoutMs: 240_000, run: (run) => checkRegions(run.ctx, run.chapter) },
    {
      id: "mutations",
      title: PROMISES.mutations,
      cost: chapter.mutations.length,
      timeoutMs: 600_000,
      firstLineOnly: true,
      run: async (run) => checkMutations(run.chapter, await run.builtTargetCopy(`mutations-${chapter.id}`)),
    },
  ];
  if (chapter.compileFails.length > 0) {
    checks.push({
      id: "compile-fails",
      title: PROMISES.compileFails,
      cost: chapter.compileFails.length,
      timeoutMs: 120_000,
      run: async (run) => checkCompileFails(run.chapter, await run.freshDir(target(run), `compile-fails-${chapter.id}`)),
    });
  }
  if (chapter.heldOut !== undefined) {
    checks.push({
      id: "held-out",
      title: PROMISES.heldOut,
      cost: 2,
      timeoutMs: 120_000,
      run: async (run) => checkHeldOut(run.chapter, await run.freshDir(target(run), `heldout-${chapter.id}`)),
    });
  }
  for (const step of chapter.steps) {
    checks.push({
      id: `step-${step.id}`,
      title: `${PROMISES.steps} ${step.id}`,
      cost: 1 + step.runs.length,
      timeoutMs: 120_000,
      run: async (run) => {
        const commit = commitsOf(run).steps[step.id];
        if (!commit) return [`课程历史里没有步骤 ${step.id}`];
        return checkStep(run.chapter, step.id, await run.freshDir(commit, `step-${chapter.id}-${step.id}`));
      },
    });
  }
  return checks;
}

/** 一章自检的总重量：分片按它把章节分得大致一样重。 */
export function contractCost(chapter: Chapter): number {
  return contractFor(chapter).reduce((sum, check) => sum + check.cost, 0);
}

function commitsOf(run: ChapterRun) {
  const commits = run.ctx.history.chapters[run.chapter.id];
  if (!commits) throw new Error(`课程历史里没有第 ${run.chapter.id} 章`);
  return commits;
}

/** 同一个上下文，只是每一章的课文路径都指向不存在的文件。 */
export function withoutLessons(ctx: SelfCheckContext): SelfCheckContext {
  return { ...ctx, chapters: ctx.chapters.map((other) => ({ ...other, lessonPath: LESSON_NOT_AN_INPUT })) };
}

/** 一章的 ChapterRun：目录按需建、同名的只建一次；建目录也只用看不到课文的那一份。 */
export function chapterRun(ctx: SelfCheckContext, chapter: Chapter): ChapterRun {
  const blind = withoutLessons(ctx);
  const blindChapter = { ...chapter, lessonPath: LESSON_NOT_AN_INPUT };
  let practice: Promise<string> | undefined;
  let target: Promise<string> | undefined;
  const run: ChapterRun = {
    ctx: blind,
    chapter: blindChapter,
    withLesson: () => ({ ctx, chapter }),
    practiceDir: () => (practice ??= makePracticeDir(blind, blindChapter)),
    targetDir: () => (target ??= materialise(blind, commitsOf(run).target, `target-${chapter.id}`)),
    freshDir: (commit, name) => materialise(blind, commit, name),
    builtTargetCopy: async (name) => builtCopy(blind, await run.targetDir(), commitsOf(run).target, name),
  };
  return run;
}

export interface PromiseReport {
  promise: string;
  problems: string[];
}

/** 按契约表的顺序检查一章（供 npm run course -- check 使用）。 */
export async function selfCheckChapter(ctx: SelfCheckContext, chapter: Chapter): Promise<PromiseReport[]> {
  if (!ctx.history.chapters[chapter.id]) return [{ promise: PROMISES.history, problems: [`课程历史里没有第 ${chapter.id} 章`] }];
  const run = chapterRun(ctx, chapter);
  const reports: PromiseReport[] = [];
  for (const check of contractFor(chapter)) reports.push({ promise: check.title, problems: await check.run(runFor(check, run)) });
  return reports;
}
