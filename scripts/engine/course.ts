import type { Chapter } from "./chapters.js";
import { findChapter, loadChapters } from "./chapters.js";
import { ensureHistory, type CourseHistory } from "./history.js";
import { KIT_ROOT, LESSONS_DIR } from "./paths.js";

/** 命令常用的一步：读章节、确保历史、找到用户要的那一章。 */
export async function openChapter(input: string | undefined): Promise<{ chapters: Chapter[]; chapter: Chapter; history: CourseHistory }> {
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, input);
  const history = await ensureHistory(KIT_ROOT, chapters);
  return { chapters, chapter, history };
}
