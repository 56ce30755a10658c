import path from "node:path";

import type { Chapter } from "./chapters.js";
import { conflictReport, deviationSummary, planContinue, previousChapter, readLearnerTree, treeFingerprint, type ContinuePlan } from "./continue.js";
import { openProgress } from "./course.js";
import { CourseError, usageError } from "./errors.js";
import type { CourseHistory } from "./history.js";
import { checkDestination, openPracticeDir, readPracticeMarker } from "./practice.js";
import type { Progress } from "./progress.js";

/**
 * 接续前的三道关：上一章 verify 过；上一章的目录找得到；那里的代码现在仍通过上一章和更早各章的测试。
 * 都过了才算合并计划；有套不上的文件就整体拒绝。
 */
export async function prepareContinue(options: {
  kitRoot: string;
  /** 相对路径（--continue 后面的目录）按它解析：学习者敲命令时所在的目录。 */
  cwd: string;
  chapters: Chapter[];
  chapter: Chapter;
  history: CourseHistory;
  dir: string;
  source: string | undefined;
  keepMine: string[];
  useCourse: string[];
  stop: AbortSignal;
}): Promise<ContinuePlan & { rechecked: boolean }> {
  const { kitRoot, chapters, chapter, history, dir } = options;
  checkDestination(kitRoot, chapter, dir);
  const previous = previousChapter(chapters, chapter);
  const loaded = openProgress();
  if (!loaded.progress.verified[previous.id]) {
    throw new CourseError(
      "CONTINUE_NOT_VERIFIED",
      `第 ${previous.id} 章还没有 verify 通过，不能接着它的代码做第 ${chapter.id} 章：先运行 npm run verify -- ${previous.id}，或者从课程起点开始：npm run practice -- ${chapter.id}`,
    );
  }
  const { source, explicit } = chooseSource(chapter, previous, loaded.progress, options.source, options.cwd);
  openPracticeDir(source, previous, explicit);
  const sourceMarker = readPracticeMarker(source);

  // 第三道关：那里的代码现在仍然通过。自 verify 通过以来一个文件都没变（课程也没更新），那次的全部通过就是答案
  const learner = readLearnerTree(source);
  const verified = loaded.progress.verified[previous.id];
  const unchanged =
    verified?.fingerprint !== undefined &&
    path.resolve(verified.dir) === path.resolve(source) &&
    verified.target === history.chapters[previous.id]?.target &&
    verified.fingerprint === treeFingerprint(learner);
  if (!unchanged) await recheckPrevious({ kitRoot, chapters, chapter, previous, history, source, stop: options.stop });

  const learnerFiles = [...learner.files.keys()];
  const resolve = (inputs: string[], option: string) => inputs.map((input) => resolveProjectFile(input, learnerFiles, option));
  const plan = await planContinue({
    kitRoot,
    chapters,
    chapter,
    history,
    source,
    sourceOrigin: sourceMarker?.origin,
    keepMine: resolve(options.keepMine, "--keep-mine"),
    useCourse: resolve(options.useCourse, "--use-course"),
    learner,
  });
  if (plan.conflicts.length > 0) {
    throw new CourseError(
      "CONTINUE_CONFLICT",
      `第 ${chapter.id} 章的改动套不上你的 ${plan.conflicts.length} 个文件（逐个说明见上），什么也没有创建`,
      1,
      conflictReport(plan.conflicts, { kitRoot, chapter, history, source }),
    );
  }
  return { ...plan, rechecked: !unchanged };
}

/** 上一章的目录：写出来的；否则进度里 practice 记下的；再否则 verify 通过时记下的。 */
function chooseSource(
  chapter: Chapter,
  previous: Chapter,
  progress: Progress,
  given: string | undefined,
  cwd: string,
): { source: string; explicit: boolean } {
  if (given !== undefined) return { source: path.resolve(cwd, given), explicit: true };
  const candidates = [progress.practiceDirs[previous.id], progress.verified[previous.id]?.dir].filter((dir): dir is string => dir !== undefined);
  for (const candidate of candidates) {
    try {
      if (readPracticeMarker(candidate)?.chapter === previous.id) return { source: candidate, explicit: false };
    } catch {
      // 标记坏了：看下一个
    }
  }
  throw new CourseError(
    "CONTINUE_NO_SOURCE",
    `进度里没有找到你第 ${previous.id} 章的练习目录${candidates[0] ? `（记下的 ${candidates[0]} 不在了）` : ""}：把它写在 --continue 后面，例如 npm run practice -- ${chapter.id} --continue ../pi-practice-${previous.id}`,
  );
}

/** 接受完整路径（packages/pi-course/src/types.ts）、src/types.ts 或只写 types.ts（唯一时）。 */
function resolveProjectFile(input: string, files: readonly string[], option: string): string {
  const wanted = input.replace(/\\/g, "/").replace(/^\.\//, "");
  if (files.includes(wanted)) return wanted;
  const hits = files.filter((file) => file.endsWith(`/${wanted}`));
  if (hits.length === 1 && hits[0] !== undefined) return hits[0];
  if (hits.length > 1) throw usageError("CONTINUE_FILE_AMBIGUOUS", `${option} ${input} 能指好几个文件（${hits.join("、")}）：写出完整路径`);
  // 学习者目录里没有的文件（例如删掉了）：按项目根的相对路径照收
  if (wanted.startsWith("packages/")) return wanted;
  throw usageError("CONTINUE_FILE_UNKNOWN", `${option} ${input}：你上一章的目录里没有这个文件；写出相对项目根的路径，例如 packages/pi-course/src/types.ts`);
}

/** 在上一章的目录里重新跑一遍上一章和更早各章的测试（与 verify 相同）；没通过就不接续。 */
async function recheckPrevious(options: {
  kitRoot: string;
  chapters: Chapter[];
  chapter: Chapter;
  previous: Chapter;
  history: CourseHistory;
  source: string;
  stop: AbortSignal;
}): Promise<void> {
  const { kitRoot, chapters, chapter, previous, history, source } = options;
  // 只有接续才要编译和跑测试：这两个模块按需加载，普通的 practice 不必为它们多花启动时间
  const [{ withPracticeLock }, { checkPractice }] = await Promise.all([import("./practice-lock.js"), import("./verify.js")]);
  const check = await withPracticeLock(source, () =>
    checkPractice({ dir: source, chapter: previous, chapters, scope: "all", integrity: { kitRoot, history }, signal: options.stop }),
  );
  options.stop.throwIfAborted();
  if (!check.passed) {
    throw new CourseError(
      "CONTINUE_EARLIER_RED",
      `你在 ${source} 里的代码现在没通过第 ${previous.id} 章及更早章节的测试（第一处：${deviationSummary(check.deviation)}）；` +
        `修好后再运行一次（npm run verify -- ${previous.id} 会说得更细），或者从课程起点开始：npm run practice -- ${chapter.id}`,
    );
  }
}
