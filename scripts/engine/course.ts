import type { Chapter } from "./chapters.js";
import { findChapter, loadChapters } from "./chapters.js";
import { ensureHistory, type CourseHistory } from "./history.js";
import { userCwd, warn } from "./cli.js";
import { KIT_ROOT, LESSONS_DIR } from "./paths.js";
import { choosePracticeDir, openPracticeDir, type PracticeMarker } from "./practice.js";
import { loadProgress, progressPath, type Progress } from "./progress.js";

/** 命令常用的一步：读章节、确保历史、找到用户要的那一章。 */
export async function openChapter(input: string | undefined): Promise<{ chapters: Chapter[]; chapter: Chapter; history: CourseHistory }> {
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, input);
  const history = await ensureHistory(KIT_ROOT, chapters);
  return { chapters, chapter, history };
}

/** 进度文件在哪里、读到了什么。 */
export interface CommandProgress {
  file: string;
  progress: Progress;
}

/** 命令开始时读进度：文件有问题时提醒一句（按空白进度继续），不打断命令。 */
export function openProgress(): CommandProgress {
  const file = progressPath();
  const loaded = loadProgress(file);
  warn(loaded.warning);
  return { file, progress: loaded.progress };
}

/** 一次在练习目录里的工作：进度、练习目录和它的标记。 */
export interface PracticeSession extends CommandProgress {
  dir: string;
  marker: PracticeMarker;
}

/**
 * verify、watch、reset、hint 共同的开场：读进度，选出练习目录（写出的目录，否则 practice 记下的、
 * 否则默认的），确认它是本章的练习目录；不是时抛出一句说明怎么办的错误。
 */
export function openPracticeSession(chapter: Chapter, dirInput: string | undefined, opened: CommandProgress = openProgress()): PracticeSession {
  const { dir, explicit } = choosePracticeDir(KIT_ROOT, chapter, opened.progress, dirInput, userCwd());
  const marker = openPracticeDir(dir, chapter, explicit);
  return { ...opened, dir, marker };
}
