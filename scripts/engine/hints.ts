import { HINT_LEVELS, HINT_LEVEL_NAMES, type Chapter, type Lab } from "./chapters.js";
import { usageError } from "./errors.js";
import { hintsShown, recordHint, updateProgress, type Progress } from "./progress.js";

/** 提示梯子：定位文件 → 指出签名 → 伪代码 → 局部代码，一次升一级。 */
export const LADDER_HEIGHT = HINT_LEVELS.length;

export interface HintStep {
  lab: Lab;
  /** 1–4。 */
  level: number;
  name: string;
  text: string;
  /** 这一级是第一次展开（需要记进进度）。 */
  isNew: boolean;
  /** 梯子已经走到顶。 */
  top: boolean;
}

/** 接受 3.1，或在第 03 章里简写成 1。认不出时列出本章的实践。 */
export function findLab(chapter: Chapter, input: string): Lab {
  const wanted = input.trim();
  const chapterNumber = String(Number(chapter.id));
  const found = chapter.labs.find((lab) => lab.id === wanted || lab.id === `${chapterNumber}.${wanted}`);
  if (!found) {
    throw usageError(
      "LAB_UNKNOWN",
      `第 ${chapter.id} 章没有实践 “${wanted}”。可选实践：${chapter.labs.map((lab) => `${lab.id} ${lab.title}`).join("、")}`,
    );
  }
  return found;
}

export function levelName(level: number): string {
  const key = HINT_LEVELS[level - 1];
  return key ? HINT_LEVEL_NAMES[key] : "";
}

/**
 * 决定这次给哪一级：不指定时给下一级（到顶后重复最后一级）；
 * --level N 可以回看已经看过的任何一级，或者下一级，但不能跳级。
 */
export function nextHint(chapter: Chapter, lab: Lab, shown: number, requested?: number): HintStep {
  let level: number;
  if (requested === undefined) {
    level = Math.min(shown + 1, LADDER_HEIGHT);
  } else {
    if (!Number.isInteger(requested) || requested < 1 || requested > LADDER_HEIGHT) {
      throw usageError("HINT_LEVEL_INVALID", `--level 应当是 1 到 ${LADDER_HEIGHT} 之间的整数（1 ${levelName(1)} … ${LADDER_HEIGHT} ${levelName(LADDER_HEIGHT)}）`);
    }
    if (requested > shown + 1) {
      throw usageError(
        "HINT_SKIP",
        `提示要一级一级看：实践 ${lab.id} 还没看过第 ${shown + 1} 级（${levelName(shown + 1)}），先运行 npm run hint -- ${chapter.id} ${lab.id}`,
      );
    }
    level = requested;
  }
  const key = HINT_LEVELS[level - 1] ?? "file";
  return { lab, level, name: HINT_LEVEL_NAMES[key], text: lab.hints[key], isNew: level > shown, top: level === LADDER_HEIGHT };
}

/**
 * 展开一级提示：hint 命令与 watch 的 h 键都走这里。给哪一级由 nextHint 决定；
 * 第一次看到的一级才记进进度（在进度文件的锁里重读，同时开着的 watch 与 hint 不会互相抹掉）。
 * seen 是展开之后看到过的最高一级；warning 是进度文件损坏被备份时的说明。
 */
export function revealHint(
  file: string,
  progress: Progress,
  chapter: Chapter,
  lab: Lab,
  requested?: number,
): { step: HintStep; seen: number; warning?: string } {
  const shown = hintsShown(progress, chapter.id, lab.id);
  const step = nextHint(chapter, lab, shown, requested);
  if (!step.isNew) return { step, seen: shown };
  let seen = step.level;
  const saved = updateProgress(file, (latest) => {
    recordHint(latest, chapter.id, lab.id, step.level);
    seen = hintsShown(latest, chapter.id, lab.id);
  });
  return saved.warning === undefined ? { step, seen } : { step, seen, warning: saved.warning };
}
