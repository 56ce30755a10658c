import type { Chapter } from "./chapters.js";
import type { Progress } from "./progress.js";
import { SYLLABUS, type PlannedChapter } from "./syllabus.js";

/**
 * 课程地图：大纲的二十章，每章标上它现在的状态（点亮、进行中、可以开始、未开放），以及下一章是哪一章。
 * status、verify、doctor 与书共用这里的规则。
 */

/** started：有练习目录、还没 verify 通过（进行中）。 */
export type ChapterState = "lit" | "lit-old" | "started" | "open" | "planned";

export interface MapEntry {
  id: string;
  slug: string;
  /** 已开放的章节用课文标题，未开放的用大纲里的一句话。 */
  title: string;
  state: ChapterState;
  chapter?: Chapter;
  verifiedAt?: string;
  /** 点亮的章节是在谁的代码上做完的：own（practice --continue，学习者自己的代码）或 course（课程起点）。 */
  basis?: "own" | "course";
  /** basis 为 own 时，学习者自己的代码从第几章起。 */
  ownSince?: string;
  /** basis 为 own 时，接续时换成课程版本的文件（--use-course）。 */
  courseFiles?: string[];
  hints: number;
}

export interface MapPart {
  title: string;
  entries: MapEntry[];
}

export interface CourseMap {
  parts: MapPart[];
  /** 下一章，规则见 nextChapter。 */
  next?: Chapter;
  /** 下一章在点亮的最高一章之前：已经做到了最后，这是回头补的一章，不是“下一章”。 */
  behind: boolean;
  lit: number;
  open: number;
  planned: number;
}

/**
 * 下一章该学哪一章（status、verify、doctor 共用这一条规则）：
 * 点亮的最高一章之后第一章还没点亮的；后面都亮了，就回头找：先找已经开始（有练习目录）却没点亮的，
 * 再找第一章没点亮的；全部点亮时没有下一章。
 * 这样跳着做（先做 03）时，下一章是 04 而不是 00；做完最后一章时，先回到做了一半的那章。
 */
export function nextChapter(
  chapters: readonly Chapter[],
  progress: Pick<Progress, "verified"> & Partial<Pick<Progress, "practiceDirs">>,
): Chapter | undefined {
  const ordered = [...chapters].sort((a, b) => a.id.localeCompare(b.id));
  const lit = (chapter: Chapter) => progress.verified[chapter.id] !== undefined;
  const started = (chapter: Chapter) => !lit(chapter) && progress.practiceDirs?.[chapter.id] !== undefined;
  const highest = ordered.findLastIndex(lit);
  return ordered.slice(highest + 1).find((chapter) => !lit(chapter)) ?? ordered.find(started) ?? ordered.find((chapter) => !lit(chapter));
}

/** 下一章排在点亮的最高一章之前（回头补的一章）。 */
export function isBehind(chapters: readonly Chapter[], progress: Pick<Progress, "verified">, next: Chapter | undefined): boolean {
  if (!next) return false;
  return chapters.some((chapter) => progress.verified[chapter.id] !== undefined && chapter.id.localeCompare(next.id) > 0);
}

/** 把大纲、已存在的章节、进度和当前目标哈希合成一张地图（纯数据，不打印）。 */
export function courseMap(chapters: readonly Chapter[], progress: Progress, targets: Record<string, string>): CourseMap {
  const byId = new Map(chapters.map((chapter) => [chapter.id, chapter]));
  const planned = new Set(SYLLABUS.flatMap((part) => part.chapters.map((chapter) => chapter.id)));
  const parts: MapPart[] = SYLLABUS.map((part) => ({ title: part.title, entries: part.chapters.map((plan) => entryFor(plan)) }));
  const extra = chapters.filter((chapter) => !planned.has(chapter.id));
  if (extra.length > 0) {
    parts.push({ title: "附加章节", entries: extra.map((chapter) => entryFor({ id: chapter.id, slug: chapter.slug, builds: chapter.summary })) });
  }

  function entryFor(plan: PlannedChapter): MapEntry {
    const chapter = byId.get(plan.id);
    const hints = Object.values(progress.hints[plan.id] ?? {}).reduce((sum, level) => sum + level, 0);
    if (!chapter) return { id: plan.id, slug: plan.slug, title: plan.builds, state: "planned", hints };
    const verified = progress.verified[plan.id];
    const started = progress.practiceDirs[plan.id] !== undefined;
    const state: ChapterState = !verified ? (started ? "started" : "open") : verified.target === targets[plan.id] ? "lit" : "lit-old";
    return {
      id: chapter.id,
      slug: chapter.slug,
      title: chapter.title,
      state,
      chapter,
      hints,
      ...(verified ? { verifiedAt: verified.verifiedAt, basis: verified.basis ?? "course" } : {}),
      ...(verified?.ownSince ? { ownSince: verified.ownSince } : {}),
      ...(verified?.courseFiles?.length ? { courseFiles: verified.courseFiles } : {}),
    };
  }

  const entries = parts.flatMap((part) => part.entries);
  const next = nextChapter(chapters, progress);
  return {
    parts,
    ...(next ? { next } : {}),
    behind: isBehind(chapters, progress, next),
    lit: entries.filter((entry) => entry.state === "lit" || entry.state === "lit-old").length,
    open: entries.filter((entry) => entry.state !== "planned").length,
    planned: entries.length,
  };
}
