import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";

import { renderPracticeGuide } from "./card.js";
import type { Chapter } from "./chapters.js";
import { CourseError, usageError } from "./errors.js";
import { checkoutTree, practiceStart, readCommittedFile, type CourseHistory } from "./history.js";
import { abortGitProcesses } from "./git.js";
import { createLink, isSymlink, practiceLinks } from "./links.js";
import { isInside } from "./paths.js";
import type { Progress } from "./progress.js";
import { practiceTeachingFiles } from "./starter.js";
import type { ContinueOrigin, ContinuePlan } from "./continue.js";

export const PRACTICE_MARKER = ".pi-course-practice.json";
export const GUIDE_FILE = "LEARNING.md";

export interface PracticeMarker {
  chapter: string;
  slug: string;
  /** 练习目录取自哪个提交：重建章是起点，观察章是目标。 */
  start: string;
  kitRoot: string;
  /** 用 --continue 接着学习者上一章的目录建的：来历与各文件的归属（普通 practice 没有这一项）。 */
  origin?: ContinueOrigin;
}

export interface PracticeResult {
  dir: string;
  start: string;
}

/**
 * 命令没写目录时用哪个练习目录：进度里记下的（仍然存在且属于这一章），
 * 否则是套件旁边的默认目录。
 */
export function choosePracticeDir(
  kitRoot: string,
  chapter: Chapter,
  progress: Progress,
  input: string | undefined,
  cwd: string,
): { dir: string; explicit: boolean } {
  if (input !== undefined) return { dir: path.resolve(cwd, input), explicit: true };
  const recorded = progress.practiceDirs[chapter.id];
  if (recorded && existsSync(recorded)) {
    try {
      if (readPracticeMarker(recorded)?.chapter === chapter.id) return { dir: recorded, explicit: false };
    } catch {
      // 记下的目录标记坏了：退回默认目录
    }
  }
  return { dir: defaultPracticeDir(kitRoot, chapter), explicit: false };
}

/** 默认练习目录：课程套件旁边的 pi-practice-NN。 */
export function defaultPracticeDir(kitRoot: string, chapter: Chapter): string {
  return path.join(path.dirname(kitRoot), `pi-practice-${chapter.id}`);
}

/** 读取练习目录的标记；目录里没有标记（不是练习目录）时返回 undefined，标记损坏时抛错。 */
export function readPracticeMarker(dir: string): PracticeMarker | undefined {
  const file = path.join(dir, PRACTICE_MARKER);
  if (!existsSync(file)) return undefined;
  try {
    const marker = JSON.parse(readFileSync(file, "utf8")) as Partial<PracticeMarker>;
    if (typeof marker.chapter === "string" && typeof marker.start === "string") {
      const origin = isOrigin(marker.origin) ? { origin: marker.origin } : {};
      return { chapter: marker.chapter, slug: marker.slug ?? "", start: marker.start, kitRoot: marker.kitRoot ?? "", ...origin };
    }
  } catch {
    // 落到下面的统一说明
  }
  throw new CourseError("PRACTICE_MARKER_BROKEN", `${file} 已损坏：请用 npm run practice 重新创建一个练习目录，把你的文件搬过去`);
}

function isOrigin(value: unknown): value is ContinueOrigin {
  if (typeof value !== "object" || value === null) return false;
  const origin = value as Record<string, unknown>;
  const lists = ["own", "merged", "course", "mine"].every((key) => Array.isArray(origin[key]) && (origin[key] as unknown[]).every((item) => typeof item === "string"));
  return typeof origin.from === "string" && typeof origin.chapter === "string" && typeof origin.ownSince === "string" && lists;
}

/** 练习目录记下的套件已经不在原处：它被移动或改名了，可以改记成现在这份。 */
export function kitMoved(recordedKit: string): boolean {
  return !existsSync(path.join(recordedKit, "scripts", "doctor.ts"));
}

/**
 * 套件被移动或改名后，把练习目录标记里的套件位置改记成现在这份（只改 kitRoot 一个字段）。
 * 记下的套件还在时什么也不做：那是另一份套件创建的练习目录，不替学习者改主意。
 */
export function repairMarker(kitRoot: string, dir: string): string[] {
  const marker = readPracticeMarker(dir);
  if (!marker || path.resolve(marker.kitRoot) === path.resolve(kitRoot) || !kitMoved(marker.kitRoot)) return [];
  const file = path.join(dir, PRACTICE_MARKER);
  const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  writeFileSync(file, `${JSON.stringify({ ...raw, kitRoot }, null, 2)}\n`);
  return [`练习目录记下的课程套件改成了 ${kitRoot}（原来的 ${marker.kitRoot} 已不在）`];
}

/**
 * 确认 dir 是这一章的练习目录（有 .pi-course-practice.json 且章节一致），
 * 否则抛出一句告诉学习者怎么办的错误。
 * explicit：目录是学习者在命令里写出来的。写出来的目录不存在是用法错误（多半是路径写错了，退出码 2）；
 * 默认或记下的目录不存在只说明还没运行 practice（退出码 1）。
 */
export function openPracticeDir(dir: string, chapter: Chapter, explicit = false): PracticeMarker {
  if (!existsSync(dir)) {
    if (explicit) {
      throw usageError("PRACTICE_MISSING", `练习目录 ${dir} 不存在：检查路径是否写对；要新建它，运行 npm run practice -- ${chapter.id} ${dir}`);
    }
    throw new CourseError("PRACTICE_MISSING", `练习目录 ${dir} 不存在：先运行 npm run practice -- ${chapter.id}（或在命令后面写出你的练习目录）`);
  }
  if (!statSync(dir).isDirectory()) throw usageError("PRACTICE_NOT_DIR", `${dir} 不是目录`);
  const marker = readPracticeMarker(dir);
  if (!marker) {
    throw usageError(
      "NOT_PRACTICE_DIR",
      `${dir} 不是练习目录（没有 ${PRACTICE_MARKER}）：练习目录由 npm run practice -- ${chapter.id} 创建`,
    );
  }
  if (marker.chapter !== chapter.id) {
    throw usageError(
      "PRACTICE_OTHER_CHAPTER",
      `${dir} 是第 ${marker.chapter} 章的练习目录，不是第 ${chapter.id} 章的；换成第 ${marker.chapter} 章，或运行 npm run practice -- ${chapter.id}`,
    );
  }
  return marker;
}

/**
 * 生成一个隔离的练习目录：起点的代码、本章的聚焦测试、脚手架、LEARNING.md，
 * 以及指向套件依赖的 node_modules。先在同级临时目录里做完，再一次性改名，
 * 所以中途失败或被打断都不会留下半成品，也不会碰到已有的文件。
 * 两个 practice 同时建同一个目录时，改名只有一个能成功，另一个得到一句说明。
 */
export async function createPractice(options: {
  kitRoot: string;
  chapter: Chapter;
  history: CourseHistory;
  dir: string;
  /** 被 Ctrl-C 打断时由 interruptible 触发：停在下一步之前，收尾后退出。 */
  stop?: AbortSignal;
  /** --continue：不从课程起点，而是按算好的内容（学习者的代码 + 本章的改动）建目录。 */
  plan?: ContinuePlan;
}): Promise<PracticeResult> {
  const { kitRoot, chapter, history, stop, plan } = options;
  const dir = path.resolve(options.dir);
  checkDestination(kitRoot, chapter, dir);

  const parentDir = path.dirname(dir);
  const staging = path.join(parentDir, `.${path.basename(dir)}.partial-${process.pid}-${Date.now()}`);
  makeStaging(parentDir, staging);
  try {
    const start = practiceStart(chapter, history);
    if (plan) fillContinued(kitRoot, chapter, history, start, plan, staging);
    else await fillPractice(kitRoot, chapter, history, start, staging);
    await pauseForTests(stop);
    stop?.throwIfAborted();
    moveIntoPlace(staging, dir, chapter);
    return { dir, start };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * 运行一段可以被 Ctrl-C / SIGTERM 打断的工作：收到信号时先结束 git 子进程、让工作在下一步停下，
 * 等它自己的收尾（删临时目录）做完，再以 130 / 143 退出。
 */
export async function interruptible<T>(work: (stop: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    abortGitProcesses();
    stop.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const result = await work(stop.signal);
    if (received) process.exit(received === "SIGINT" ? 130 : 143);
    return result;
  } catch (error) {
    if (received) process.exit(received === "SIGINT" ? 130 : 143);
    throw error;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** 建父目录和同级的临时目录；没有写权限之类的失败说成一句话。 */
function makeStaging(parentDir: string, staging: string): void {
  try {
    mkdirSync(parentDir, { recursive: true });
    mkdirSync(staging);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "未知错误";
    throw new CourseError("PRACTICE_UNWRITABLE", `无法在 ${parentDir} 里创建练习目录（${code}：多半是没有写权限）；请换一个你能写入的目录`);
  }
}

/** 一次改名把做好的目录放到位；目标在这期间被别人（另一个 practice）占了就停下，什么也不覆盖。 */
function moveIntoPlace(staging: string, dir: string, chapter: Chapter): void {
  try {
    if (existsSync(dir)) rmdirSync(dir); // 只可能是空目录：checkDestination 已拒绝非空目录；非空时 rmdir 会失败
    renameSync(staging, dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST" || code === "ENOTDIR") {
      throw usageError("PRACTICE_TAKEN", `${dir} 刚刚被另一个命令创建或写入（例如同时运行了两次 practice）；为免覆盖，这次什么也没做。要用它：cd ${dir}`);
    }
    throw new CourseError("PRACTICE_UNWRITABLE", `无法把练习目录放到 ${dir}（${code ?? "未知错误"}）；请换一个目录`);
  }
}

export function checkDestination(kitRoot: string, chapter: Chapter, dir: string): void {
  if (isSymlink(dir)) {
    throw usageError(
      "PRACTICE_SYMLINK",
      `${dir} 是一个符号链接${existsSync(dir) ? "" : "（而且指向的地方不存在）"}：为免写到意料之外的地方，请直接写出真实的目录，或换一个不存在的目录`,
    );
  }
  const kit = realpathSync(kitRoot);
  if (isInside(kit, nearestExisting(dir))) {
    throw usageError(
      "PRACTICE_INSIDE_KIT",
      `练习目录 ${dir} 位于课程套件之内：那里的模块解析会找到最终答案。请换到套件之外，例如 ${defaultPracticeDir(kitRoot, chapter)}`,
    );
  }
  if (!existsSync(dir)) return;
  if (!statSync(dir).isDirectory()) {
    throw usageError("PRACTICE_NOT_DIR", `${dir} 已存在且不是目录；请换一个练习目录`);
  }
  if (readdirSync(dir).length > 0) {
    const existing = markerIfAny(dir);
    if (existing?.chapter === chapter.id) {
      throw usageError(
        "PRACTICE_EXISTS",
        `${dir}：这已经是第 ${chapter.id} 章的练习目录，接着做即可；要重新开始请换一个目录（npm run practice -- ${chapter.id} <新目录>）`,
      );
    }
    if (existing) {
      throw usageError("PRACTICE_NOT_EMPTY", `${dir} 是第 ${existing.chapter} 章的练习目录；第 ${chapter.id} 章请换一个不存在或为空的目录`);
    }
    throw usageError("PRACTICE_NOT_EMPTY", `${dir} 已存在且不是空目录；为免覆盖你的文件，请换一个目录或先自行清理`);
  }
}

/** 非空目录里的练习目录标记；没有或坏了都当作没有（反正都不会去覆盖它）。 */
function markerIfAny(dir: string): PracticeMarker | undefined {
  try {
    return readPracticeMarker(dir);
  } catch {
    return undefined;
  }
}

/** 沿父目录找到第一个存在的路径并取真实路径，这样符号链接也骗不过“在套件内”的检查。 */
function nearestExisting(target: string): string {
  let current = target;
  while (!existsSync(current)) current = path.dirname(current);
  const rest = path.relative(current, target);
  return path.join(realpathSync(current), rest);
}

async function fillPractice(
  kitRoot: string,
  chapter: Chapter,
  history: CourseHistory,
  start: string,
  dir: string,
): Promise<void> {
  await checkoutTree(kitRoot, start, dir);
  const commits = history.chapters[chapter.id];
  if (chapter.mode === "重建" && commits) {
    const focused = await readCommittedFile(kitRoot, commits.target, chapter.focusedTest.path);
    writeProjectFile(dir, chapter.focusedTest.path, focused);
  }
  // 标了实践区域的章节：教学文件是切掉区域的目标（DESIGN §4.9），不再另存一份脚手架。
  for (const [file, content] of await practiceTeachingFiles(kitRoot, chapter, history)) writeProjectFile(dir, file, content);
  writeFileSync(path.join(dir, GUIDE_FILE), renderPracticeGuide(chapter, history));
  const marker: PracticeMarker = { chapter: chapter.id, slug: chapter.slug, start, kitRoot };
  writeFileSync(path.join(dir, PRACTICE_MARKER), `${JSON.stringify(marker, null, 2)}\n`);
  linkDependencies(kitRoot, dir);
}

/** 接续目录：学习者的代码 + 本章的改动（continue.ts 已经算好），再加上和普通练习目录一样的卡片、标记与依赖链接。 */
function fillContinued(kitRoot: string, chapter: Chapter, history: CourseHistory, start: string, plan: ContinuePlan, dir: string): void {
  writePlan(plan, dir);
  writeFileSync(path.join(dir, GUIDE_FILE), `${renderPracticeGuide(chapter, history).trimEnd()}\n\n${continuedNote(chapter, plan)}`);
  const marker: PracticeMarker = { chapter: chapter.id, slug: chapter.slug, start, kitRoot, origin: plan.origin };
  writeFileSync(path.join(dir, PRACTICE_MARKER), `${JSON.stringify(marker, null, 2)}\n`);
  linkDependencies(kitRoot, dir);
}

/** 接续目录的卡片末尾：这里的代码从哪来，哪些文件是你的。 */
function continuedNote(chapter: Chapter, plan: ContinuePlan): string {
  const { origin } = plan;
  const list = (title: string, files: readonly string[]) => (files.length > 0 ? [`- ${title}：${files.map((file) => `\`${file}\``).join("、")}`] : []);
  return [
    "## 这个目录接着你自己的代码",
    "",
    `它由 \`npm run practice -- ${chapter.id} --continue\` 从你第 ${origin.chapter} 章的目录 \`${origin.from}\` 建成：自第 ${origin.ownSince} 章起的代码都是你自己写的。`,
    "",
    ...list("原样带来的你的文件", origin.own),
    ...list("织进了本章改动的你的文件", origin.merged),
    ...list("保留你的版本、本章的改动要你自己写", origin.mine),
    ...list("换成了课程版本的文件", origin.course),
    "",
    `某个文件改乱了：\`npm run reset -- ${chapter.id} <文件>\` 把它放回这里的起点（也就是上面这些你自己的版本），你的改动先进 \`.pi-course/backup/\`。`,
    "",
  ].join("\n");
}

function writeProjectFile(root: string, file: string, content: string): void {
  const target = path.join(root, file);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, content);
}

/**
 * 逐个包链接套件已安装的依赖（布局与理由见 links.ts），唯独跳过 @pi：那里链接着套件里的最终答案，
 * 练习目录里任何 import 都不该解析到它。
 */
export function linkDependencies(kitRoot: string, dir: string): void {
  if (!existsSync(path.join(kitRoot, "node_modules"))) {
    throw new CourseError("NOT_INSTALLED", "课程套件还没有安装依赖：请先在套件根目录运行 npm ci");
  }
  mkdirSync(path.join(dir, "node_modules"));
  for (const link of practiceLinks(kitRoot, dir)) createLink(dir, link);
}

/** 自检用的测试缝：让“中途被打断”可以被稳定地复现。停在这里直到被打断。 */
async function pauseForTests(stop: AbortSignal | undefined): Promise<void> {
  if (process.env.PI_COURSE_TEST_PAUSE_BEFORE_RENAME !== "1") return;
  process.stderr.write("pause-before-rename\n");
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {}, 1_000);
    stop?.addEventListener("abort", () => {
      clearInterval(timer);
      resolve();
    });
  });
}

/** 把算好的内容写进（临时）目录。 */
export function writePlan(plan: ContinuePlan, dir: string): void {
  for (const [file, content] of plan.files) {
    const target = path.join(dir, ...file.split("/"));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
  for (const [file, link] of plan.links) {
    const target = path.join(dir, ...file.split("/"));
    mkdirSync(path.dirname(target), { recursive: true });
    symlinkSync(link, target);
  }
  writeStarts(dir, plan.starts);
}

/** reset 要用的起点快照：.pi-course/start/<文件>。 */
export const START_DIR = path.join(".pi-course", "start");

function writeStarts(dir: string, starts: ReadonlyMap<string, Buffer>): void {
  for (const [file, content] of starts) {
    const target = path.join(dir, START_DIR, ...file.split("/"));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
}

/** 接续目录里某个文件的起点快照；起点时没有这个文件就是 undefined。 */
export function startSnapshot(dir: string, file: string): Buffer | undefined {
  const snapshot = path.join(dir, START_DIR, ...file.split("/"));
  try {
    if (!lstatSync(snapshot).isFile()) return undefined;
    return readFileSync(snapshot);
  } catch {
    return undefined;
  }
}
