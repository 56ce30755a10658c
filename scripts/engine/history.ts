import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { CourseError } from "./errors.js";
import { explainGitFailure, gitAt, gitQuiet } from "./git.js";
import { COURSE_BRANCH } from "./paths.js";
import { startProgress } from "../progress-line.mjs";

/** 改变提交写法时递增：旧缓存随之失效。 */
const BUILDER_VERSION = "1";
const IDENTITY = { name: "Pi Course", email: "course@pi-course.invalid" };
/** 2026-01-01T00:00:00Z：空起点的时间；第 N 章的目标在其后 N+1 天。 */
const BASE_EPOCH = 1_767_225_600;
const DAY = 86_400;
const BASE_MESSAGE = "course: 空白起点";

export interface ChapterCommits {
  parent: string;
  target: string;
  /** 章节内部的中间提交，键是 step id（例如 3.1）。 */
  steps: Record<string, string>;
}

export interface CourseHistory {
  branch: string;
  base: string;
  tip: string;
  chapters: Record<string, ChapterCommits>;
}

interface CacheFile extends CourseHistory {
  version: string;
  key: string;
}

/** 把课程补丁依次应用成一串提交；同样的课程在任何机器上得到同样的哈希。 */
export async function ensureHistory(kitRoot: string, chapters: readonly Chapter[]): Promise<CourseHistory> {
  const gitDir = await locateGitDir(kitRoot);
  const cachePath = path.join(gitDir, "pi-course", "history.json");
  const key = cacheKey(chapters);

  const cached = readCache(cachePath);
  const branchTip = await resolveBranch(kitRoot);
  if (cached && cached.key === key && branchTip === cached.tip) return stripCache(cached);

  if (branchTip !== undefined && branchTip !== cached?.tip && !(await isCourseCommit(kitRoot, branchTip))) {
    throw new CourseError(
      "BRANCH_EDITED",
      `分支 ${COURSE_BRANCH} 上有不是课程生成的提交（${branchTip.slice(0, 8)}），为免覆盖你的工作已停止。` +
        `如需保留，请先运行 git branch -m ${COURSE_BRANCH} my-course-notes，然后重新运行本命令`,
    );
  }

  const done = startProgress(`正在从 lessons/ 构建课程历史（分支 ${COURSE_BRANCH}，只在课程更新后做一次）`);
  const history = await buildHistory(kitRoot, chapters).finally(done);
  if (branchTip === undefined) await setAsideBrokenRef(kitRoot, gitDir);
  try {
    await gitQuiet(kitRoot, ["update-ref", `refs/heads/${COURSE_BRANCH}`, history.tip]);
  } catch (error) {
    // 另一个命令同时在做第一次构建：它刚写下的就是同一串提交，不算失败
    if ((await resolveBranch(kitRoot)) !== history.tip) throw explainGitFailure(error, `更新分支 ${COURSE_BRANCH} `);
  }
  writeCache(cachePath, { version: BUILDER_VERSION, key, ...history });
  return history;
}

export type HistoryState =
  | { state: "ready"; tip: string }
  | { state: "missing" }
  | { state: "stale"; tip?: string }
  | { state: "edited"; tip: string };

/** 只读地查看课程历史的状态（doctor 用）：不构建、不改分支、不写缓存。 */
export async function inspectHistory(kitRoot: string, chapters: readonly Chapter[]): Promise<HistoryState> {
  const gitDir = await locateGitDir(kitRoot);
  const cached = readCache(path.join(gitDir, "pi-course", "history.json"));
  const branchTip = await resolveBranch(kitRoot);
  if (branchTip === undefined) return { state: "missing" };
  if (cached && cached.key === cacheKey(chapters) && branchTip === cached.tip) return { state: "ready", tip: branchTip };
  if (branchTip !== cached?.tip && !(await isCourseCommit(kitRoot, branchTip))) return { state: "edited", tip: branchTip };
  return { state: "stale", tip: branchTip };
}

/** 练习目录从哪个提交开始：观察章在目标上观察，重建章从起点动手。 */
export function practiceStart(chapter: Chapter, history: CourseHistory): string {
  const commits = history.chapters[chapter.id];
  if (!commits) throw new CourseError("HISTORY_STALE", `课程历史里没有第 ${chapter.id} 章`);
  return chapter.mode === "观察" ? commits.target : commits.parent;
}

/** 不读缓存、不动分支，只在对象库里写出提交。 */
export async function buildHistory(kitRoot: string, chapters: readonly Chapter[]): Promise<CourseHistory> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), "pi-course-index-"));
  try {
    const index = { env: { GIT_INDEX_FILE: path.join(scratch, "index") } };
    const git = gitAt(kitRoot, index);
    const commit = async (tree: string, parent: string | undefined, message: string, epoch: number) => {
      const date = `${epoch} +0000`;
      const args = ["commit-tree", tree, "--no-gpg-sign", "-m", message];
      if (parent) args.push("-p", parent);
      const identity = gitAt(kitRoot, {
        env: {
          GIT_AUTHOR_NAME: IDENTITY.name,
          GIT_AUTHOR_EMAIL: IDENTITY.email,
          GIT_AUTHOR_DATE: date,
          GIT_COMMITTER_NAME: IDENTITY.name,
          GIT_COMMITTER_EMAIL: IDENTITY.email,
          GIT_COMMITTER_DATE: date,
        },
      });
      return (await identity.raw(args)).trim();
    };
    /** 临时索引里现在是哪棵树：章节一章接一章时它正是下一章的起点，不必再 read-tree。 */
    let indexTree: string | undefined;
    const treeAfter = async (startTree: string, patchPath: string, label: string) => {
      if (indexTree !== startTree) await gitQuiet(kitRoot, ["read-tree", startTree], index);
      try {
        await gitQuiet(kitRoot, ["apply", "--cached", "--whitespace=nowarn", patchPath], index);
      } catch (error) {
        indexTree = undefined;
        throw new CourseError("PATCH_FAILED", `${label} 的补丁无法应用到起点：${firstLine(error)}`);
      }
      indexTree = (await git.raw(["write-tree"])).trim();
      return indexTree;
    };

    // write-tree 不会把空树写进对象库（git 认得它却不存它），空白起点的提交因此指向一个缺失的对象，
    // git fsck 会报错。这里把空树真正写进去。
    const nothing = path.join(scratch, "empty");
    writeFileSync(nothing, "");
    const emptyTree = (await git.raw(["hash-object", "-w", "-t", "tree", nothing])).trim();
    const base = await commit(emptyTree, undefined, BASE_MESSAGE, BASE_EPOCH);

    const result: CourseHistory = { branch: COURSE_BRANCH, base, tip: base, chapters: {} };
    let parent = base;
    let parentTree = emptyTree;
    for (const [index, chapter] of chapters.entries()) {
      const dayStart = BASE_EPOCH + (index + 1) * DAY;
      const steps: Record<string, string> = {};
      let previous = parent;
      for (const [stepIndex, step] of chapter.steps.entries()) {
        const tree = await treeAfter(parentTree, path.join(chapter.dir, step.patch), `lessons/${chapter.dirName}/${step.patch}`);
        previous = await commit(tree, previous, `course(${chapter.id}/${step.id}): ${step.title}`, dayStart + (stepIndex + 1) * 60);
        steps[step.id] = previous;
      }
      const tree = await treeAfter(parentTree, chapter.patchPath, `lessons/${chapter.dirName}/chapter.patch`);
      const target = await commit(tree, previous, `course(${chapter.id}): ${chapter.title}`, dayStart + 3_600);
      result.chapters[chapter.id] = { parent, target, steps };
      parent = target;
      parentTree = tree;
    }
    result.tip = parent;
    return result;
  } catch (error) {
    if (error instanceof CourseError) throw error;
    throw explainGitFailure(error, "构建课程历史");
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** 缓存键：构建器版本 + 每章的编号、标题和补丁字节。 */
export function cacheKey(chapters: readonly Chapter[]): string {
  const hash = createHash("sha256").update(BUILDER_VERSION);
  for (const chapter of chapters) {
    hash.update(`\0${chapter.id}\0${chapter.title}\0`).update(readFileSync(chapter.patchPath));
    for (const step of chapter.steps) {
      hash.update(`\0${step.id}\0${step.title}\0`).update(readFileSync(path.join(chapter.dir, step.patch)));
    }
  }
  return hash.digest("hex");
}

export async function locateGitDir(kitRoot: string): Promise<string> {
  if (!existsSync(kitRoot)) throw new CourseError("KIT_MISSING", `找不到课程目录 ${kitRoot}`);
  try {
    const common = (await gitAt(kitRoot).raw(["rev-parse", "--git-common-dir"])).trim();
    return path.resolve(kitRoot, common);
  } catch (error) {
    const explained = explainGitFailure(error, "定位仓库");
    if (explained.code === "GIT_MISSING") throw explained;
    throw new CourseError(
      "NOT_A_CHECKOUT",
      `${kitRoot} 不是 git 仓库：课程历史要写进仓库里。请用 git clone 获取课程套件，而不是下载压缩包`,
    );
  }
}

async function resolveBranch(kitRoot: string): Promise<string | undefined> {
  try {
    const out = await gitAt(kitRoot).raw(["rev-parse", "--verify", "--quiet", `refs/heads/${COURSE_BRANCH}^{commit}`]);
    return out.trim() || undefined;
  } catch {
    // 分支不存在，或者引用已损坏、指向丢失的对象：没有可保留的东西，重建即可。
    return undefined;
  }
}

/**
 * 引用文件损坏时 git 拒绝覆盖它。里面没有可用的提交，但我们仍不删除：
 * 挪到 .git/pi-course/ 下留作备查，再写新的引用。
 * 只挪真正坏了的：另一个同时在做第一次构建的命令可能刚刚写好了一个有效的引用。
 */
async function setAsideBrokenRef(kitRoot: string, gitDir: string): Promise<void> {
  const loose = path.join(gitDir, "refs", "heads", ...COURSE_BRANCH.split("/"));
  if (!existsSync(loose) || (await resolveBranch(kitRoot)) !== undefined) return;
  const backup = path.join(gitDir, "pi-course", `broken-ref-${Date.now()}-${process.pid}`);
  mkdirSync(path.dirname(backup), { recursive: true });
  try {
    renameSync(loose, backup);
  } catch {
    return; // 已经被别人挪走或改写了
  }
  // 检查和改名之间别人写下了有效的引用：它不是坏的，不留“损坏”的备份（马上会写回同一个提交）
  const moved = readFileSync(backup, "utf8").trim();
  if (/^[0-9a-f]{40,64}$/.test(moved) && (await isCommit(kitRoot, moved))) rmSync(backup, { force: true });
}

async function isCommit(kitRoot: string, hash: string): Promise<boolean> {
  try {
    await gitQuiet(kitRoot, ["cat-file", "-e", `${hash}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/** 课程生成的提交都带固定身份；手工提交不会有。 */
async function isCourseCommit(kitRoot: string, commit: string): Promise<boolean> {
  try {
    const email = await gitAt(kitRoot).raw(["log", "-1", "--format=%ae%n%ce", commit]);
    return email.trim().split("\n").every((line) => line === IDENTITY.email);
  } catch {
    return true;
  }
}

function readCache(cachePath: string): CacheFile | undefined {
  try {
    const parsed = JSON.parse(readFileSync(cachePath, "utf8")) as CacheFile;
    return parsed.version === BUILDER_VERSION ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function writeCache(cachePath: string, cache: CacheFile): void {
  mkdirSync(path.dirname(cachePath), { recursive: true });
  const temporary = `${cachePath}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(cache, null, 2)}\n`);
  renameSync(temporary, cachePath);
}

function stripCache(cache: CacheFile): CourseHistory {
  const { branch, base, tip, chapters } = cache;
  return { branch, base, tip, chapters };
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n").find((line) => line.trim() !== "") ?? message).trim();
}

export function shortHash(hash: string): string {
  return hash.slice(0, 8);
}

/** 把某个课程提交的整棵树写到 dir（dir 必须已存在）；不碰任何工作区和真实索引。 */
export async function checkoutTree(kitRoot: string, commit: string, dir: string): Promise<void> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), "pi-course-index-"));
  try {
    const index = { env: { GIT_INDEX_FILE: path.join(scratch, "index") } };
    await gitQuiet(kitRoot, ["read-tree", commit], index);
    await gitQuiet(kitRoot, ["checkout-index", "--all", "--force", `--prefix=${dir}${path.sep}`], index);
  } catch (error) {
    throw explainGitFailure(error, `取出提交 ${shortHash(commit)} 的文件`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** 读取某个提交里的一个文件。 */
export async function readCommittedFile(kitRoot: string, commit: string, file: string): Promise<string> {
  try {
    return await gitAt(kitRoot).raw(["cat-file", "blob", `${commit}:${file}`]);
  } catch (error) {
    throw explainGitFailure(error, `读取 ${shortHash(commit)}:${file} `);
  }
}

/** 某个提交里 prefix 之下的全部文件及其 blob 哈希。 */
export async function listCommittedFiles(kitRoot: string, commit: string, prefix = ""): Promise<Map<string, string>> {
  const args = ["ls-tree", "-r", "-z", commit];
  if (prefix) args.push("--", prefix);
  const out = await gitAt(kitRoot).raw(args);
  const files = new Map<string, string>();
  for (const entry of out.split("\0")) {
    const match = /^\d+ blob ([0-9a-f]+)\t(.+)$/s.exec(entry);
    if (match?.[1] && match[2]) files.set(match[2], match[1]);
  }
  return files;
}
