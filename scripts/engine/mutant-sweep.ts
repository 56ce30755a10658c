import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { addedLinesOf, generateMutants, isEquivalent, type GeneratedMutant } from "./mutants.js";
import { mapInPool } from "./pool.js";
import { judgeMutant, materialise, prepareMutantDir, targetPace, workerDirs, type SelfCheckContext } from "./selfcheck.js";
import { CourseError } from "./errors.js";

export type MutantFate = "killed" | "survived" | "equivalent" | "problem";

export interface MutantOutcome {
  mutant: GeneratedMutant;
  fate: MutantFate;
  /** 等价变异的理由，或检验本身出错时的说明。 */
  note?: string;
}

export interface MutantReport {
  chapter: string;
  outcomes: MutantOutcome[];
  /** chapter.json 里登记为等价、却不再对应任何生成变异的条目（代码改了，理由过时了）。 */
  staleEquivalents: number[];
  killed: number;
  survived: number;
  equivalent: number;
  /** 抓住的 / (全部 − 等价)；没有可判定的变异时是 1。 */
  score: number;
}

/** 一次同时检验几个变异：与承诺 10 相同，每个工作者有自己的目录副本。 */
const WORKERS = 2;

/**
 * 在本章目标上逐个施加生成的变异（只在本章实践区域里），报告哪些被聚焦测试抓住、哪些活了下来。
 * 作者工具，不属于 npm test：一章几十到上百个变异，要跑几分钟。
 */
export async function sweepMutants(
  ctx: SelfCheckContext,
  chapter: Chapter,
  onOutcome: (outcome: MutantOutcome, done: number, total: number) => void = () => {},
): Promise<MutantReport> {
  const commits = ctx.history.chapters[chapter.id];
  if (!commits) throw new CourseError("CHAPTER_NOT_BUILT", `课程历史里没有第 ${chapter.id} 章`);
  const dir = await materialise(ctx, commits.target, `mutants-${chapter.id}`);
  const labs = new Set(chapter.labs.map((lab) => lab.id));
  const patch = existsSync(chapter.patchPath) ? readFileSync(chapter.patchPath, "utf8") : "";
  const mutants = chapter.teachingFiles
    .filter((file) => file.endsWith(".ts") && existsSync(path.join(dir, file)))
    .flatMap((file) => generateMutants(readFileSync(path.join(dir, file), "utf8"), file, labs, addedLinesOf(patch, file)));

  const problems = await prepareMutantDir(dir);
  if (problems.length > 0) throw new CourseError("TARGET_BROKEN", problems.join("；"));
  const pace = await targetPace(chapter, dir);
  const dirs = workerDirs(dir, Math.min(WORKERS, mutants.length));

  let done = 0;
  const outcomes = await mapInPool(mutants, dirs.length, async (mutant, worker): Promise<MutantOutcome> => {
    const known = isEquivalent(mutant, chapter.equivalentMutants);
    let outcome: MutantOutcome;
    if (known) outcome = { mutant, fate: "equivalent", note: known.reason };
    else {
      const verdict = await judgeMutant(chapter, dirs[worker] ?? dir, mutant, `${mutant.file}:${mutant.line} ${mutant.operator}`, pace);
      outcome = verdict.kind === "problem" ? { mutant, fate: "problem", note: verdict.problem } : { mutant, fate: verdict.kind };
    }
    onOutcome(outcome, ++done, mutants.length);
    return outcome;
  });

  const staleEquivalents = chapter.equivalentMutants.flatMap((known, index) =>
    mutants.some((mutant) => isEquivalent(mutant, [known])) ? [] : [index],
  );
  const count = (fate: MutantFate) => outcomes.filter((outcome) => outcome.fate === fate).length;
  const killed = count("killed");
  const equivalent = count("equivalent");
  const judged = outcomes.length - equivalent - count("problem");
  return {
    chapter: chapter.id,
    outcomes,
    staleEquivalents,
    killed,
    survived: count("survived"),
    equivalent,
    score: judged === 0 ? 1 : killed / judged,
  };
}
