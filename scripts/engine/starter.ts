import type { Chapter } from "./chapters.js";
import { listCommittedFiles, readCommittedFile, type CourseHistory } from "./history.js";
import { cutRegions, findRegions, type Placeholder } from "./regions.js";

/**
 * 练习目录里的教学文件从哪里来：本章目标里标了实践区域时，是切掉区域的目标；
 * 否则是起点的原样（观察章和没有区域的重建章）。
 */
export interface StarterSource {
  /** 教学文件 → 练习目录里它的内容；不在这里的教学文件保持起点的样子。 */
  files: Map<string, string>;
  /** 目标里标了区域的实践，按章节里的顺序。 */
  labs: string[];
}

/** 目标里的教学文件原文（目标里没有的文件不在结果里）。 */
export async function targetTeachingFiles(kitRoot: string, chapter: Chapter, history: CourseHistory): Promise<Map<string, string>> {
  return teachingFilesAt(kitRoot, chapter, history.chapters[chapter.id]?.target);
}

/** 起点里的教学文件原文：扩展区域在练习目录里换回的就是它们（本章新建的文件不在结果里）。 */
export async function parentTeachingFiles(kitRoot: string, chapter: Chapter, history: CourseHistory): Promise<Map<string, string>> {
  return teachingFilesAt(kitRoot, chapter, history.chapters[chapter.id]?.parent);
}

async function teachingFilesAt(kitRoot: string, chapter: Chapter, commit: string | undefined): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  if (!commit) return sources;
  const present = await listCommittedFiles(kitRoot, commit);
  for (const file of chapter.teachingFiles) {
    if (present.has(file)) sources.set(file, await readCommittedFile(kitRoot, commit, file));
  }
  return sources;
}

/** 本章各实践在这些文件里标了几个区域。 */
export function regionCounts(chapter: Chapter, sources: ReadonlyMap<string, string>): Map<string, number> {
  const own = new Set(chapter.labs.map((lab) => lab.id));
  const counts = new Map<string, number>();
  for (const [file, source] of sources) {
    for (const region of findRegions(source, file)) {
      if (own.has(region.lab)) counts.set(region.lab, (counts.get(region.lab) ?? 0) + 1);
    }
  }
  return counts;
}

/**
 * 切出脚手架：把 unfinished 里各实践的区域从目标里切掉。
 * 默认切掉本章全部实践（练习目录）；自检逐个填回时传入尚未填回的那些。
 */
export function cutStarter(
  chapter: Chapter,
  sources: ReadonlyMap<string, string>,
  unfinished: ReadonlySet<string> = new Set(chapter.labs.map((lab) => lab.id)),
  parents: ReadonlyMap<string, string> = new Map(),
): StarterSource {
  const counts = regionCounts(chapter, sources);
  const labs = chapter.labs.map((lab) => lab.id).filter((id) => counts.has(id));
  if (chapter.mode !== "重建" || labs.length === 0) return { files: new Map(), labs: [] };
  const placeholders: Placeholder[] = chapter.placeholders.map((placeholder) => ({ ...placeholder, code: placeholder.code.join("\n") }));
  const files = new Map<string, string>();
  for (const [file, source] of sources) files.set(file, cutRegions(source, file, unfinished, placeholders, parents.get(file)));
  return { files, labs };
}

/** 练习目录要写入的教学文件。 */
export async function practiceTeachingFiles(kitRoot: string, chapter: Chapter, history: CourseHistory): Promise<Map<string, string>> {
  if (chapter.mode !== "重建") return new Map();
  const [sources, parents] = await Promise.all([targetTeachingFiles(kitRoot, chapter, history), parentTeachingFiles(kitRoot, chapter, history)]);
  return cutStarter(chapter, sources, undefined, parents).files;
}
