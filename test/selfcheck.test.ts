import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { ensureHistory, type CourseHistory } from "../scripts/engine/history.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import {
  checkCitedHashes,
  checkCompileFails,
  checkEarlierChapters,
  checkFault,
  checkFirstRed,
  checkLesson,
  checkMutations,
  checkPurity,
  checkRegions,
  checkStep,
  checkTarget,
  checkTipMatchesPackage,
  findHintText,
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

test("变异测试会抓住活下来的变异：只改注释的“变异”被报告为没有测试守住", { timeout: 120_000 }, async () => {
  const chapter = chapters.find((candidate) => candidate.id === "01")!;
  const dir = await materialise(ctx(), history.chapters["01"]!.target, "mutations-survivor");
  const file = "packages/pi-course/src/trace-events.ts";
  const harmless = { rule: "只改一行注释", file, find: "// ── 在边界上解析 unknown", replace: "// ── 改过的注释" };
  const missing = { rule: "原文不存在", file, find: "这段原文不在文件里", replace: "x" };
  const problems = await checkMutations({ ...chapter, mutations: [harmless, missing] }, dir);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0]!, /变异 1（只改一行注释）之后聚焦测试仍然 \d+\/\d+ 全绿/);
  assert.match(problems[1]!, /变异 2（原文不存在）的原文在 .* 里出现 0 次/);
  assert.deepEqual(await checkMutations({ ...chapter, mutations: [] }, dir), [
    "chapter.json 没有列出 mutations：课文说出的每条规则都要有一条让聚焦测试变红的变异",
  ]);
});

test("编译失败用例会抓住照样编译通过的替换和报错不对的替换", { timeout: 120_000 }, async () => {
  const chapter = chapters.find((candidate) => candidate.id === "01")!;
  const dir = await materialise(ctx(), history.chapters["01"]!.target, "compile-fails");
  const file = "packages/pi-course/src/trace-events.ts";
  const harmless = { rule: "只改一行注释", file, find: "// ── 在边界上解析 unknown", replace: "// ── 改过的注释", code: "TS2322" };
  const wrongCode = { ...harmless, rule: "报的是别的错", replace: "const broken: number = \"x\";\n// ── 在边界上解析 unknown", code: "TS2304" };
  const right = { ...wrongCode, rule: "报的正是声明的错", code: "TS2322" };
  const problems = await checkCompileFails({ ...chapter, compileFails: [harmless, wrongCode, right] }, dir);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0]!, /编译失败用例 1（只改一行注释）之后 tsc 仍然编译通过，应当报 TS2322/);
  assert.match(problems[1]!, /编译失败用例 2（报的是别的错）之后 tsc 没有在 .*trace-events\.ts 报 TS2304：TS2322/);
});

test("承诺 9 会失败：实践没有区域、占位代码没有对应的区域、后面实践的占位挡住前面的实践", { timeout: 240_000 }, async () => {
  const chapter07 = chapters.find((candidate) => candidate.id === "07")!;
  const extraLab = { ...chapter07.labs[0]!, id: "7.9" };
  assert.deepEqual(await checkRegions(ctx(), { ...chapter07, labs: [...chapter07.labs, extraLab] }), [
    "实践 7.9 在目标的教学文件里没有区域：练习目录里它无事可做",
  ]);
  const chapter04 = chapters.find((candidate) => candidate.id === "04")!;
  const stray = { file: chapter04.teachingFiles[0]!, lab: chapter04.labs[0]!.id, match: "x", code: ["x"] };
  assert.deepEqual(await checkRegions(ctx(), { ...chapter04, placeholders: [stray] }), [
    "声明了 placeholders，目标的教学文件里却没有本章的实践区域",
  ]);
  // 没有 7.3 / 7.4 的临时占位，planTurn 与 stopBeforeCall 一上来就抛错：填回 7.1 之后它的测试也过不了。
  const problems = await checkRegions(ctx(), { ...chapter07, placeholders: [] }, "regions-07-without-placeholders");
  assert.ok(problems.some((problem) => problem.startsWith("填回实践 7.1 之后")), problems.join("\n"));
});

test("练习目录里出现提示原文会被发现", () => {
  const chapter = chapters.find((candidate) => candidate.id === "05")!;
  const dir = path.join(work.dir, "hint-leak");
  mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  writeFileSync(path.join(dir, "notes.md"), `抄来的：${chapter.labs[1]!.hints.pseudocode}\n`);
  writeFileSync(path.join(dir, "node_modules", "ignored.md"), chapter.labs[0]!.hints.code);
  assert.deepEqual(findHintText(chapter, dir), [`练习目录的 notes.md 含有实践 ${chapter.labs[1]!.id} 的提示（伪代码）原文`]);
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

    test(label(PROMISES.mutations), { timeout: 600_000 }, async () => {
      const mutantDir = await materialise(ctx(), history.chapters[chapter.id]!.target, `mutations-${chapter.id}`);
      assert.deepEqual(await checkMutations(chapter, mutantDir), [], label(PROMISES.mutations));
    });

    if (chapter.compileFails.length > 0) {
      test(label(PROMISES.compileFails), { timeout: 120_000 }, async () => {
        const compileDir = await materialise(ctx(), history.chapters[chapter.id]!.target, `compile-fails-${chapter.id}`);
        assert.deepEqual(await checkCompileFails(chapter, compileDir), [], label(PROMISES.compileFails));
      });
    }

    for (const step of chapter.steps) {
      test(label(`${PROMISES.steps} ${step.id}`), async () => {
        const stepDir = await materialise(ctx(), history.chapters[chapter.id]!.steps[step.id]!, `step-${chapter.id}-${step.id}`);
        assert.deepEqual(await checkStep(chapter, step.id, stepDir), [], label(`${PROMISES.steps} ${step.id}`));
      });
    }
  });
}
