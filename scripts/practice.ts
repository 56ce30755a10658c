import path from "node:path";

import { BUILD_COMMAND, runCommand as focusedRun } from "./engine/card.js";
import { chapterAndDir, paint, runCommand, userCwd, parseCommandLine } from "./engine/cli.js";
import { openChapter } from "./engine/course.js";
import { KIT_ROOT } from "./engine/paths.js";
import { createPractice, defaultPracticeDir, interruptible } from "./engine/practice.js";
import { describeFirstRed } from "./engine/card.js";
import { shortHash } from "./engine/history.js";
import { progressPath, updateProgress } from "./engine/progress.js";

const HELP = `用法：npm run practice -- <章节> [目录]

从本章起点创建一个隔离的练习目录：起点代码、本章聚焦测试、LEARNING.md，
没有答案，也没有 git 历史；依赖链接到课程套件，不需要 npm install。
目录默认是套件旁边的 ../pi-practice-NN，必须在套件之外，且不存在或为空。

  --help   显示本说明`;

await runCommand(async () => {
  const { values, positionals } = parseCommandLine({});
  if (values.help) {
    console.log(HELP);
    return;
  }
  const [chapterInput, dirInput] = chapterAndDir(positionals);
  // 第一次运行还要构建课程历史：从这里起 Ctrl-C 都先结束 git、删掉临时目录再退出
  const { chapter, dir, start } = await interruptible(async (stop) => {
    const { chapter, history } = await openChapter(chapterInput);
    const dir = dirInput === undefined ? defaultPracticeDir(KIT_ROOT, chapter) : path.resolve(userCwd(), dirInput);
    const { start } = await createPractice({ kitRoot: KIT_ROOT, chapter, history, dir, stop });
    return { chapter, dir, start };
  });
  rememberPracticeDir(chapter.id, dir);

  console.log(paint("green", `已创建第 ${chapter.id} 章练习目录：${dir}`));
  console.log(`取自提交 ${shortHash(start)}（${chapter.mode === "观察" ? "目标，观察章" : "起点"}）。先读 LEARNING.md，再运行：`);
  console.log("");
  console.log(`  cd ${dir}`);
  console.log(`  ${BUILD_COMMAND} && ${focusedRun(chapter, {})}`);
  console.log("");
  console.log("第一次运行应当看到：");
  for (const line of describeFirstRed(chapter.firstRed)) console.log(`  ${line}`);
  console.log("");
  // 练习目录里的 npm run verify / hint / watch 经 packages/pi-course/kit.mjs 转交给套件，章节与目录由标记补上
  console.log(`下面三个命令在课程套件根目录 ${KIT_ROOT} 运行（或在练习目录里直接 npm run verify）：`);
  console.log(`  边写边看：npm run watch -- ${chapter.id}    卡住时：npm run hint -- ${chapter.id}    做完后：npm run verify -- ${chapter.id}`);
});

/** 记下本章的练习目录，verify / watch / hint 省略目录时就用它。记不下来不影响练习目录本身。 */
function rememberPracticeDir(chapterId: string, dir: string): void {
  try {
    const { warning } = updateProgress(progressPath(), (progress) => {
      progress.practiceDirs[chapterId] = dir;
    });
    if (warning) process.stderr.write(`${paint("yellow", "注意：", process.stderr)}${warning}\n`);
  } catch (error) {
    process.stderr.write(`${paint("yellow", "注意：", process.stderr)}${(error as Error).message}\n`);
  }
}
