import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { loadChapters, PATCH_FILE } from "./chapters.js";
import { CourseError, usageError } from "./errors.js";
import { explainGitFailure, gitAt } from "./git.js";
import { checkoutTree, ensureHistory, shortHash, type CourseHistory } from "./history.js";
import { restampHashes } from "./lesson.js";
import { COURSE_PACKAGE, EDIT_BRANCH } from "./paths.js";

/** 提交标题：course(03): … 是章节目标，course(03/3.1): … 是章节内部的一步。 */
const SUBJECT = /^course\((\d{2})(?:\/([^)]+))?\): /;

export interface ExportSummary {
  from: string;
  chapters: string[];
  history: CourseHistory;
}

/** 为作者开一个课程历史的 worktree，分支 course/edit；用普通 git 改写提交。 */
export async function openEditWorktree(kitRoot: string, dir: string, tip: string): Promise<{ created: boolean }> {
  const git = gitAt(kitRoot);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    throw usageError("EDIT_DIR_NOT_EMPTY", `${dir} 已存在且不是空目录；请换一个目录`);
  }
  const branches = await git.raw(["branch", "--list", EDIT_BRANCH]);
  const created = branches.trim() === "";
  try {
    if (created) await git.raw(["worktree", "add", "-b", EDIT_BRANCH, dir, tip]);
    else await git.raw(["worktree", "add", dir, EDIT_BRANCH]);
  } catch (error) {
    throw explainGitFailure(error, "创建编辑用的 worktree ");
  }
  return { created };
}

/**
 * 把编辑分支上的提交写回课程：每章的 chapter.patch 与步骤补丁、重新构建的历史、
 * 课文卡片里的哈希，以及与历史末端一致的 packages/pi-course。
 */
export async function exportCourse(kitRoot: string, lessonsDir: string, from = EDIT_BRANCH): Promise<ExportSummary> {
  const git = gitAt(kitRoot);
  // 导出会用历史末端覆盖 packages/pi-course：那里有未提交的改动时先停下，免得吞掉它们。
  const pending = (await git.raw(["status", "--porcelain", "--untracked-files=all", "--", COURSE_PACKAGE])).trim();
  if (pending !== "") {
    throw new CourseError(
      "EXPORT_DIRTY",
      `${COURSE_PACKAGE} 里有未提交的改动（${pending.split("\n").length} 个文件），导出会覆盖它们。请先提交或移走，再运行 npm run course -- export`,
    );
  }
  let log: string;
  try {
    log = await git.raw(["log", "--reverse", "--topo-order", "--format=%H%x09%s", from]);
  } catch (error) {
    throw new CourseError("EDIT_MISSING", `找不到 ${from}：先运行 npm run course -- edit，在那里改写提交后再导出（${explainGitFailure(error, "读取").message}）`);
  }
  const commits = log.trim().split("\n").map((line) => {
    const [hash = "", subject = ""] = line.split("\t");
    return { hash, subject };
  });
  const dirs = new Map(
    readdirSync(lessonsDir)
      .filter((name) => /^\d{2}-/.test(name))
      .map((name) => [name.slice(0, 2), name] as const),
  );

  const exported: string[] = [];
  let previous: string | undefined;
  let parent: string | undefined;
  for (const { hash, subject } of commits) {
    const match = SUBJECT.exec(subject);
    if (!match) {
      if (previous === undefined) {
        previous = hash; // 空白起点
        continue;
      }
      throw new CourseError("EDIT_SUBJECT", `提交 ${shortHash(hash)}「${subject}」的标题不是 course(NN): … 或 course(NN/步骤): …`);
    }
    const [, id = "", step] = match;
    const dirName = dirs.get(id);
    if (!dirName) throw new CourseError("EDIT_UNKNOWN_CHAPTER", `提交 ${shortHash(hash)} 属于第 ${id} 章，但 lessons/ 下没有 ${id}-* 目录`);
    parent ??= previous;
    if (parent === undefined) throw new CourseError("EDIT_NO_BASE", "编辑分支缺少空白起点提交");
    const chapterDir = path.join(lessonsDir, dirName);
    const patchFile = step === undefined ? PATCH_FILE : path.join("steps", `${step}.patch`);
    mkdirSync(path.dirname(path.join(chapterDir, patchFile)), { recursive: true });
    writeFileSync(path.join(chapterDir, patchFile), await diffBetween(kitRoot, parent, hash));
    if (step === undefined) {
      exported.push(id);
      parent = undefined;
    }
    previous = hash;
  }

  const chapters = loadChapters(lessonsDir);
  const history = await ensureHistory(kitRoot, chapters);
  for (const chapter of chapters) {
    const commitsOf = history.chapters[chapter.id];
    if (!commitsOf) continue;
    const lesson = readFileSync(chapter.lessonPath, "utf8");
    const stamped = restampHashes(lesson, shortHash(commitsOf.parent), shortHash(commitsOf.target));
    if (stamped !== lesson) writeFileSync(chapter.lessonPath, stamped);
  }
  await syncCoursePackage(kitRoot, history.tip);
  return { from, chapters: exported, history };
}

/** 与用户的 diff 配置无关的补丁：固定前缀、完整索引、不识别改名。 */
async function diffBetween(kitRoot: string, from: string, to: string): Promise<string> {
  return gitAt(kitRoot).raw([
    "diff",
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-ext-diff",
    "--no-color",
    "--diff-algorithm=myers",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    from,
    to,
  ]);
}

/** 让套件里的 packages/pi-course 与历史末端逐字节一致（构建产物和依赖除外）。 */
export async function syncCoursePackage(kitRoot: string, tip: string): Promise<void> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), "pi-course-tip-"));
  try {
    await checkoutTree(kitRoot, tip, scratch);
    const packageDir = path.join(kitRoot, COURSE_PACKAGE);
    for (const entry of readdirSync(packageDir)) {
      if (entry === "dist" || entry === "node_modules") continue;
      rmSync(path.join(packageDir, entry), { recursive: true, force: true });
    }
    cpSync(path.join(scratch, COURSE_PACKAGE), packageDir, { recursive: true });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
