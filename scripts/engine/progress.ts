import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { CourseError } from "./errors.js";

/**
 * 学习者的进度：每个用户一份小 JSON，放在任何仓库之外。
 * 只有 verify 亲眼看到全部通过时才会写入“已点亮”；其余命令只读，或只记提示与练习目录。
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
  /** 文件损坏或版本不认识时的一句中文说明；原文件已经挪到 backup。 */
  warning?: string;
  backup?: string;
}

export function emptyProgress(): Progress {
  return { version: PROGRESS_VERSION, verified: {}, hints: {}, practiceDirs: {} };
}

/**
 * 进度文件的位置：PI_COURSE_PROGRESS 优先；否则 Windows 用 %LOCALAPPDATA%，
 * 其他系统用 ${XDG_STATE_HOME:-~/.local/state}，都在 pi-course/progress.json。
 */
export function progressPath(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  const override = env[PROGRESS_ENV]?.trim();
  if (override) return path.resolve(override);
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
  | { state: "corrupt"; reason: string };

/** 只读地看一眼进度文件（doctor 用）：不备份、不改写。 */
export function inspectProgress(file: string): Inspection {
  if (!existsSync(file)) return { state: "missing" };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { state: "corrupt", reason: code ? `无法读取（${code}）` : "不是合法的 JSON" };
  }
  const parsed = parseProgress(raw);
  return typeof parsed === "string" ? { state: "corrupt", reason: parsed } : { state: "ok", progress: parsed };
}

/**
 * 读取进度。文件不存在就从空白开始；损坏或版本不认识时把原文件改名留作备份，
 * 给出一句警告，再从空白开始——绝不因为进度文件坏了就拒绝工作。
 */
export function loadProgress(file: string = progressPath()): LoadedProgress {
  const inspected = inspectProgress(file);
  if (inspected.state === "missing") return { progress: emptyProgress(), path: file };
  if (inspected.state === "ok") return { progress: inspected.progress, path: file };
  const backup = `${file}.corrupt-${timestamp()}`;
  try {
    renameSync(file, backup);
  } catch (error) {
    throw new CourseError(
      "PROGRESS_UNREADABLE",
      `进度文件 ${file} ${inspected.reason}，而且无法挪到备份位置（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）；请检查它的权限`,
    );
  }
  return {
    progress: emptyProgress(),
    path: file,
    backup,
    warning: `进度文件 ${file} ${inspected.reason}；原文件已备份为 ${path.basename(backup)}，从空白进度重新开始`,
  };
}

/** 原子写入：同目录下的临时文件写完并落盘后，一次改名替换。 */
export function saveProgress(file: string, progress: Progress): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    const fd = openSync(temporary, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(progress, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
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

/** 读 → 改 → 原子写回；返回改后的进度与读取时的警告。 */
export function updateProgress(file: string, change: (progress: Progress) => void): LoadedProgress {
  const loaded = loadProgress(file);
  change(loaded.progress);
  saveProgress(file, loaded.progress);
  return loaded;
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
  if (raw.version !== PROGRESS_VERSION) {
    return typeof raw.version === "number" && raw.version > PROGRESS_VERSION
      ? `来自更新版本的课程套件（格式版本 ${raw.version}，本套件只认识 ${PROGRESS_VERSION}）`
      : `的格式版本不认识（${JSON.stringify(raw.version)}）`;
  }
  const progress = emptyProgress();
  const verified = raw.verified ?? {};
  const hints = raw.hints ?? {};
  const practiceDirs = raw.practiceDirs ?? {};
  if (!isRecord(verified) || !isRecord(hints) || !isRecord(practiceDirs)) return "的字段类型不对";
  for (const [id, entry] of Object.entries(verified)) {
    if (!isRecord(entry) || typeof entry.target !== "string" || typeof entry.verifiedAt !== "string" || typeof entry.dir !== "string") {
      return `里第 ${id} 章的记录不完整`;
    }
    progress.verified[id] = { target: entry.target, verifiedAt: entry.verifiedAt, dir: entry.dir };
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

function timestamp(): string {
  return new Date().toISOString().replace(/[:.]/g, "-");
}
