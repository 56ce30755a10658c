
import { findChapter, loadChapters, type Chapter, type Lab } from "./engine/chapters.js";
import { paint, print, runCommandLine, warn } from "./engine/cli.js";
import { openPracticeSession, openProgress, type CommandProgress } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import { findLab, LADDER_HEIGHT, levelName, revealHint } from "./engine/hints.js";
import { currentLab } from "./engine/labs.js";
import { labPrediction } from "./engine/lesson.js";
import { withPracticeLock } from "./engine/practice-lock.js";
import { LESSONS_DIR } from "./engine/paths.js";
import { hintsShown } from "./engine/progress.js";
import { inlineMarkdown } from "./engine/screen.js";
import { checkPractice } from "./engine/verify.js";

const HELP = `用法：npm run hint -- <章节> [实践] [--level N] [--dir 目录]

展开一个实践的下一级提示。每个实践有四级，按顺序一级一级给：
  1 定位文件 → 2 指出签名 → 3 伪代码 → 4 局部代码
看过哪一级会记在进度里（npm run status 显示用了多少提示）。一级能解决就先别看下一级。

[实践] 写 3.1，或在本章里简写成 1。省略时先在练习目录里跑一次聚焦测试，
给第一个还没通过的实践。

  --level N   回看已经看过的第 N 级（也可以是下一级；不能跳级）
  --dir 目录  省略 [实践] 时在哪个练习目录里找没通过的实践（默认与 verify 相同）
  --help      显示本说明`;

await runCommandLine(HELP, { level: { type: "string" }, dir: { type: "string" } }, async ({ values, positionals }) => {
  if (positionals.length > 2) throw usageError("TOO_MANY_ARGS", `最多两个参数（章节、实践），收到了：${positionals.join(" ")}`);
  const requested = values.level === undefined ? undefined : parseLevel(values.level);
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, positionals[0]);
  const loaded = openProgress();
  const { file } = loaded;

  let lab: Lab;
  let reason = "";
  if (positionals[1] !== undefined) {
    lab = findLab(chapter, positionals[1]);
  } else {
    const picked = await failingLab(chapter, chapters, loaded, values.dir);
    if (!picked) {
      print(paint("green", `第 ${chapter.id} 章的聚焦测试已经全部通过，不需要提示。`));
      print(`想回看某个实践的提示：npm run hint -- ${chapter.id} ${chapter.labs[0]?.id ?? ""} --level 1`);
      if (loaded.progress.verified[chapter.id]) print(`本章已经点亮；npm run status 查看下一章。`);
      else print(`记下进度：npm run verify -- ${chapter.id}`);
      return;
    }
    ({ lab, reason } = picked);
  }

  const { step, seen, warning } = revealHint(file, loaded.progress, chapter, lab, requested);
  warn(warning);

  print(paint("bold", `第 ${chapter.id} 章 · 实践 ${lab.id} · ${lab.title}`));
  if (reason) print(paint("dim", reason));
  const prediction = labPrediction(chapter, lab.id);
  if (prediction) {
    print("");
    print(`${paint("yellow", `先预测（课文「实践 ${lab.id}」一节）：`)}${inlineMarkdown(prediction, paint)}`);
    print(paint("dim", "  写下答案再运行；提示帮你写代码，预测帮你读懂结果。"));
  }
  print("");
  print(paint("cyan", `提示 ${step.level}/${LADDER_HEIGHT} · ${step.name}`));
  for (const line of step.text.split("\n")) print(line === "" ? "" : `  ${line}`);
  print("");
  const ladder = Array.from({ length: LADDER_HEIGHT }, (_, index) => {
    const level = index + 1;
    const name = `${level} ${levelName(level)}`;
    if (level === step.level) return paint("cyan", `● ${name}`);
    return level <= seen ? paint("green", `✓ ${name}`) : paint("dim", `○ ${name}`);
  });
  print(`梯子：${ladder.join(" → ")}`);
  if (step.top) {
    print(`这是最后一级。写完后运行 npm run verify -- ${chapter.id}`);
  } else if (seen > step.level) {
    print(`这是回看；你已经看到第 ${seen} 级（${levelName(seen)}）。`);
  } else {
    print(`还卡着？下一级：npm run hint -- ${chapter.id} ${lab.id}（${levelName(step.level + 1)}）。先试试这一级够不够。`);
  }
});

/** 在练习目录里跑一次聚焦测试，找第一个没通过的实践；没有练习目录时按顺序挑提示还没看完的实践。 */
async function failingLab(
  chapter: Chapter,
  chapters: readonly Chapter[],
  opened: CommandProgress,
  dirInput: string | undefined,
): Promise<{ lab: Lab; reason: string } | undefined> {
  const { progress } = opened;
  let dir: string;
  try {
    ({ dir } = openPracticeSession(chapter, dirInput, opened));
  } catch (error) {
    if (dirInput !== undefined) throw error; // 写出的目录不对：说出来，而不是悄悄按顺序给提示
    const lab = chapter.labs.find((candidate) => hintsShown(progress, chapter.id, candidate.id) < LADDER_HEIGHT) ?? chapter.labs.at(-1);
    if (!lab) throw error;
    return { lab, reason: `（没找到第 ${chapter.id} 章的练习目录，按顺序给实践 ${lab.id} 的提示）` };
  }
  const check = await withPracticeLock(dir, () => checkPractice({ dir, chapter, chapters, scope: "focused" }));
  const failing = currentLab(check.labs);
  if (!failing) return undefined;
  return { lab: failing.lab, reason: `（${dir} 里实践 ${failing.lab.id} 还没通过，所以给它的提示）` };
}

function parseLevel(text: string): number {
  const level = Number(text);
  if (!/^\d+$/.test(text.trim()) || level < 1 || level > LADDER_HEIGHT) {
    throw usageError("HINT_LEVEL_INVALID", `--level 应当是 1 到 ${LADDER_HEIGHT} 之间的整数，收到了 “${text}”`);
  }
  return level;
}
