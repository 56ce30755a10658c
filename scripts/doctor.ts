import path from "node:path";

import { findChapter, loadChapters, type Chapter } from "./engine/chapters.js";
import { chapterAndDir, paint, runCommandLine, userCwd } from "./engine/cli.js";
import {
  checkCheckout,
  checkGit,
  checkHistory,
  checkInstall,
  checkNode,
  chapterOfDir,
  checkPracticeDir,
  checkProgressFile,
  doctorArguments,
  type DoctorCheck,
} from "./engine/doctor.js";
import { CourseError, isCourseError } from "./engine/errors.js";
import { ensureHistory, type CourseHistory } from "./engine/history.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { emptyProgress, inspectProgress, progressPath } from "./engine/progress.js";
import { choosePracticeDir } from "./engine/practice.js";
import { nextChapter } from "./engine/course-map.js";

const HELP = `用法：npm run doctor -- [章节] [目录] [--fix] [--json]

给学习环境做一次体检，每一项不通过时都给出修复办法：
Node.js 版本、git、课程套件是否为 git 仓库、依赖是否装好、课程历史、进度文件，
以及一个练习目录的健康（标记、位置、依赖链接、测试文件是否被改动、文件监视）。

[章节] 省略时：只写了目录（npm run doctor -- ../pi-practice-03）就检查那个目录记下的章节；
        什么都没写就检查下一章（npm run status 里标出的那一章）的练习目录。
[目录] 省略时用 verify 的默认目录。

  --fix    修复能自动修复的项：构建课程历史、重新链接练习目录的依赖（只动符号链接）
  --json   以 JSON 输出检查结果
  --help   显示本说明`;

const SYMBOL: Record<DoctorCheck["status"], string> = { ok: "✓", warn: "!", fail: "✗", skip: "·" };
const STYLE = { ok: "green", warn: "yellow", fail: "red", skip: "dim" } as const;

await runCommandLine(HELP, { fix: { type: "boolean" }, json: { type: "boolean" } }, async ({ values, positionals }) => {
  const given = chapterAndDir(positionals);
  const loaded = loadChaptersChecked();
  const { chapters } = loaded;
  // 只写了一个参数时，它可能是章节，也可能是目录
  const { chapterInput, dirInput } = doctorArguments(chapters, given, userCwd());
  // 章节参数写错是用法错误，先于任何输出报告
  const chapter = chapters && chapterInput !== undefined ? findChapter(chapters, chapterInput) : undefined;

  let checks = await examine(loaded, chapter, dirInput);
  const actions: string[] = [];
  if (values.fix) {
    // 按检查的顺序修（先改记套件位置，再重新链接依赖），修过了就从头再查一遍
    for (const check of checks) {
      if (check.status !== "ok" && check.repair) actions.push(...(await check.repair()));
    }
    if (actions.length > 0) checks = await examine(loaded, chapter, dirInput);
  }

  const failed = checks.filter((check) => check.status === "fail").length;
  const warned = checks.filter((check) => check.status === "warn").length;
  if (values.json) {
    // repair 是函数，不进 JSON
    console.log(JSON.stringify({ checks: checks.map(({ repair: _repair, ...check }) => check), actions, failed, warned }, null, 2));
    if (failed > 0) process.exitCode = 1;
    return;
  }

  console.log(paint("bold", "学习环境体检"));
  console.log("");
  for (const check of checks) {
    const indent = check.group === "practice" && check.id !== "practice" ? "  " : "";
    console.log(`${paint(STYLE[check.status], SYMBOL[check.status])} ${indent}${check.title}：${check.detail}`);
    if (check.fix && check.status !== "ok") {
      const [first = "", ...rest] = check.fix.split("\n");
      console.log(`    ${paint("cyan", "修复：")}${first}`);
      for (const line of rest) console.log(`          ${line}`);
    }
  }
  for (const action of actions) console.log(`${paint("green", "已修复：")}${action}`);
  console.log("");
  if (failed > 0) throw new CourseError("DOCTOR_FAILED", `体检发现 ${failed} 个问题${warned > 0 ? `、${warned} 个提醒` : ""}（修复办法见上）`);
  console.log(warned > 0 ? paint("yellow", `没有阻碍学习的问题；${warned} 个提醒见上。`) : paint("green", "一切正常，可以开始学习。"));
});

/** 课程章节本身能不能读：读不了时 doctor 照样检查环境，只是没有章节相关的项。 */
function loadChaptersChecked(): { chapters?: Chapter[]; check: DoctorCheck } {
  const base = { id: "chapters", group: "kit", title: "课程章节" } as const;
  try {
    const chapters = loadChapters(LESSONS_DIR);
    return { chapters, check: { ...base, status: "ok", detail: `${chapters.length} 章：${chapters.map((chapter) => chapter.id).join(" ")}` } };
  } catch (error) {
    if (!isCourseError(error)) throw error;
    return { check: { ...base, status: "fail", detail: error.message, fix: "git status 看看 lessons/ 是否被改动；git checkout -- lessons 还原" } };
  }
}

/** 全部检查，按打印的顺序：环境、章节、课程历史、进度文件，再是要看的那个练习目录。只读。 */
async function examine(loaded: { chapters?: Chapter[]; check: DoctorCheck }, chapter: Chapter | undefined, dirInput: string | undefined): Promise<DoctorCheck[]> {
  const { chapters } = loaded;
  const checks: DoctorCheck[] = [checkNode(), await checkGit(), await checkCheckout(KIT_ROOT), ...checkInstall(KIT_ROOT), loaded.check];
  let history: CourseHistory | undefined;
  if (chapters) {
    const historyCheck = await checkHistory(KIT_ROOT, chapters);
    checks.push(historyCheck);
    if (historyCheck.status === "ok") history = await ensureHistory(KIT_ROOT, chapters);
  }
  const file = progressPath();
  checks.push(checkProgressFile(file));
  if (!chapters) return checks;
  const inspected = inspectProgress(file); // 只读：损坏的进度文件留给下一个会写入的命令去备份
  const progress = inspected.state === "ok" ? inspected.progress : emptyProgress();
  const fromDir = chapter === undefined && dirInput !== undefined ? chapterOfDir(chapters, path.resolve(userCwd(), dirInput)) : undefined;
  const target = chapter ?? fromDir ?? nextChapter(chapters, progress) ?? chapters.at(-1);
  if (target) {
    const { dir, explicit } = choosePracticeDir(KIT_ROOT, target, progress, dirInput, userCwd());
    checks.push(...(await checkPracticeDir({ kitRoot: KIT_ROOT, chapter: target, chapters, history, dir, explicit, recordedDir: progress.practiceDirs[target.id], progressFile: file })));
  }
  return checks;
}
