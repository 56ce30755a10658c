import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { loadChapters, type Chapter } from "../../scripts/engine/chapters.ts";
import { ensureHistory, type CourseHistory } from "../../scripts/engine/history.ts";
import { LESSONS_DIR } from "../../scripts/engine/paths.ts";
import { cacheEnabled, cacheKey, noteCacheUse, readCached, writeCached } from "../../scripts/engine/check-cache.ts";
import { chapterRun, contractCost, contractFor, runFor, type ChapterRun } from "../../scripts/engine/contract.ts";
import type { SelfCheckContext } from "../../scripts/engine/selfcheck.ts";
import { elsewhereSkip } from "../../scripts/ci/node-lines.ts";
import { KIT, tempDir } from "../helpers.ts";

/**
 * 课程自检的章节部分：对每一章逐条证明 DESIGN §4 的承诺。
 * 章节分给几个测试文件（shard-1.test.ts …），npm test 的 --test-concurrency=2 就能让两个核都在做自检，
 * 而不是一个文件从第 00 章顺序做到最后一章、最后只剩它一个在跑。哪一章落在哪个文件由 assignShards 决定，
 * 只看 lessons/ 里的章节，新增章节自动分进去；selfcheck.test.ts 核对每一章恰好在一个文件里。
 * 目录名以下划线开头：node --test 按路径排序决定先跑哪个文件，这些最长的文件排在最前，不会最后才开始、拖出一条长尾。
 * 只跑一章：node --import tsx --test --test-name-pattern="第 07 章" test/_selfcheck/*.test.ts
 */
export const SHARD_COUNT = 4;



/** 分片文件所在的目录与文件名：shard-1.test.ts … shard-N.test.ts。 */
export const SHARD_DIR = fileURLToPath(new URL(".", import.meta.url));
export const shardFile = (shard: number): string => `shard-${shard}.test.ts`;

/**
 * 一章自检大约要做多少次“编译 + 跑聚焦测试”：契约表里各项检查的 cost 之和（见 scripts/engine/contract.ts）。
 * 用来把章节分得大致一样重。
 */
export function estimatedCost(chapter: Chapter): number {
  return contractCost(chapter);
}

/** 最重的章节先分，每次分给目前最轻的文件（同样轻取编号小的）：结果只取决于章节本身，每次都一样。 */
export function assignShards(chapters: readonly Chapter[], shards = SHARD_COUNT): Map<string, number> {
  const load = Array.from({ length: shards }, () => 0);
  const order = [...chapters].sort((a, b) => estimatedCost(b) - estimatedCost(a) || a.id.localeCompare(b.id));
  const assigned = new Map<string, number>();
  for (const chapter of order) {
    const lightest = load.indexOf(Math.min(...load));
    load[lightest] = (load[lightest] ?? 0) + estimatedCost(chapter);
    assigned.set(chapter.id, lightest + 1);
  }
  return assigned;
}

/** 目录里实际存在的分片文件编号。 */
export function shardFilesOnDisk(): number[] {
  return readdirSync(SHARD_DIR)
    .map((name) => /^shard-(\d+)\.test\.ts$/.exec(name)?.[1])
    .filter((id): id is string => id !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** 在调用它的测试文件里登记第 shard 个分片的章节自检。 */
export function selfCheckShard(shard: number): void {
  const chapters = loadChapters(LESSONS_DIR);
  const mine = assignShards(chapters);
  const work = tempDir(`selfcheck-${shard}`);
  let history: CourseHistory;
  const ctx = (): SelfCheckContext => ({ kitRoot: KIT, chapters, history, workRoot: work.dir });

  before(async () => {
    history = await ensureHistory(KIT, chapters);
  });
  after(() => work.remove());

  for (const chapter of chapters) {
    if (mine.get(chapter.id) === shard) describeChapter(chapter, ctx);
  }
}

function describeChapter(chapter: Chapter, ctx: () => SelfCheckContext): void {
  describe(`第 ${chapter.id} 章 ${chapter.slug}`, () => {
    let run: ChapterRun | undefined;
    const chapterRunOnce = () => (run ??= chapterRun(ctx(), chapter));
    // CI 的其余 Node 版本线上（node-lines.ts 设的环境变量）变异登记为跳过；本机的 npm test 照常全做
    for (const check of contractFor(chapter)) {
      const label = `第 ${chapter.id} 章 · 承诺 ${check.title}`;
      const skip = check.firstLineOnly ? elsewhereSkip("变异") : undefined;
      test(label, { timeout: check.timeoutMs, ...(skip === undefined ? {} : { skip }) }, async (t) => {
        const key = cacheEnabled() ? cacheKey(ctx(), chapter, check) : undefined;
        const cached = key === undefined ? undefined : readCached(KIT, key);
        if (cached !== undefined) {
          noteCacheUse("hit");
          t.diagnostic(`来自缓存：${cached.at} 同样的输入检查通过（用时 ${(cached.durationMs / 1000).toFixed(1)} 秒）`);
          return;
        }
        const started = Date.now();
        const problems = await check.run(runFor(check, chapterRunOnce()));
        noteCacheUse("run");
        assert.deepEqual(problems, [], label);
        if (key !== undefined) writeCached(KIT, key, { chapter: chapter.id, check: check.id, durationMs: Date.now() - started, at: new Date().toISOString() });
      });
    }
  });
}
