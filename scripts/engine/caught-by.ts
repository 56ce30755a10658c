import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { CourseError } from "./errors.js";
import { mapInPool } from "./pool.js";
import { judgeMutant, materialise, prepareMutantDir, targetPace, workerDirs, type SelfCheckContext } from "./selfcheck.js";

/** 一条声明的变异由哪项测试抓住（活下来或检验出错时没有）。 */
export interface Catcher {
  index: number;
  rule: string;
  by?: string;
  /** 活下来了，或者检验本身出了问题（说明）。 */
  problem?: string;
}

/** 同时检验几条变异：与承诺 10 相同，每个工作者一份目录副本。 */
const WORKERS = 2;

/**
 * 在本章目标上逐条施加 chapter.json 的 mutations，记下每条第一项变红的测试。
 * 作者工具（npm run course -- caught-by）：写进 chapter.json 的 caughtBy 之后，承诺 10 先单独跑那一项。
 */
export async function findCatchers(ctx: SelfCheckContext, chapter: Chapter): Promise<Catcher[]> {
  const commits = ctx.history.chapters[chapter.id];
  if (!commits) throw new CourseError("CHAPTER_NOT_BUILT", `课程历史里没有第 ${chapter.id} 章`);
  const dir = await materialise(ctx, commits.target, `caught-by-${chapter.id}`);
  const problems = await prepareMutantDir(dir);
  if (problems.length > 0) throw new CourseError("TARGET_BROKEN", problems.join("；"));
  const pace = await targetPace(chapter, dir);
  const dirs = workerDirs(dir, Math.min(WORKERS, chapter.mutations.length));
  return mapInPool([...chapter.mutations.entries()], dirs.length, async ([index, mutation], worker): Promise<Catcher> => {
    const verdict = await judgeMutant(chapter, dirs[worker] ?? dir, mutation, `变异 ${index + 1}（${mutation.rule}）`, pace);
    if (verdict.kind === "killed") return verdict.by === undefined ? { index, rule: mutation.rule, problem: "变红的不是某一项测试（挂住或加载失败）" } : { index, rule: mutation.rule, by: verdict.by };
    if (verdict.kind === "survived") return { index, rule: mutation.rule, problem: `活了下来（${verdict.passed}/${verdict.total} 全绿）` };
    return { index, rule: mutation.rule, problem: verdict.problem };
  });
}

/**
 * 把找到的测试写进 chapter.json：每条变异的 caughtBy 紧跟在 rule 后面，其余字段原样、原顺序；
 * 没找到的那条去掉旧的 caughtBy（它已经抓不住了）。先写临时文件再改名。
 */
export function writeCatchers(chapter: Chapter, catchers: readonly Catcher[]): void {
  const file = path.join(chapter.dir, "chapter.json");
  const raw = JSON.parse(readFileSync(file, "utf8")) as { mutations?: Array<Record<string, unknown>> };
  raw.mutations = (raw.mutations ?? []).map((mutation, index) => {
    const by = catchers.find((catcher) => catcher.index === index)?.by;
    const { caughtBy: _old, ...rest } = mutation;
    const ordered: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(rest)) {
      ordered[key] = value;
      if (key === "rule" && by !== undefined) ordered.caughtBy = by;
    }
    return ordered;
  });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(raw, null, 2)}\n`);
  renameSync(temporary, file);
}
