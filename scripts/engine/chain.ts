import type { Chapter } from "./chapters.js";
import { mergeThreeWay } from "./continue.js";
import { listCommittedFiles, readCommittedFile, type CourseHistory } from "./history.js";
import { withoutMarkers } from "./regions.js";
import { reword } from "./reword.js";
import { practiceTeachingFiles } from "./starter.js";

/**
 * DESIGN §5 的规则，静态地查：一章从不在学习者背后改写前面实践的代码。
 * 拿上一章的答案做出一位写法处处不同的学习者（reword），与本章的脚手架三方合并（同 practice --continue）；
 * 合并冲突，就是本章改了前面某个实践里的代码、却没有把那处改动做成本章的实践（扩展区域）。
 */
export interface ChainFinding {
  chapter: string;
  file: string;
  clean: boolean;
}

/**
 * 接续链（test/continue-chain.test.ts）走过的章节：从第 03 章起的每个重建章。
 * 第 03 章是第一章照着一份完整规格动手写的实践，学习者从它的课程起点开始，之后一路 --continue。
 */
export function continueChain(chapters: readonly Chapter[]): string[] {
  return chapters.filter((chapter) => chapter.mode === "重建" && chapter.id >= "03").map((chapter) => chapter.id);
}

export async function checkChain(kitRoot: string, chapters: readonly Chapter[], history: CourseHistory, selected: readonly Chapter[]): Promise<ChainFinding[]> {
  const findings: ChainFinding[] = [];
  for (const chapter of selected) {
    const commits = history.chapters[chapter.id];
    if (!commits || chapter.mode !== "重建" || chapter.id === chapters[0]?.id) continue;
    const starters = await practiceTeachingFiles(kitRoot, chapter, history);
    const present = await listCommittedFiles(kitRoot, commits.parent);
    const owned = new Set(chapters.filter((other) => other.id < chapter.id && other.mode === "重建").flatMap((other) => other.teachingFiles));
    for (const file of [...owned].sort()) {
      if (!present.has(file)) continue;
      const base = await readCommittedFile(kitRoot, commits.parent, file);
      const theirs = starters.get(file) ?? (await readCommittedFile(kitRoot, commits.target, file).catch(() => undefined));
      if (theirs === undefined || theirs === base) continue;
      const merged = mergeThreeWay(withoutMarkers(reword(base, file)), withoutMarkers(base), withoutMarkers(theirs));
      findings.push({ chapter: chapter.id, file, clean: merged !== undefined });
    }
  }
  return findings;
}

