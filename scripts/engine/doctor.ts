import { execFile } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, unlinkSync, watch } from "node:fs";
import os from "node:os";
import path from "node:path";

import { findChapter, type Chapter } from "./chapters.js";
import { binsIntoKit, createLink, isSymlink, linkedGroupDirs, linkTarget, practiceLinks } from "./links.js";
import { isCourseError } from "./errors.js";
import { ensureHistory, inspectHistory, locateGitDir, practiceStart, shortHash, type CourseHistory } from "./history.js";
import { COURSE_BRANCH, COURSE_PACKAGE, isInside } from "./paths.js";
import { kitMoved, PRACTICE_MARKER, readPracticeMarker, repairMarker } from "./practice.js";
import { inspectProgress, PROGRESS_ENV, updateProgress } from "./progress.js";
import { testFileChanges } from "./verify.js";

/**
 * doctor 的每一项检查：稳定的 id（--fix 与 --json 认它，不认显示的标题）、所属的组、结论、一句说明、
 * 不通过时的修复办法，以及能自动修的项带的 repair。检查本身只读；repair 只在 --fix 时由命令调用。
 */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

/** kit：套件与环境；practice：一个练习目录（打印时缩进在目录那一行下面）。 */
export type CheckGroup = "kit" | "practice";

export interface DoctorCheck {
  id: string;
  group: CheckGroup;
  title: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
  /** 自动修复，返回做了什么（每句一项）。函数不进 --json。 */
  repair?: () => Promise<string[]> | string[];
}

const RECOMMENDED_NODE: [number, number] = [20, 12];
const MIN_GIT: [number, number] = [2, 30];

function atLeast(version: string, minimum: [number, number]): boolean {
  const [major = 0, minor = 0] = version.split(".").map((part) => Number.parseInt(part, 10));
  return major > minimum[0] || (major === minimum[0] && minor >= minimum[1]);
}

/** CI（scripts/ci/node-lines.mjs）在这些版本线上运行整个 npm test；改动时两处一起改，有测试核对。 */
export const TESTED_NODE_LINES = [20, 22, 24, 26] as const;

/**
 * Node.js 各版本线何时成为 LTS、何时停止维护（nodejs.org 公布的发布计划）。
 * 奇数线从不成为 LTS。表里没有的线按“没有测试过”处理，不猜它的日期。
 */
const NODE_LINES: Record<number, { lts?: string; endOfLife: string }> = {
  20: { lts: "2023-10-24", endOfLife: "2026-04-30" },
  21: { endOfLife: "2024-06-01" },
  22: { lts: "2024-10-29", endOfLife: "2027-04-30" },
  23: { endOfLife: "2025-06-01" },
  24: { lts: "2025-10-28", endOfLife: "2028-04-30" },
  25: { endOfLife: "2026-06-01" },
  26: { lts: "2026-10-28", endOfLife: "2029-04-30" },
};

function testedLinesText(): string {
  return `课程在 Node ${TESTED_NODE_LINES.join("、")} 上测试`;
}

/** 建议换到的 LTS 线：受测的、今天已是 LTS 且还在维护的线里最新的两条。 */
function recommendedLines(today: string): string {
  const lines = TESTED_NODE_LINES.filter((line) => {
    const schedule = NODE_LINES[line];
    return schedule?.lts !== undefined && schedule.lts <= today && today < schedule.endOfLife;
  });
  return lines.slice(-2).join(" 或 ");
}

/**
 * 说出 Node.js 的版本线：是不是 LTS、是否已停止维护、课程是否在它上面测试过。
 * 课程需要 Node.js ≥ 20（package.json 的 engines）。停止维护的线照常能学，只是提醒换线；
 * 20.12 起才有的只是锦上添花（util.styleText 上色等），更早的 20.x 同样只是提醒。
 */
export function checkNode(version: string = process.versions.node, now: Date = new Date()): DoctorCheck {
  const title = "Node.js";
  const id = "node";
  const group = "kit";
  const today = now.toISOString().slice(0, 10);
  const recommended = recommendedLines(today);
  const major = Number.parseInt(version, 10);
  if (!atLeast(version, [20, 0])) {
    return { id, group, title, status: "fail", detail: `${version}：太旧，课程需要 Node.js ≥ 20；${testedLinesText()}`, fix: `安装 LTS 版本线 Node.js ${recommended}（https://nodejs.org/ 或 nvm install ${recommended.split(" ").at(-1)}）` };
  }
  const schedule = NODE_LINES[major];
  const tested = (TESTED_NODE_LINES as readonly number[]).includes(major);
  const notes: string[] = [];
  if (schedule && schedule.endOfLife <= today) notes.push(`${major} 号线已于 ${schedule.endOfLife} 停止维护，不再有安全更新`);
  else if (schedule?.lts !== undefined && schedule.lts <= today) notes.push(`${major} 号线是 LTS，维护到 ${schedule.endOfLife}`);
  else if (schedule?.lts !== undefined) notes.push(`${major} 号线要到 ${schedule.lts} 才成为 LTS`);
  else if (schedule) notes.push(`${major} 号线不是 LTS`);
  notes.push(tested ? testedLinesText() : `课程没有在 ${major} 号线上测试过，只在 Node ${TESTED_NODE_LINES.join("、")} 上测试`);
  const oldTwenty = !atLeast(version, RECOMMENDED_NODE);
  if (oldTwenty) notes.push(`彩色输出等少数便利要 ≥ ${RECOMMENDED_NODE.join(".")}，没有时命令照常工作、只是不上色`);
  const endOfLife = schedule !== undefined && schedule.endOfLife <= today;
  const isLts = schedule?.lts !== undefined && schedule.lts <= today && !endOfLife;
  const detail = `${version}（${notes.join("；")}）`;
  if (isLts && tested && !oldTwenty) return { id, group, title, status: "ok", detail };
  return { id, group, title, status: "warn", detail: `${detail}：可以学习`, fix: `换到 LTS 版本线 Node.js ${recommended}（nvm install ${recommended.split(" ").at(-1)}）` };
}

export function checkGit(): Promise<DoctorCheck> {
  const title = "git";
  const id = "git";
  const group = "kit";
  return new Promise((resolve) => {
    execFile("git", ["--version"], { env: { PATH: process.env.PATH ?? "", LANG: "C", LC_ALL: "C" } }, (error, stdout) => {
      if (error) {
        resolve({ id, group, title, status: "fail", detail: "找不到 git 命令", fix: `安装 git（≥ ${MIN_GIT.join(".")}）并确认它在 PATH 中` });
        return;
      }
      const version = /(\d+\.\d+(?:\.\d+)?)/.exec(stdout)?.[1] ?? "未知";
      resolve(
        atLeast(version, MIN_GIT)
          ? { id, group, title, status: "ok", detail: version }
          : { id, group, title, status: "warn", detail: `${version}：比 ${MIN_GIT.join(".")} 旧，部分命令可能失败`, fix: "升级 git" },
      );
    });
  });
}

export async function checkCheckout(kitRoot: string): Promise<DoctorCheck> {
  const title = "课程套件";
  const id = "checkout";
  const group = "kit";
  try {
    await locateGitDir(kitRoot);
    return { id, group, title, status: "ok", detail: `${kitRoot} 是 git 仓库` };
  } catch (error) {
    if (!isCourseError(error)) throw error;
    return { id, group, title, status: "fail", detail: error.message, fix: "git clone 课程仓库，而不是下载压缩包" };
  }
}

function packageVersion(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/** 依赖是否装好：node_modules 在，TypeScript 是 7，.bin/tsc 指向它（而不是 bench 用的 5.9）。 */
export function checkInstall(kitRoot: string): DoctorCheck[] {
  const modules = path.join(kitRoot, "node_modules");
  const fix = `在 ${kitRoot} 里运行 npm ci`;
  if (!existsSync(modules)) return [{ id: "install", group: "kit", title: "依赖", status: "fail", detail: "还没有安装（没有 node_modules）", fix }];
  const checks: DoctorCheck[] = [];
  const missing = ["typescript", "tsx", "simple-git", "@types/node"].filter((name) => !packageVersion(path.join(modules, name)));
  const ts = packageVersion(path.join(modules, "typescript"));
  if (missing.length > 0) checks.push({ id: "install", group: "kit", title: "依赖", status: "fail", detail: `缺少 ${missing.join("、")}`, fix });
  else if (!ts?.startsWith("7.")) checks.push({ id: "install", group: "kit", title: "依赖", status: "fail", detail: `typescript 是 ${ts}，课程需要 7.x`, fix });
  else checks.push({ id: "install", group: "kit", title: "依赖", status: "ok", detail: `typescript ${ts} · tsx ${packageVersion(path.join(modules, "tsx"))}` });

  const bin = path.join(modules, ".bin", "tsc");
  let binTarget = "";
  try {
    binTarget = realpathSync(bin);
  } catch {
    // 下面按“不存在”处理
  }
  const expected = path.join(modules, "typescript");
  if (binTarget === "" || !isInside(realpathSync(expected), binTarget)) {
    checks.push({
      id: "tsc",
      group: "kit",
      title: "tsc 命令",
      status: ts ? "fail" : "skip",
      detail: binTarget ? `node_modules/.bin/tsc 指向 ${path.relative(modules, binTarget)}，不是 TypeScript 7` : "node_modules/.bin/tsc 不存在",
      fix: "删掉 node_modules 后运行 npm ci（npm install 追加依赖时可能让 tsc 指向别的版本）",
    });
  } else {
    checks.push({ id: "tsc", group: "kit", title: "tsc 命令", status: "ok", detail: "node_modules/.bin/tsc → TypeScript 7" });
  }
  const ts59 = packageVersion(path.join(modules, "typescript-5.9"));
  checks.push(
    ts59
      ? { id: "typescript-5.9", group: "kit", title: "TypeScript 5.9（bench 对照）", status: "ok", detail: ts59 }
      : { id: "typescript-5.9", group: "kit", title: "TypeScript 5.9（bench 对照）", status: "warn", detail: "没有安装；只有 npm run bench 需要它", fix },
  );
  return checks;
}

export async function checkHistory(kitRoot: string, chapters: readonly Chapter[]): Promise<DoctorCheck> {
  const title = "课程历史";
  const id = "history";
  const group = "kit";
  const build = async () => {
    await ensureHistory(kitRoot, chapters);
    return ["构建了课程历史"];
  };
  try {
    const state = await inspectHistory(kitRoot, chapters);
    switch (state.state) {
      case "ready":
        return { id, group, title, status: "ok", detail: `${chapters.length} 章，分支 ${COURSE_BRANCH} → ${shortHash(state.tip)}，缓存有效` };
      case "missing":
        return { id, group, title, status: "warn", detail: `还没有构建分支 ${COURSE_BRANCH}（第一次运行命令时会自动构建，约 1 秒）`, fix: "npm run course -- history，或 npm run doctor -- --fix", repair: build };
      case "stale":
        return { id, group, title, status: "warn", detail: "课文或补丁变了，历史会在下一次命令时自动重建", fix: "npm run course -- history，或 npm run doctor -- --fix", repair: build };
      case "edited":
        return {
          id,
          group,
          title,
          status: "fail",
          detail: `分支 ${COURSE_BRANCH} 上有不是课程生成的提交（${shortHash(state.tip)}），命令会拒绝覆盖它`,
          fix: `git branch -m ${COURSE_BRANCH} my-course-notes 把它改名保留，然后重新运行命令`,
        };
    }
  } catch (error) {
    if (!isCourseError(error)) throw error;
    return { id, group, title, status: "fail", detail: error.message };
  }
}

export function checkProgressFile(file: string): DoctorCheck {
  const title = "进度文件";
  const id = "progress-file";
  const group = "kit";
  const inspected = inspectProgress(file);
  switch (inspected.state) {
    case "missing":
      return { id, group, title, status: "ok", detail: `${file}（还没有：第一次 verify 或 hint 时创建）` };
    case "ok": {
      const lit = Object.keys(inspected.progress.verified).length;
      return { id, group, title, status: "ok", detail: `${file}（已点亮 ${lit} 章）` };
    }
    case "corrupt":
      return {
        id,
        group,
        title,
        status: "warn",
        detail: `${file} ${inspected.reason}（读的命令按空白进度处理，文件原样保留）`,
        fix: `下一次记录进度的命令（practice、hint、verify 通过时）会先把它备份成 progress.json.corrupt-时间，再从空白开始；也可以用 ${PROGRESS_ENV} 换个位置`,
      };
    case "newer":
      return {
        id,
        group,
        title,
        status: "fail",
        detail: `${file} 来自更新版本的课程套件（格式版本 ${inspected.version}）；本套件的命令不会读它，也不会改它`,
        fix: "更新课程套件：git pull && npm ci",
      };
  }
}

/**
 * doctor 的位置参数。「[章节] [目录]」里只写了一个时：认得出是章节就是章节；
 * 认不出、却像一个目录（存在，或写成了路径）就当作目录，章节再从目录里的标记读。
 */
export function doctorArguments(
  chapters: readonly Chapter[] | undefined,
  positionals: readonly [string | undefined, string | undefined],
  cwd: string,
): { chapterInput?: string; dirInput?: string } {
  const [first, second] = positionals;
  if (first === undefined) return {};
  if (second !== undefined) return { chapterInput: first, dirInput: second };
  if (!chapters) return { chapterInput: first };
  try {
    findChapter(chapters, first);
    return { chapterInput: first };
  } catch (error) {
    if (!isCourseError(error)) throw error;
    const looksLikeDir = /[\\/]/.test(first) || first.startsWith(".") || existsSync(path.resolve(cwd, first));
    return looksLikeDir ? { dirInput: first } : { chapterInput: first };
  }
}

/** 只给了目录、没给章节时检查哪一章：目录标记里的那一章；不是（完好的）练习目录时是下一章。 */
export function chapterOfDir(chapters: readonly Chapter[], dir: string): Chapter | undefined {
  try {
    const marker = readPracticeMarker(dir);
    return marker ? chapters.find((chapter) => chapter.id === marker.chapter) : undefined;
  } catch (error) {
    if (!isCourseError(error)) throw error;
    return undefined; // 标记坏了：checkPracticeDir 会把它报出来
  }
}

/** 一个练习目录的健康：标记、位置、依赖链接、测试文件、文件监视。 */
export async function checkPracticeDir(options: {
  kitRoot: string;
  chapter: Chapter;
  chapters: readonly Chapter[];
  history: CourseHistory | undefined;
  dir: string;
  explicit: boolean;
  /** 进度里记下的本章练习目录。 */
  recordedDir?: string;
  /** 进度文件：记下的目录不在了时，repair 把它改记成 dir。 */
  progressFile: string;
}): Promise<DoctorCheck[]> {
  const { kitRoot, chapter, dir } = options;
  const title = `练习目录（第 ${chapter.id} 章）`;
  const id = "practice";
  const group = "practice";
  if (!existsSync(dir)) {
    return [
      {
        id,
        group,
        title,
        status: options.explicit ? "fail" : "skip",
        detail: `${dir} 不存在`,
        fix: `npm run practice -- ${chapter.id}${options.explicit ? ` ${dir}` : ""}`,
      },
    ];
  }
  if (!statSync(dir).isDirectory()) {
    return [{ id, group, title, status: "fail", detail: `${dir} 不是目录`, fix: `npm run practice -- ${chapter.id} <一个不存在或为空的目录>` }];
  }
  let marker;
  try {
    marker = readPracticeMarker(dir);
  } catch (error) {
    if (!isCourseError(error)) throw error;
    return [{ id, group, title, status: "fail", detail: error.message, fix: `npm run practice -- ${chapter.id} <新目录>，再把你的文件搬过去` }];
  }
  if (!marker) {
    // 空目录可以直接拿来建练习目录；里面已经有东西时 practice 会拒绝，所以建议换一个目录
    const empty = readdirSync(dir).length === 0;
    return [
      {
        id,
        group,
        title,
        status: "fail",
        detail: `${dir} 不是练习目录（没有 ${PRACTICE_MARKER}）${empty ? "，是个空目录" : ""}`,
        fix: empty ? `npm run practice -- ${chapter.id} ${dir}` : `npm run practice -- ${chapter.id} <一个不存在或为空的目录>（${dir} 里已有文件，practice 不会动它）`,
      },
    ];
  }
  if (marker.chapter !== chapter.id) {
    return [{ id, group, title, status: "fail", detail: `${dir} 是第 ${marker.chapter} 章的练习目录`, fix: `npm run doctor -- ${marker.chapter} ${dir}` }];
  }
  const checks: DoctorCheck[] = [{ id, group, title, status: "ok", detail: dir }];
  if (isInside(realpathSync(kitRoot), realpathSync(dir))) {
    checks.push({ id: "practice.location", group: "practice", title: "位置", status: "fail", detail: "在课程套件之内：模块解析会找到最终答案", fix: `npm run practice -- ${chapter.id}（默认建在套件旁边）` });
  }
  if (marker.kitRoot && path.resolve(marker.kitRoot) !== path.resolve(kitRoot)) {
    checks.push(
      kitMoved(marker.kitRoot)
        ? {
            id: "practice.source", group: "practice", title: "来源",
            status: "fail",
            detail: `记下的课程套件 ${marker.kitRoot} 不在了（套件被移动或改名了）：练习目录里的命令找不到套件`,
            fix: `npm run doctor -- ${chapter.id} ${dir} --fix（改记成这份套件，并重新链接依赖）`,
            repair: () => repairMarker(kitRoot, dir),
          }
        : { id: "practice.source", group: "practice", title: "来源", status: "warn", detail: `由另一份课程套件创建（${marker.kitRoot}）`, fix: `用那份套件运行命令，或 npm run practice -- ${chapter.id} 重新创建` },
    );
  }
  const recorded = options.recordedDir;
  if (recorded !== undefined && path.resolve(recorded) !== path.resolve(dir) && !existsSync(recorded)) {
    checks.push({
      id: "practice.record", group: "practice", title: "记录",
      status: "warn",
      detail: `进度里记下的第 ${chapter.id} 章练习目录 ${recorded} 不在了（目录被移动了？），省略目录的命令会找不到它`,
      fix: `npm run doctor -- ${chapter.id} ${dir} --fix（改记成 ${dir}）`,
      repair: rememberMovedDir(options.progressFile, chapter.id, dir),
    });
  }
  if (options.history) {
    const start = practiceStart(chapter, options.history);
    if (marker.start !== start) {
      checks.push({
        id: "practice.version", group: "practice", title: "版本",
        status: "warn",
        detail: `取自 ${shortHash(marker.start)}，课程现在的起点是 ${shortHash(start)}`,
        fix: `npm run practice -- ${chapter.id} <新目录>，再把你的改动搬过去`,
      });
    }
  }
  const links = checkLinks(kitRoot, dir, chapter);
  checks.push(links.status === "ok" ? links : { ...links, repair: () => repairLinks(kitRoot, dir) });
  if (options.history) {
    const { missing, modified } = await testFileChanges(kitRoot, options.history, chapter, options.chapters, dir);
    const changed = [...missing, ...modified];
    checks.push(
      changed.length === 0
        ? { id: "practice.tests", group: "practice", title: "测试文件", status: "ok", detail: "与课程版本一致" }
        : {
            id: "practice.tests", group: "practice", title: "测试文件",
            status: "warn",
            detail: `${changed.map((change) => path.basename(change.file)).join("、")} ${missing.length > 0 ? "缺失或" : ""}被改动过；verify 不会点亮本章`,
            fix: changed.map((change) => `git -C ${kitRoot} show ${shortHash(change.commit)}:${change.file} > ${path.join(dir, change.file)}`).join("\n"),
          },
    );
  }
  checks.push(checkWatching(dir, chapter));
  return checks;
}

/**
 * 练习目录的 node_modules 是逐个包指向套件依赖的链接（links.ts）；找出缺的、断的、
 * 旧布局里整个 @scope / .bin 的目录链接（npm install 会顺着它删进套件），以及不该有的 @pi。
 * 指错了地方的链接也算断了：例如旧的练习目录里 .bin/tiny-pi 指向套件里的答案，而不是练习目录自己的包。
 */
export function brokenLinks(kitRoot: string, dir: string): { missing: string[]; broken: string[]; grouped: string[]; forbidden: boolean } {
  const target = path.join(dir, "node_modules");
  const grouped = linkedGroupDirs(dir);
  const missing: string[] = [];
  const broken: string[] = [];
  const expected = practiceLinks(kitRoot, dir);
  // .bin 里不该有的命令：指向套件工作区包（最终答案）的，修复时删掉。
  // 练习目录自己也有的命令（例如第 13 章起的 tiny-pi）由下面按应有的指向检查，这里不重复记
  if (!grouped.includes(".bin")) {
    broken.push(...binsIntoKit(kitRoot, dir).map((name) => `.bin/${name}`).filter((name) => !expected.some((link) => link.name === name)));
  }
  for (const { name, source } of expected) {
    if (grouped.some((group) => name.startsWith(`${group}/`))) continue; // 整组会在修复时换成逐个链接
    const link = path.join(target, name);
    if (!isSymlink(link)) {
      if (!existsSync(link)) missing.push(name);
      continue;
    }
    if (!existsSync(link) || linkTarget(link) !== linkTarget(source)) broken.push(name);
  }
  return { missing, broken, grouped, forbidden: existsSync(path.join(target, "@pi")) };
}

function checkLinks(kitRoot: string, dir: string, chapter: Chapter): DoctorCheck {
  const title = "依赖链接";
  const id = "practice.links";
  const group = "practice";
  if (!existsSync(path.join(dir, "node_modules"))) {
    return { id, group, title, status: "fail", detail: "没有 node_modules", fix: `npm run doctor -- ${chapter.id} ${dir} --fix` };
  }
  const { missing, broken, grouped, forbidden } = brokenLinks(kitRoot, dir);
  if (grouped.length > 0) {
    return {
      id,
      group,
      title,
      status: "fail",
      detail: `${grouped.join("、")} 整个目录链接到套件：在练习目录里 npm install 会顺着它删掉套件的依赖`,
      fix: `npm run doctor -- ${chapter.id} ${dir} --fix`,
    };
  }
  if (forbidden) {
    return { id, group, title, status: "fail", detail: "node_modules 里有 @pi：import 可能解析到套件里的最终答案", fix: `npm run doctor -- ${chapter.id} ${dir} --fix` };
  }
  if (missing.length > 0 || broken.length > 0) {
    const list = [...missing.map((entry) => `缺少 ${entry}`), ...broken.map((entry) => `${entry} 的链接断了`)];
    return { id, group, title, status: "fail", detail: list.slice(0, 4).join("、") + (list.length > 4 ? " 等" : ""), fix: `npm run doctor -- ${chapter.id} ${dir} --fix` };
  }
  return { id, group, title, status: "ok", detail: "指向套件的依赖，完好" };
}

/** 重新链接练习目录的依赖：只动符号链接（缺的补上、断的重建、整组的拆成逐个、@pi 移除），从不删除真正的文件。 */
export function repairLinks(kitRoot: string, dir: string): string[] {
  const actions: string[] = [];
  const target = path.join(dir, "node_modules");
  mkdirSync(target, { recursive: true });
  const { missing, broken, grouped, forbidden } = brokenLinks(kitRoot, dir);
  if (forbidden) {
    const pi = path.join(target, "@pi");
    if (lstatSync(pi).isSymbolicLink()) unlinkSync(pi);
    else rmSync(pi, { recursive: true, force: true }); // 只可能是在练习目录里 npm install 装进来的工作区链接
    actions.push("移除了 node_modules/@pi");
  }
  for (const group of grouped) {
    unlinkSync(path.join(target, group)); // 只删这个链接本身，链接指向的套件目录原样不动
    missing.push(...practiceLinks(kitRoot, dir).filter((link) => link.name.startsWith(`${group}/`)).map((link) => link.name));
  }
  const sources = new Map(practiceLinks(kitRoot, dir).map((link) => [link.name, link.source]));
  for (const entry of broken) {
    unlinkSync(path.join(target, entry));
    if (sources.has(entry)) missing.push(entry);
  }
  for (const name of missing) createLink(dir, { name, source: sources.get(name) ?? path.join(kitRoot, "node_modules", name) });
  if (missing.length > 0) actions.push(`重新链接了 ${missing.length} 项依赖：${missing.slice(0, 5).join("、")}${missing.length > 5 ? " 等" : ""}`);
  return actions;
}

/** 练习目录被移动后，进度里改记它的新位置（省略目录的 verify / hint / watch 用的就是这一条）。 */
function rememberMovedDir(file: string, chapterId: string, dir: string): () => string[] {
  return () => {
    updateProgress(file, (progress) => {
      progress.practiceDirs[chapterId] = dir;
    });
    return [`进度里第 ${chapterId} 章的练习目录改记成 ${dir}`];
  };
}

/** 文件监视能否工作：WSL 的 /mnt 与网络盘通常收不到变更事件。 */
export function checkWatching(dir: string, chapter: Chapter): DoctorCheck {
  const title = "文件监视";
  const id = "practice.watching";
  const group = "practice";
  const fix = `npm run watch -- ${chapter.id} --poll`;
  if (os.release().toLowerCase().includes("microsoft") && dir.startsWith("/mnt/")) {
    return { id, group, title, status: "warn", detail: "WSL 的 /mnt 下收不到文件变更事件", fix: `${fix}（或把练习目录放到 Linux 文件系统里，例如 ~/pi-practice-${chapter.id}）` };
  }
  try {
    const watcher = watch(path.join(dir, COURSE_PACKAGE), { recursive: true });
    watcher.close();
    return { id, group, title, status: "ok", detail: "文件变更事件可用（npm run watch）" };
  } catch (error) {
    return { id, group, title, status: "warn", detail: `文件变更事件不可用（${(error as NodeJS.ErrnoException).code ?? (error as Error).message}）`, fix };
  }
}
