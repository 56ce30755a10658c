import path from "node:path";
import * as util from "node:util";

import { BUILD_COMMAND, focusedTestCommand } from "./engine/card.js";
import type { Chapter } from "./engine/chapters.js";
import { chapterAndDir, paint, print, runCommandLine, userCwd, warn } from "./engine/cli.js";
import type { ContinuePlan } from "./engine/continue.js";
import { prepareContinue } from "./engine/continue-gates.js";
import { openChapter } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import type { CourseHistory } from "./engine/history.js";
import { KIT_ROOT } from "./engine/paths.js";
import { createPractice, defaultPracticeDir, interruptible } from "./engine/practice.js";
import { briefFirstRed } from "./engine/card.js";
import { shortHash } from "./engine/history.js";
import { progressPath, updateProgress } from "./engine/progress.js";

const HELP = `用法：npm run practice -- <章节> [目录]
      npm run practice -- <章节> [目录] --continue [上一章的目录]

从本章起点创建一个隔离的练习目录：起点代码、本章聚焦测试、LEARNING.md，
没有答案，也没有 git 历史；依赖链接到课程套件，不需要 npm install。
目录默认是套件旁边的 ../pi-practice-NN，必须在套件之外，且不存在或为空。

--continue：不从课程的起点，而是接着你自己上一章的代码做这一章。
  上一章的目录默认是进度里记下的那个（practice 或 verify 记下的），也可以紧跟在 --continue 后面写出来。
  上一章必须已经 verify 通过；接续之前会在那个目录里重新跑一遍上一章和更早各章的测试
  （自 verify 通过以来那里一个文件都没变时不必重跑），
  没通过就不接续（说出第一处失败）。新目录里是：你自己写的教学文件、本章的聚焦测试、
  本章从目标切出的新文件，以及本章对其他文件（package.json、测试辅助）的改动。
  本章也要改你写过的文件时，改动以三方合并织进你的版本；合并不干净就什么也不建，逐个文件说明，
  由你对每个文件选一种：
  --keep-mine <文件>   保留你的版本，本章对它的改动你自己照着写（可重复）
  --use-course <文件>  这个文件用课程的版本，你的版本留在原来的目录里（可重复）

  --help   显示本说明`;

const PRACTICE_OPTIONS = {
  continue: { type: "boolean" },
  "keep-mine": { type: "string", multiple: true },
  "use-course": { type: "string", multiple: true },
} as const;

await runCommandLine(HELP, PRACTICE_OPTIONS, async ({ values, positionals }) => {
  const { rest, source } = values.continue ? splitContinueSource(positionals) : { rest: positionals, source: undefined };
  if (!values.continue && (values["keep-mine"] || values["use-course"])) {
    throw usageError("CONTINUE_ONLY", "--keep-mine 与 --use-course 只和 --continue 一起使用");
  }
  const [chapterInput, dirInput] = chapterAndDir(rest);
  // 第一次运行还要构建课程历史：从这里起 Ctrl-C 都先结束 git、删掉临时目录再退出
  const { chapter, dir, start, plan, history } = await interruptible(async (stop) => {
    const { chapters, chapter, history } = await openChapter(chapterInput);
    const dir = dirInput === undefined ? defaultPracticeDir(KIT_ROOT, chapter) : path.resolve(userCwd(), dirInput);
    const plan = values.continue
      ? await prepareContinue({
          kitRoot: KIT_ROOT,
          cwd: userCwd(),
          chapters,
          chapter,
          history,
          dir,
          source,
          keepMine: values["keep-mine"] ?? [],
          useCourse: values["use-course"] ?? [],
          stop,
        })
      : undefined;
    const { start } = await createPractice({ kitRoot: KIT_ROOT, chapter, history, dir, stop, ...(plan ? { plan } : {}) });
    return { chapter, dir, start, plan, history };
  });
  rememberPracticeDir(chapter.id, dir);

  if (plan) {
    printContinued(chapter, dir, plan, history);
  } else {
    print(paint("green", `已创建第 ${chapter.id} 章练习目录：${dir}`));
    print(`取自提交 ${shortHash(start)}（${chapter.mode === "观察" ? "目标，观察章" : "起点"}）。`);
  }
  // 一屏放得下：红灯只列代表（完整清单在 LEARNING.md），要敲的命令放在最后，不会被挤出屏幕
  print("", "第一次运行应当看到：", ...briefFirstRed(chapter.firstRed).map((line) => `  ${line}`), "");
  // 练习目录里的 npm run verify / hint / watch 经 packages/pi-course/kit.mjs 转交给套件，章节与目录由标记补上
  print(`下面三个命令在课程套件根目录 ${KIT_ROOT} 运行（或在练习目录里直接 npm run verify）：`);
  print(`  边写边看：npm run watch -- ${chapter.id}    卡住时：npm run hint -- ${chapter.id}    做完后：npm run verify -- ${chapter.id}`);
  print("", "先读 LEARNING.md，再运行：", `  cd ${dir}`, `  ${BUILD_COMMAND} && ${focusedTestCommand(chapter, {})}`);
});

/**
 * --continue 后面紧跟的位置参数是上一章的目录（来源）；其余的照旧是「章节 [目录]」。
 * 紧跟的若是第一个位置参数（npm run practice -- --continue 04），它仍是章节。
 */
function splitContinueSource(positionals: readonly string[]): { rest: string[]; source: string | undefined } {
  const { tokens } = util.parseArgs({ args: process.argv.slice(2), options: PRACTICE_OPTIONS, allowPositionals: true, strict: false, tokens: true });
  const flag = tokens.find((token) => token.kind === "option" && token.name === "continue");
  const ordered = tokens.filter((token) => token.kind === "positional");
  const ordinal = ordered.findIndex((token) => flag !== undefined && token.index === flag.index + 1);
  const source = ordered[ordinal];
  if (ordinal <= 0 || source?.kind !== "positional") return { rest: [...positionals], source: undefined };
  if (source.value.trim() === "") throw usageError("DIR_EMPTY", "--continue 后面的目录是空字符串；省略它即可使用进度里记下的上一章目录");
  return { rest: positionals.filter((_, index) => index !== ordinal), source: source.value };
}

function printContinued(chapter: Chapter, dir: string, plan: ContinuePlan & { rechecked: boolean }, history: CourseHistory): void {
  const { origin } = plan;
  const names = (files: readonly string[]) => files.map((file) => path.posix.basename(file)).join("、");
  print(paint("green", `已接着你第 ${origin.chapter} 章的代码创建第 ${chapter.id} 章练习目录：${dir}`));
  print(`来自 ${origin.from}（你自己的代码，自第 ${origin.ownSince} 章起）。`);
  if (!plan.rechecked) print(paint("dim", `  那个目录自第 ${origin.chapter} 章 verify 通过以来一个文件都没变，没有再跑一遍测试。`));
  if (origin.own.length > 0) print(`  原样带来你的：${names(origin.own)}`);
  if (origin.merged.length > 0) print(`  本章的改动织进了你的：${names(origin.merged)}（三方合并，干净）`);
  if (origin.mine.length > 0) print(`  保留你的版本、本章的改动要你自己写：${names(origin.mine)}`);
  if (origin.course.length > 0) print(`  换成了课程的版本：${names(origin.course)}`);
  const fresh = chapter.teachingFiles.filter((file) => plan.files.has(file) && !isOwnedList(origin, file));
  print(`  本章新加：${names([chapter.focusedTest.path, ...fresh])}${fresh.length > 0 ? "（从课程目标切出的脚手架）" : ""}`);
  const target = history.chapters[chapter.id]?.target;
  if (target) print(paint("dim", `  课程的目标是 ${shortHash(target)}；status 会把这一章记作“你自己的代码”。`));
}

function isOwnedList(origin: ContinuePlan["origin"], file: string): boolean {
  return [...origin.own, ...origin.merged, ...origin.mine, ...origin.course].includes(file);
}

/** 记下本章的练习目录，verify / watch / hint 省略目录时就用它。记不下来不影响练习目录本身。 */
function rememberPracticeDir(chapterId: string, dir: string): void {
  try {
    const { warning } = updateProgress(progressPath(), (progress) => {
      progress.practiceDirs[chapterId] = dir;
    });
    warn(warning);
  } catch (error) {
    warn((error as Error).message);
  }
}
