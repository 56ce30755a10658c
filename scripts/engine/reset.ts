import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { startSnapshot } from "./practice.js";
import { CourseError, usageError } from "./errors.js";
import { readCommittedFile, type CourseHistory } from "./history.js";
import type { PracticeMarker } from "./practice.js";
import { practiceTeachingFiles } from "./starter.js";

/**
 * 把练习目录里的一个教学文件放回本章的起点（npm run reset，watch 里的 x 键）。
 * 学习者的版本先整个改名挪进 .pi-course/backup/<时间>/ 下同样的路径，再写起点的内容：
 * 改名是原子的，所以任何一步失败，学习者的文件要么还在原处，要么已在备份里，不会丢。
 */
export const BACKUP_DIR = path.join(".pi-course", "backup");

/** 能还原的文件：本章和更早各章的教学文件（测试与课程的其他文件不归学习者写，不在此列）。 */
export function resettableFiles(chapters: readonly Chapter[], chapter: Chapter): string[] {
  const earlier = chapters.filter((other) => other.id < chapter.id).flatMap((other) => other.teachingFiles);
  return [...new Set([...chapter.teachingFiles, ...earlier])];
}

/**
 * 认出学习者说的是哪个文件：完整路径、相对练习目录的路径、相对当前目录的路径，或只写文件名（唯一时）。
 */
export function resolveTeachingFile(input: string, candidates: readonly string[], dir: string, cwd: string, chapter: Chapter): string {
  const wanted = input.replace(/\\/g, "/").replace(/^\.\//, "");
  const fromCwd = path.relative(dir, path.resolve(cwd, input)).split(path.sep).join("/");
  for (const guess of [wanted, fromCwd]) if (candidates.includes(guess)) return guess;
  const hits = candidates.filter((file) => file.endsWith(`/${wanted}`));
  if (hits.length === 1 && hits[0] !== undefined) return hits[0];
  const names = chapter.teachingFiles.map((file) => path.posix.basename(file)).join("、");
  if (hits.length > 1) throw usageError("RESET_AMBIGUOUS", `${input} 能指好几个文件（${hits.join("、")}）：写出完整路径`);
  throw usageError("RESET_NOT_TEACHING", `${input} 不是第 ${chapter.id} 章能还原的教学文件；本章的教学文件：${names}（更早章节的教学文件也可以）`);
}

/**
 * 这个文件在练习目录起点时的内容；起点时还没有这个文件就是 undefined。
 * 接续目录（practice --continue）按创建时留下的快照；普通练习目录是切出的脚手架，否则是起点提交里的样子。
 */
export async function startContent(
  kitRoot: string,
  chapter: Chapter,
  history: CourseHistory,
  dir: string,
  marker: PracticeMarker,
  file: string,
): Promise<Buffer | undefined> {
  if (marker.origin) return startSnapshot(dir, file);
  const starter = (await practiceTeachingFiles(kitRoot, chapter, history)).get(file);
  if (starter !== undefined) return Buffer.from(starter);
  try {
    return Buffer.from(await readCommittedFile(kitRoot, marker.start, file));
  } catch {
    return undefined;
  }
}

/** 确认的问题：reset 命令和 watch 的 x 键问的是同一句。 */
export function resetQuestion(file: string, start: Buffer | undefined): string {
  const after = start === undefined ? "（起点时还没有这个文件：还原后它就不在了）" : "";
  return `把 ${file} 还原到本章起点${after}？你现在的版本会先移到练习目录的 ${BACKUP_DIR.split(path.sep).join("/")}/ 里，不会丢。`;
}

export type ResetOutcome =
  | { kind: "unchanged" }
  | { kind: "reset"; backup?: string; removed: boolean };

/** 学习者的文件与起点一样（换行符不算）：什么也不用做。 */
export function alreadyAtStart(dir: string, file: string, start: Buffer | undefined): boolean {
  const current = path.join(dir, ...file.split("/"));
  if (!existsSync(current)) return start === undefined;
  if (start === undefined) return false;
  return normalise(readFileSync(current)) === normalise(start);
}

function normalise(content: Buffer): string {
  return content.toString("utf8").replace(/\r\n/g, "\n");
}

/** 先备份、再写起点；返回备份的位置（相对练习目录）。 */
export function resetFile(dir: string, file: string, start: Buffer | undefined, now = new Date()): ResetOutcome {
  if (alreadyAtStart(dir, file, start)) return { kind: "unchanged" };
  const current = path.join(dir, ...file.split("/"));
  let backup: string | undefined;
  if (existsSync(current)) {
    backup = freeBackupPath(dir, file, now);
    const absolute = path.join(dir, backup);
    try {
      mkdirSync(path.dirname(absolute), { recursive: true });
      renameSync(current, absolute);
    } catch (error) {
      throw new CourseError("RESET_BACKUP_FAILED", `没能把 ${file} 挪进备份（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）：文件原样未动`);
    }
  }
  if (start !== undefined) {
    try {
      mkdirSync(path.dirname(current), { recursive: true });
      writeFileSync(current, start);
    } catch (error) {
      throw new CourseError(
        "RESET_WRITE_FAILED",
        `你的版本已经在 ${backup ?? "（没有）"}，但没能写回起点（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）：要拿回你的版本，把它挪回 ${file}`,
      );
    }
  }
  return { kind: "reset", ...(backup ? { backup } : {}), removed: start === undefined };
}

/** .pi-course/backup/<时间>/<文件>；同一毫秒里备份过同一个文件就加序号，绝不覆盖旧备份。 */
function freeBackupPath(dir: string, file: string, now: Date): string {
  const stamp = now.toISOString().replace(/[:.]/g, "-");
  for (let attempt = 1; ; attempt += 1) {
    const folder = attempt === 1 ? stamp : `${stamp}-${attempt}`;
    const candidate = path.join(BACKUP_DIR, folder, ...file.split("/"));
    if (!existsSync(path.join(dir, candidate))) return candidate;
  }
}
