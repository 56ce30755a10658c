import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import lockfile from "proper-lockfile";

import { CourseError } from "./errors.js";

/**
 * 学习者的进度：每个用户一份小 JSON，放在任何仓库之外。
 * 只有 verify 亲眼看到全部通过时才会写入“已点亮”；其余命令只读，或只记提示与练习目录。
 * 读（loadProgress）从不改动文件；只有写（updateProgress）才会在文件损坏时先备份它。
 */
export const PROGRESS_VERSION = 1;
export const PROGRESS_ENV = "PI_COURSE_PROGRESS";

export interface VerifiedChapter {
  /** 验证时本章目标提交的完整哈希：课程更新后可以看出“点亮的是旧版本”。 */
  target: string;
  /** ISO 时间。 */
  verifiedAt: string;
  /** 被验证的练习目录。 */
  dir: string;
  /**
   * 这一章是在谁的代码上做完的：own 是 practice --continue 接着学习者自己上一章的代码，
   * course 是从课程的起点开始。旧版本套件写的记录没有这一项（按 course 显示）。
   */
  basis?: "own" | "course";
  /** basis 为 own 时：从第几章起一直是学习者自己的代码。 */
  ownSince?: string;
  /** basis 为 own 时：接续时按 --use-course 换成课程版本的文件（这些文件不是学习者自己的代码）。 */
  courseFiles?: string[];
  /** 通过时目录里代码的指纹（见 continue.ts 的 treeFingerprint）：接续时没变就不必重跑上一章的测试。 */
  fingerprint?: string;
}

export interface Progress {
  version: typeof PROGRESS_VERSION;
  /** 键是章节编号（03）。 */
  verified: Record<string, VerifiedChapter>;
  /** 章节 → 实践 → 已经看过的最高提示级别（1–4）。 */
  hints: Record<string, Record<string, number>>;
  /** 章节 → 最近一次 practice 创建的练习目录。 */
  practiceDirs: Record<string, string>;
}

export interface LoadedProgress {
  progress: Progress;
  path: string;
  /** 文件损坏时的一句中文说明（读的时候文件原样保留；写的时候已经挪到 backup）。 */
  warning?: string;
  backup?: string;
}

export function emptyProgress(): Progress {
  return { version: PROGRESS_VERSION, verified: {}, hints: {}, practiceDirs: {} };
}

/**
 * 进度文件的位置：PI_COURSE_PROGRESS 优先（相对路径按学习者敲命令时所在的目录解析，
 * 而不是 npm 换到的套件目录）；否则 Windows 用 %LOCALAPPDATA%，
 * 其他系统用 ${XDG_STATE_HOME:-~/.local/state}，都在 pi-course/progress.json。
 */
export function progressPath(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  const override = env[PROGRESS_ENV]?.trim();
  if (override) return path.resolve(env.INIT_CWD ?? process.cwd(), override);
  if (platform === "win32") {
    const base = env.LOCALAPPDATA?.trim() || path.join(os.homedir(), "AppData", "Local");
    return path.join(base, "pi-course", "progress.json");
  }
  const xdg = env.XDG_STATE_HOME?.trim();
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".local", "state");
  return path.join(base, "pi-course", "progress.json");
}

type Inspection =
  | { state: "missing" }
  | { state: "ok"; progress: Progress }
  | { state: "corrupt"; reason: string }
  | { state: "newer"; version: number };

/**
 * 只读地看一眼进度文件：不备份、不改写。
 * 空文件（0 字节，例如 touch 出来的）等于还没有进度。
 */
export function inspectProgress(file: string): Inspection {
  if (!existsSync(file)) return { state: "missing" };
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return { state: "corrupt", reason: `无法读取（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）` };
  }
  if (text.trim() === "") return { state: "missing" };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { state: "corrupt", reason: "不是合法的 JSON" };
  }
  if (isRecord(raw) && typeof raw.version === "number" && raw.version > PROGRESS_VERSION) return { state: "newer", version: raw.version };
  const parsed = parseProgress(raw);
  return typeof parsed === "string" ? { state: "corrupt", reason: parsed } : { state: "ok", progress: parsed };
}

/** 更新的套件写的进度：这个套件读不懂，更不能把它当成损坏的文件重置掉。 */
function newerProgressError(file: string, version: number): CourseError {
  return new CourseError(
    "PROGRESS_NEWER",
    `进度文件来自更新版本的课程套件，请先更新套件（git pull && npm ci）；文件 ${file} 的格式版本是 ${version}，本套件只认识 ${PROGRESS_VERSION}，文件原样未动`,
  );
}

/**
 * 只读地读取进度（status、以及各命令开始时）：文件不存在或为空就是空白进度；
 * 损坏时给一句警告、按空白进度继续，文件原样保留——备份只在真要写回时由 updateProgress 做。
 * 来自更新版本套件的文件拒绝读取（退出码 1）。
 */
export function loadProgress(file: string = progressPath()): LoadedProgress {
  const inspected = inspectProgress(file);
  switch (inspected.state) {
    case "missing":
      return { progress: emptyProgress(), path: file };
    case "ok":
      return { progress: inspected.progress, path: file };
    case "newer":
      throw newerProgressError(file, inspected.version);
    case "corrupt":
      return {
        progress: emptyProgress(),
        path: file,
        warning: `进度文件 ${file} ${inspected.reason}：这次按空白进度处理，文件原样保留（下次记录进度时会先备份它）`,
      };
  }
}

/**
 * 原子写入：同目录下的临时文件写完并落盘后，一次改名替换。
 * 进度文件是符号链接时写的是它指向的文件：改名替换的是目标，链接本身保持原样。
 */
export function saveProgress(file: string, progress: Progress): void {
  const destination = followLink(file);
  const temporary = `${destination}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    mkdirSync(path.dirname(destination), { recursive: true });
    const fd = openSync(temporary, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(progress, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, destination);
  } catch (error) {
    try {
      rmSync(temporary, { force: true });
    } catch {
      // 临时文件根本没能创建
    }
    throw new CourseError(
      "PROGRESS_UNWRITABLE",
      `无法写入进度文件 ${file}（${(error as NodeJS.ErrnoException).code ?? (error as Error).message}）；可以用 ${PROGRESS_ENV} 指定别的位置`,
    );
  }
}

/** 符号链接（包括一串链接、以及指向还不存在的文件的链接）最终指向的路径；不是链接就是它自己。 */
function followLink(file: string): string {
  let current = file;
  for (let hops = 0; hops < 32; hops += 1) {
    let isLink: boolean;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch {
      return current; // 还不存在
    }
    if (!isLink) return existsSync(current) ? realpathSync(current) : current;
    current = path.resolve(path.dirname(current), readlinkSync(current));
  }
  return current;
}

/**
 * 在进度文件的锁里做一次“读 → 改 → 写”：几个命令同时记录进度时（两个终端里各跑一个 verify、
 * watch 正在记提示），后写的人读到的是前一个人写完的版本，谁的更新都不会丢。
 * 锁是 proper-lockfile 的锁目录（<文件>.lock，mkdir 在各系统上都是原子的，持锁进程崩溃后按过期时间回收）；
 * 它只提供异步的重试，这里的调用方都是同步的，所以自己短暂地等一等再试。
 */
function withProgressLock<T>(file: string, work: () => T): T {
  const target = followLink(file);
  mkdirSync(path.dirname(target), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    let release: (() => void) | undefined;
    try {
      release = lockfile.lockSync(target, { realpath: false, stale: LOCK_STALE_MS });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ELOCKED" || Date.now() > deadline) {
        throw new CourseError(
          "PROGRESS_LOCKED",
          `进度文件 ${file} 正被另一个课程命令占用（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）；等它结束后再运行一次`,
        );
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 + Math.floor(Math.random() * 20));
      continue;
    }
    try {
      return work();
    } finally {
      release();
    }
  }
}

const LOCK_WAIT_MS = 15_000;
/** 比任何一次“读 → 改 → 写”都长得多：锁目录更旧就说明持锁的进程已经不在了。 */
const LOCK_STALE_MS = 10_000;

/**
 * 读 → 改 → 原子写回；返回改后的进度与说明。文件损坏时先把它改名留作备份（说明里有恢复命令），
 * 再从空白进度写起；来自更新版本套件的文件拒绝改写。
 */
export function updateProgress(file: string, change: (progress: Progress) => void): LoadedProgress {
  return withProgressLock(file, () => updateUnlocked(file, change));
}

function updateUnlocked(file: string, change: (progress: Progress) => void): LoadedProgress {
  const inspected = inspectProgress(file);
  if (inspected.state === "newer") throw newerProgressError(file, inspected.version);
  const loaded: LoadedProgress = { progress: inspected.state === "ok" ? inspected.progress : emptyProgress(), path: file };
  if (inspected.state === "corrupt") {
    const damaged = followLink(file); // 符号链接时备份它指向的文件，链接本身留着
    const backup = `${damaged}.corrupt-${timestamp()}`;
    try {
      renameSync(damaged, backup);
    } catch (error) {
      throw new CourseError(
        "PROGRESS_UNREADABLE",
        `进度文件 ${file} ${inspected.reason}，而且无法挪到备份位置（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）；请检查它的权限`,
      );
    }
    loaded.backup = backup;
    loaded.warning = `进度文件 ${file} ${inspected.reason}：已备份到 ${backup}，从空白进度重新开始；要恢复旧文件：mv ${shellPath(backup)} ${shellPath(file)}`;
  }
  change(loaded.progress);
  saveProgress(file, loaded.progress);
  return loaded;
}

/** 能原样粘贴进 shell 的路径：只有普通字符时原样，否则加单引号。 */
function shellPath(file: string): string {
  return /^[\w@%+=:,./-]+$/.test(file) ? file : `'${file.replace(/'/g, `'\\''`)}'`;
}

export function recordVerified(progress: Progress, chapterId: string, entry: VerifiedChapter): void {
  progress.verified[chapterId] = entry;
}

export function hintsShown(progress: Progress, chapterId: string, labId: string): number {
  return progress.hints[chapterId]?.[labId] ?? 0;
}

/** 记下看过的提示级别；只升不降（用 --level 回看低级别不会抹掉记录）。 */
export function recordHint(progress: Progress, chapterId: string, labId: string, level: number): void {
  const chapter = (progress.hints[chapterId] ??= {});
  chapter[labId] = Math.max(chapter[labId] ?? 0, level);
}

/** 一章里一共展开过几级提示。 */
export function hintCount(progress: Progress, chapterId: string): number {
  return Object.values(progress.hints[chapterId] ?? {}).reduce((sum, level) => sum + level, 0);
}

// ── 校验 ────────────────────────────────────────────────────────

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** 返回校验后的进度，或一句说明哪里不对的中文。 */
function parseProgress(raw: unknown): Progress | string {
  if (!isRecord(raw)) return "的内容不是对象";
  if (raw.version !== PROGRESS_VERSION) return `的格式版本不认识（${JSON.stringify(raw.version)}）`;
  const progress = emptyProgress();
  const verified = objectField(raw, "verified");
  if (typeof verified === "string") return verified;
  const hints = objectField(raw, "hints");
  if (typeof hints === "string") return hints;
  const practiceDirs = objectField(raw, "practiceDirs");
  if (typeof practiceDirs === "string") return practiceDirs;
  for (const [id, entry] of Object.entries(verified)) {
    if (!isRecord(entry) || typeof entry.target !== "string" || typeof entry.verifiedAt !== "string" || typeof entry.dir !== "string") {
      return `里第 ${id} 章的记录不完整`;
    }
    // 可选的字段只收类型对的：别的版本写下的、手改坏的一项不算数，但不让整份进度作废
    const record: VerifiedChapter = { target: entry.target, verifiedAt: entry.verifiedAt, dir: entry.dir };
    if (entry.basis === "own" || entry.basis === "course") record.basis = entry.basis;
    if (typeof entry.ownSince === "string") record.ownSince = entry.ownSince;
    if (Array.isArray(entry.courseFiles) && entry.courseFiles.every((file) => typeof file === "string")) record.courseFiles = entry.courseFiles as string[];
    if (typeof entry.fingerprint === "string") record.fingerprint = entry.fingerprint;
    progress.verified[id] = record;
  }
  for (const [id, labs] of Object.entries(hints)) {
    if (!isRecord(labs)) return `里第 ${id} 章的提示记录不对`;
    for (const [lab, level] of Object.entries(labs)) {
      if (typeof level !== "number" || !Number.isInteger(level) || level < 0 || level > 4) return `里实践 ${lab} 的提示级别不对`;
      (progress.hints[id] ??= {})[lab] = level;
    }
  }
  for (const [id, dir] of Object.entries(practiceDirs)) {
    if (typeof dir !== "string") return `里第 ${id} 章的练习目录不对`;
    progress.practiceDirs[id] = dir;
  }
  return progress;
}

/** 一个可省略的对象字段：省略时是空对象；类型不对时返回点名这个字段的说明。 */
function objectField(raw: Record<string, unknown>, name: string): Record<string, unknown> | string {
  const value = raw[name] ?? {};
  return isRecord(value) ? value : `的字段 ${name} 类型不对（应当是对象，实际是${describeType(value)}）`;
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "数组";
  return { string: "字符串", number: "数字", boolean: "布尔值" }[typeof value as string] ?? typeof value;
}

function timestamp(): string {
  return new Date().toISOString().replace(/[:.]/g, "-");
}
