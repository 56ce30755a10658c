import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { CourseError, usageError } from "./errors.js";
import { listCommittedFiles, practiceStart, readCommittedFile, shortHash, type CourseHistory } from "./history.js";
import type { Deviation } from "./deviation.js";
import { COURSE_PACKAGE } from "./paths.js";
import { entriesUnder } from "../kit-cache.mjs";
import { withoutMarkers } from "./regions.js";
import { practiceTeachingFiles } from "./starter.js";

/**
 * 接着自己的代码做下一章（npm run practice -- 04 --continue）。
 *
 * 课程的说法里，学习者第 03 章做完的目录 ≈ 第 03 章的目标（= 第 04 章的起点），只是教学文件换成了他自己写的。
 * 所以对每个文件比三份内容：
 *   base   第 04 章起点里的样子（课程自己的第 03 章答案）
 *   theirs 普通的 practice 04 会写下的样子（起点 + 本章聚焦测试 + 从目标切出的脚手架）
 *   ours   学习者目录里的样子
 * base 与 theirs 相同：本章不碰它，留学习者的。不同：学习者没动过就换成 theirs；动过就做三方合并，
 * 合并干净就用合并结果（学习者的代码原样，本章的改动织进去），冲突就整体拒绝、逐个文件说明怎么办。
 * 什么都在内存里算好才写：要么整个目录建成，要么什么也不建，绝不半套补丁。
 */

/** 练习目录里记下的来历：status 据此区分“自己的代码”和“课程的代码”，reset 据此找回起点。 */
export interface ContinueOrigin {
  /** 接续自哪个练习目录。 */
  from: string;
  /** 那个目录是第几章的。 */
  chapter: string;
  /** 从第几章起一直是学习者自己的代码（接续的链条从哪一章开始）。 */
  ownSince: string;
  /** 原样带过来的学习者文件。 */
  own: string[];
  /** 织进了本章改动的学习者文件。 */
  merged: string[];
  /** 按 --use-course 换成课程版本的文件。 */
  course: string[];
  /** 按 --keep-mine 原样保留、本章对它的改动留给学习者自己写的文件。 */
  mine: string[];
}

/** 一个套不上的文件：为什么，以及怎么办。 */
export interface ContinueConflict {
  file: string;
  /** 学习者拥有的教学文件（更早章节教过的）还是课程的文件（测试辅助、package.json 之类）。 */
  kind: "teaching" | "course";
  reason: "conflict" | "deleted" | "taken";
}

export interface ContinuePlan {
  /** 新目录里要写下的全部文件（相对项目根，/ 分隔）→ 内容；符号链接单独列出。 */
  files: Map<string, Buffer>;
  links: Map<string, string>;
  origin: ContinueOrigin;
  conflicts: ContinueConflict[];
  /** 起点快照：新目录里各教学文件一开始的样子（reset 用）；不在这里的教学文件起点时不存在。 */
  starts: Map<string, Buffer>;
}

/** 复制学习者目录时跳过的：依赖链接、编译产物、套件自己的记录。 */
const SKIPPED_TOP = new Set(["node_modules", ".git", ".pi-course", ".pi-course-practice.json", "LEARNING.md"]);

export function skippedPath(relative: string): boolean {
  const parts = relative.split("/");
  if (SKIPPED_TOP.has(parts[0] ?? "")) return true;
  if (parts.includes("node_modules")) return true;
  if (relative === `${COURSE_PACKAGE}/dist` || relative.startsWith(`${COURSE_PACKAGE}/dist/`)) return true;
  return relative.endsWith(".tsbuildinfo");
}

/** 学习者目录里的文件与符号链接（相对路径用 /）。 */
export interface LearnerTree {
  files: Map<string, Buffer>;
  links: Map<string, string>;
}

/** 读出学习者目录：跳过的目录（node_modules、dist）整棵不进去，符号链接记成链接本身、不跟过去。 */
export function readLearnerTree(dir: string): LearnerTree {
  const { files, links } = entriesUnder(dir, ".", { skip: skippedPath });
  return {
    files: new Map(files.map((file) => [file, readFileSync(path.join(dir, file))])),
    links: new Map(links.map((link) => [link, readlinkSync(path.join(dir, link))])),
  };
}

/**
 * 学习者目录此刻的指纹：接续会复制的每个文件与符号链接（路径和内容）。verify 通过时记下它；
 * 接续时指纹没变，就是 verify 亲眼看到全部通过的那份代码，不必再跑一遍上一章和更早各章的测试。
 */
export function treeFingerprint({ files, links }: LearnerTree): string {
  const hash = createHash("sha256");
  for (const file of [...files.keys()].sort()) hash.update(`f\0${file}\0${blobHash(files.get(file) as Buffer)}\0`);
  for (const link of [...links.keys()].sort()) hash.update(`l\0${link}\0${links.get(link)}\0`);
  return hash.digest("hex");
}

/** git 的 blob 哈希；学习者的文件先把 CRLF 换成 LF 再算（Windows 上的编辑器不该算作改动）。 */
function blobHash(content: Buffer | string): string {
  const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
  return createHash("sha1").update(`blob ${body.length}\0`).update(body).digest("hex");
}

function learnerHash(content: Buffer): string {
  return blobHash(content.toString("utf8").replace(/\r\n/g, "\n"));
}

/** 本章之前各章的教学文件：学习者写过、拥有的文件。 */
export function ownedTeachingFiles(chapters: readonly Chapter[], chapter: Chapter): Set<string> {
  return new Set(chapters.filter((other) => other.id < chapter.id).flatMap((other) => other.teachingFiles));
}

export function previousChapter(chapters: readonly Chapter[], chapter: Chapter): Chapter {
  const index = chapters.findIndex((other) => other.id === chapter.id);
  const previous = index > 0 ? chapters[index - 1] : undefined;
  if (!previous) throw usageError("CONTINUE_FIRST", `第 ${chapter.id} 章前面没有章节，无从接续；运行 npm run practice -- ${chapter.id}`);
  return previous;
}

/**
 * 普通 practice 会写下的内容，以哈希表示（只有本章改动过的文件才真正读出内容）。
 */
async function courseStart(kitRoot: string, chapter: Chapter, history: CourseHistory) {
  const start = practiceStart(chapter, history);
  const base = await listCommittedFiles(kitRoot, start);
  const theirs = new Map(base);
  const contents = new Map<string, string>();
  const target = history.chapters[chapter.id]?.target;
  if (target) {
    const focused = await readCommittedFile(kitRoot, target, chapter.focusedTest.path);
    contents.set(chapter.focusedTest.path, focused);
    theirs.set(chapter.focusedTest.path, blobHash(focused));
  }
  for (const [file, content] of await practiceTeachingFiles(kitRoot, chapter, history)) {
    contents.set(file, content);
    theirs.set(file, blobHash(content));
  }
  return { start, base, theirs, contents };
}

/**
 * 算出接续目录的全部内容。useCourse / keepMine 是学习者对冲突文件的选择（相对项目根的路径）。
 */
export async function planContinue(options: {
  kitRoot: string;
  chapters: readonly Chapter[];
  chapter: Chapter;
  history: CourseHistory;
  source: string;
  sourceOrigin?: ContinueOrigin | undefined;
  useCourse?: readonly string[];
  keepMine?: readonly string[];
  /** 已经读出的学习者目录（接续的关卡刚读过一遍，就不再读第二遍）；不给时现读。 */
  learner?: LearnerTree;
}): Promise<ContinuePlan> {
  const { kitRoot, chapters, chapter, history, source } = options;
  const previous = previousChapter(chapters, chapter);
  const owned = ownedTeachingFiles(chapters, chapter);
  const useCourse = new Set(options.useCourse ?? []);
  const keepMine = new Set(options.keepMine ?? []);
  const { start, base, theirs, contents } = await courseStart(kitRoot, chapter, history);
  const learner = options.learner ?? readLearnerTree(source);

  const files = new Map<string, Buffer>();
  const origin: ContinueOrigin = {
    from: source,
    chapter: previous.id,
    // 观察章（第 00 章）里学习者没有写代码：接着它做的第 01 章才是自己代码的开头
    ownSince: options.sourceOrigin?.ownSince ?? (previous.mode === "观察" ? chapter.id : previous.id),
    own: [],
    merged: [],
    course: [],
    mine: [],
  };
  const conflicts: ContinueConflict[] = [];
  const courseText = async (file: string): Promise<string | undefined> => {
    if (contents.has(file)) return contents.get(file);
    if (!theirs.has(file)) return undefined;
    return readCommittedFile(kitRoot, start, file);
  };
  const baseText = async (file: string): Promise<string | undefined> => (base.has(file) ? readCommittedFile(kitRoot, start, file) : undefined);

  const all = new Set([...base.keys(), ...theirs.keys(), ...learner.files.keys()]);
  for (const file of [...all].sort()) {
    if (learner.links.has(file)) continue;
    const ours = learner.files.get(file);
    const baseHash = base.get(file);
    const theirHash = theirs.get(file);
    const ourHash = ours === undefined ? undefined : learnerHash(ours);
    const isOwned = owned.has(file);
    const takeCourse = async () => {
      const text = await courseText(file);
      if (text !== undefined) files.set(file, Buffer.from(text));
    };

    if (useCourse.has(file)) {
      await takeCourse();
      origin.course.push(file);
      continue;
    }
    if (baseHash === theirHash) {
      // 本章不碰这个文件：学习者有就用学习者的，没有（删掉了）就照旧没有
      if (ours !== undefined) {
        files.set(file, ours);
        if (isOwned) origin.own.push(file);
      }
      continue;
    }
    // 本章改动了它
    if (ourHash === baseHash || ourHash === theirHash) {
      if (ours !== undefined && ourHash === theirHash) {
        files.set(file, ours);
        if (isOwned) origin.own.push(file);
      } else {
        // 学习者的文件与课程上一章的答案逐字相同：本章的改动直接套上，等于一次干净的合并
        await takeCourse();
        if (isOwned && ours !== undefined) origin.merged.push(file);
      }
      continue;
    }
    if (keepMine.has(file) && ours !== undefined) {
      files.set(file, ours);
      origin.mine.push(file);
      continue;
    }
    const kind = isOwned ? "teaching" : "course";
    if (ours === undefined) {
      conflicts.push({ file, kind, reason: "deleted" });
      continue;
    }
    const [before, after] = await Promise.all([baseText(file), courseText(file)]);
    if (before === undefined || after === undefined) {
      // 课程要新建（或删掉）的文件，学习者那里已经有一个自己的同名文件
      conflicts.push({ file, kind, reason: "taken" });
      continue;
    }
    // 区域标记只是课程历史里的注释：学习者的文件里本来就没有本章以前切掉的那些标记，
    // 扩展区域又会把标记挪位置。三方都去掉标记再合并，合并只看代码本身。
    const merged = mergeThreeWay(withoutMarkers(ours.toString("utf8").replace(/\r\n/g, "\n")), withoutMarkers(before), withoutMarkers(after));
    if (merged === undefined) {
      conflicts.push({ file, kind, reason: "conflict" });
      continue;
    }
    files.set(file, Buffer.from(merged));
    origin.merged.push(file);
  }

  const links = new Map([...learner.links].filter(([file]) => !files.has(file)));
  const starts = new Map<string, Buffer>();
  for (const file of new Set([...owned, ...chapter.teachingFiles])) {
    const content = files.get(file);
    if (content !== undefined) starts.set(file, content);
  }
  return { files, links, origin, conflicts, starts };
}

/**
 * 三方合并（git merge-file）：base → ours 是学习者的写法，base → theirs 是本章的改动。
 * 干净时返回结果，有冲突时返回 undefined。
 */
export function mergeThreeWay(ours: string, base: string, theirs: string): string | undefined {
  const scratch = mkdtempSync(path.join(os.tmpdir(), "pi-course-merge-"));
  try {
    const [oursFile, baseFile, theirsFile] = ["ours", "base", "theirs"].map((name) => path.join(scratch, name)) as [string, string, string];
    writeFileSync(oursFile, ours);
    writeFileSync(baseFile, base);
    writeFileSync(theirsFile, theirs);
    const result = spawnSync("git", ["merge-file", "-p", "-q", oursFile, baseFile, theirsFile], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    if (result.error) throw new CourseError("GIT_MISSING", `运行 git merge-file 失败（${result.error.message}）：请确认已安装 git`);
    return result.status === 0 ? result.stdout : undefined;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * 套不上的文件逐个说明：发生了什么、看改动的命令、可以怎么选。
 */
export function conflictReport(
  conflicts: readonly ContinueConflict[],
  context: { kitRoot: string; chapter: Chapter; history: CourseHistory; source: string },
): string[] {
  const { kitRoot, chapter, history, source } = context;
  const commits = history.chapters[chapter.id];
  const parent = shortHash(commits?.parent ?? "");
  const target = shortHash(commits?.target ?? "");
  const lines = [`第 ${chapter.id} 章的改动有 ${conflicts.length} 个文件套不上你在 ${source} 里的代码，所以什么也没有创建：`];
  for (const conflict of conflicts) {
    const { file } = conflict;
    const what =
      conflict.reason === "deleted"
        ? "你删掉了这个文件（或给它改了名），而本章要改它"
        : conflict.reason === "taken"
          ? "本章要新建（或删掉）这个文件，而你那里已经有一个自己的同名文件"
          : conflict.kind === "teaching"
            ? "这是你自己写的教学文件，本章的改动落在你改写过的地方"
            : "这是课程的文件（不是教学文件），你改动过它，本章又要改它";
    lines.push(`  ${file}：${what}。`);
    lines.push(`    看本章对它的改动：git -C ${kitRoot} diff ${parent} ${target} -- ${file}`);
    if (conflict.reason === "deleted") {
      lines.push(`    用课程的版本：加 --use-course ${file}；或者先在 ${source} 里把它放回来，再运行一次`);
    } else if (conflict.kind === "teaching" && conflict.reason === "conflict") {
      lines.push(`    保留你的版本、本章的改动自己照着写：加 --keep-mine ${file}`);
      lines.push(`    或者这一个文件用课程的版本（你的版本仍在原来的目录里）：加 --use-course ${file}`);
    } else {
      lines.push(`    这个文件用课程的版本（你的版本仍在原来的目录里）：加 --use-course ${file}`);
      if (conflict.reason === "conflict") lines.push(`    或者先在 ${source} 里把它还原成课程的样子，再运行一次`);
    }
  }
  lines.push(`或者不接续，从课程起点开始：npm run practice -- ${chapter.id}`);
  return lines;
}

/** 第一处偏差压成一句（接续被拒时用）。 */
export function deviationSummary(deviation: Deviation | undefined): string {
  if (!deviation) return "测试数对不上";
  switch (deviation.kind) {
    case "tsc":
      return `tsc 报错 ${deviation.error.file}:${deviation.error.line} ${deviation.error.code} ${deviation.error.message}`;
    case "build":
      return "tsc 没能编译";
    case "load":
      return `第 ${deviation.chapter.id} 章的测试文件没能运行`;
    case "test":
      return `第 ${deviation.chapter.id} 章的测试「${deviation.test.name}」没通过`;
    case "count":
      return `实践 ${deviation.lab.id} 的测试数对不上`;
    case "missing":
      return `缺少测试文件 ${deviation.files.map((change) => change.file).join("、")}`;
    case "modified":
      return `测试文件 ${deviation.files.map((change) => change.file).join("、")} 被改动过`;
  }
}
