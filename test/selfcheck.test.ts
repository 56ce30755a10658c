import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { ensureHistory, type CourseHistory } from "../scripts/engine/history.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import {
  checkCitedHashes,
  checkEarlierChapters,
  checkFault,
  checkFirstRed,
  checkLesson,
  checkPurity,
  checkRegions,
  checkStep,
  checkTarget,
  checkTipMatchesPackage,
  makePracticeDir,
  materialise,
  PROMISES,
  type SelfCheckContext,
} from "../scripts/engine/selfcheck.ts";
import { KIT, tempDir } from "./helpers.ts";

/**
 * 课程自检：对每一章逐条证明 DESIGN §4 的承诺。
 * 测试名写明章节与承诺，任何一条被打破时，失败信息直接指出是哪一章的哪一条。
 */
const chapters = loadChapters(LESSONS_DIR);
const work = tempDir("selfcheck");
let history: CourseHistory;
const ctx = (): SelfCheckContext => ({ kitRoot: KIT, chapters, history, workRoot: work.dir });

before(async () => {
  history = await ensureHistory(KIT, chapters);
});
after(() => work.remove());

test("课程历史末端与套件里的 packages/pi-course 逐文件一致", async () => {
  assert.deepEqual(await checkTipMatchesPackage(ctx()), []);
});

for (const chapter of chapters) {
  describe(`第 ${chapter.id} 章 ${chapter.slug}`, () => {
    const label = (promise: string) => `第 ${chapter.id} 章 · 承诺 ${promise}`;
    let practiceDir: string;
    let targetDir: string;

    test(label(PROMISES.history), () => {
      assert.deepEqual(checkCitedHashes(ctx(), chapter), [], label(PROMISES.history));
    });

    test(label(PROMISES.red), async () => {
      practiceDir = await makePracticeDir(ctx(), chapter);
      assert.deepEqual(await checkFirstRed(chapter, practiceDir), [], label(PROMISES.red));
    });

    test(label(PROMISES.purity), async () => {
      assert.deepEqual(await checkPurity(ctx(), chapter, practiceDir), [], label(PROMISES.purity));
    });

    test(label(PROMISES.target), async () => {
      targetDir = await materialise(ctx(), history.chapters[chapter.id]!.target, `target-${chapter.id}`);
      assert.deepEqual(await checkTarget(chapter, targetDir), [], label(PROMISES.target));
    });

    test(label(PROMISES.earlier), async () => {
      assert.deepEqual(await checkEarlierChapters(ctx(), chapter, targetDir), [], label(PROMISES.earlier));
    });

    test(label(PROMISES.fault), async () => {
      const faultDir = await materialise(ctx(), history.chapters[chapter.id]!.target, `fault-${chapter.id}`);
      assert.deepEqual(await checkFault(chapter, faultDir), [], label(PROMISES.fault));
    });

    test(label(PROMISES.lesson), () => {
      assert.deepEqual(checkLesson(ctx(), chapter), [], label(PROMISES.lesson));
    });

    test(label(PROMISES.regions), { timeout: 240_000 }, async () => {
      assert.deepEqual(await checkRegions(ctx(), chapter), [], label(PROMISES.regions));
    });

    for (const step of chapter.steps) {
      test(label(`${PROMISES.steps} ${step.id}`), async () => {
        const stepDir = await materialise(ctx(), history.chapters[chapter.id]!.steps[step.id]!, `step-${chapter.id}-${step.id}`);
        assert.deepEqual(await checkStep(chapter, step.id, stepDir), [], label(`${PROMISES.steps} ${step.id}`));
      });
    }
  });
}
