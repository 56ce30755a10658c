import path from "node:path";
import { createInterface } from "node:readline/promises";

import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { openChapter, openPracticeSession } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import { KIT_ROOT } from "./engine/paths.js";
import { withPracticeLock } from "./engine/practice-lock.js";
import { alreadyAtStart, resetFile, resetQuestion, resettableFiles, resolveTeachingFile, startContent } from "./engine/reset.js";

const HELP = `用法：npm run reset -- <章节> <文件> [目录] [--yes]

把练习目录里的一个教学文件放回本章的起点，其余文件一个不动。
你现在的版本先移到练习目录的 .pi-course/backup/<时间>/ 下同样的路径里（不会丢，想要回来就挪回去），
然后写回起点：普通练习目录是课程的起点（或从目标切出的脚手架），
practice --continue 建的目录是创建那一刻的样子（也就是你自己上一章的代码）。
起点时还没有的文件，还原后就不在了（你的版本同样在备份里）。

<文件> 可以写完整路径（packages/pi-course/src/types.ts）、相对当前目录的路径，或只写文件名（types.ts）。
[目录] 默认与 verify 相同（practice 为本章创建的目录）。
在练习目录里运行时，章节和目录都可以省掉：npm run reset -- types.ts
在终端里会先问一句再动手；在脚本里（不是终端）必须加 --yes。
watch 里按 x 也能还原，问的是同一句。

  --yes    不问，直接还原（给脚本用）
  --help   显示本说明`;

await runCommandLine(HELP, { yes: { type: "boolean", short: "y" } }, async ({ values, positionals }) => {
  if (positionals.length > 3) throw usageError("TOO_MANY_ARGS", `最多三个参数（章节、文件、目录），收到了：${positionals.join(" ")}`);
  const [chapterInput, fileInput, dirInput] = positionals;
  if (fileInput === undefined || fileInput.trim() === "") {
    throw usageError("RESET_FILE_REQUIRED", "请写出要还原的文件，例如 npm run reset -- 03 types.ts");
  }
  if (dirInput !== undefined && dirInput.trim() === "") throw usageError("DIR_EMPTY", "练习目录参数是空字符串；省略它即可使用默认目录");
  const { chapters, chapter, history } = await openChapter(chapterInput);
  const { dir, marker } = openPracticeSession(chapter, dirInput);
  const file = resolveTeachingFile(fileInput, resettableFiles(chapters, chapter), dir, userCwd(), chapter);
  const start = await startContent(KIT_ROOT, chapter, history, dir, marker, file);

  if (alreadyAtStart(dir, file, start)) {
    console.log(`${file} 已经是本章起点的样子，什么也没做。`);
    return;
  }
  const question = resetQuestion(file, start);
  if (!values.yes) {
    if (!process.stdin.isTTY || !process.stdout.isTTY) {
      throw usageError("RESET_NEEDS_YES", `不在终端里，没法确认：${file} 原样未动；确定要还原就加 --yes（npm run reset -- ${chapter.id} ${fileInput} --yes）`);
    }
    if (!(await confirm(question))) {
      console.log("没有还原，文件原样未动。");
      return;
    }
  }
  const outcome = await withPracticeLock(dir, async () => resetFile(dir, file, start));
  if (outcome.kind === "unchanged") {
    console.log(`${file} 已经是本章起点的样子，什么也没做。`);
    return;
  }
  console.log(paint("green", outcome.removed ? `已还原 ${file}：起点时还没有这个文件，现在它不在了。` : `已把 ${file} 还原到本章起点。`));
  if (outcome.backup) console.log(`你的版本在 ${path.join(dir, outcome.backup)}（要拿回来：把它挪回原处）。`);
});

/** 在终端里问一句 y/N；只有 y / yes 算同意。 */
async function confirm(question: string): Promise<boolean> {
  const reader = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answer = await reader.question(`${question}（y/N）`);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    reader.close();
  }
}
