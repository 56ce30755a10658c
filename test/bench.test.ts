import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { median, meets, TARGETS } from "../scripts/engine/bench.ts";
import { cloneKit, runScript, tempDir } from "./helpers.ts";

const work = tempDir("bench");
after(() => work.remove());

// bench 在一个新克隆里跑（它读课文：course lint、practice 的章节卡）：克隆取的是已提交的 HEAD，
// 工作区里没提交的课文改动与这个文件无关，改一句课文的 npm test 不必重跑它（kit-file-cache.mjs 的 CLONE_LESSON_READERS）
let clone: Promise<string> | undefined;
const kit = () => (clone ??= cloneKit(work.dir));

test("中位数与目标判断", () => {
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
  assert.equal(meets(TARGETS.watch, 299), true);
  assert.equal(meets(TARGETS.watch, 301), false);
  assert.equal(meets(TARGETS.verifyLast, 2_400), true);
  assert.equal(meets({ limit: 4, kind: "min-ratio", text: "≥ 4×" }, 3.9), false);
});

test("bench 跑一遍（第 03 章，每项 1 次）：打印性能目标表，结果追加到 JSON 历史", { timeout: 300_000 }, async () => {
  const out = path.join(work.dir, "results.json");
  // 旧版本写的单个对象：保留为历史的第一项
  writeFileSync(out, JSON.stringify({ date: "2026-01-01T00:00:00.000Z", rows: [{ id: "loop-ts7", median: 1234 }] }));
  const { code, stdout, stderr } = await runScript("bench", ["--runs", "1", "--chapter", "03", "--out", out], { kit: await kit() });
  // 在繁忙的机器上某项可能超时限：那是 1（目标未达成），不是崩溃
  assert.ok(code === 0 || code === 1, stderr);
  if (code === 1) {
    assert.match(stderr, /项没有达到目标/);
    assert.match(stdout, /没达到的目标：\n  .+：.+，目标 .+（(超出|差) /);
  }
  assert.match(stdout, /性能目标 · 中位数，每项 1 次/);
  assert.match(stdout, /学习循环 · TS 7（第 03 章，课文的命令）\s+\S+ s\s+1\.23 s\s*$/m, "与上一次的中位数并列；只报告，没有目标");
  assert.match(stdout, /下限：tsc \+ 测试自己的用时 \+ 启动一次 node\s+\S+ s/);
  assert.match(stdout, /TS 5\.9 ÷ TS 7（学习循环，只报告）/);
  assert.match(stdout, /watch 保存 → 偏差（第 03 章）\s+\S+ s\s+—\s+≤ 0\.3 s/);
  assert.doesNotMatch(stdout, /第 08 章/, "--chapter 03 只测第 03 章");
  assert.match(stdout, /verify（第 03 章/);
  assert.match(stdout, /practice（历史已缓存/);
  assert.match(stdout, /首次构建课程历史/);
  assert.match(stdout, /npm test.*未测：加 --full/);
  const history = JSON.parse(readFileSync(out, "utf8")) as Array<{
    runs: number;
    typescript: { current: string; baseline: string };
    rows: Array<{ id: string; median: number | null; samples: number[]; pass: boolean | null }>;
  }>;
  assert.equal(history.length, 2, "追加，不覆盖");
  const result = history[1]!;
  assert.equal(result.runs, 1);
  assert.match(result.typescript.current, /^7\./);
  assert.match(result.typescript.baseline, /^5\.9\./);
  assert.deepEqual(
    result.rows.map((row) => row.id),
    [
      "loop-ts7",
      "loop-ts7-build",
      "loop-ts7-tsc",
      "loop-ts7-test",
      "loop-floor",
      "loop-ts59",
      "loop-ts59-build",
      "loop-ts59-tsc",
      "test-runner",
      "test-own",
      "loop-ratio",
      "watch-03",
      "watch-03-pass",
      "verify",
      "practice",
      "history",
      "lint",
      "npm-test",
    ],
  );
  for (const row of result.rows.filter((entry) => entry.id !== "npm-test")) {
    assert.equal(row.samples.length, 1, row.id);
    assert.ok((row.median ?? 0) > 0, row.id);
  }
});

test("错误的输入：--runs 越界或不是数字、位置参数、观察章、未知选项；--help 说明目标", async () => {
  const cases: Array<[string[], RegExp]> = [
    [["--runs", "0"], /--runs 应当是 1 到 50 之间的整数/],
    [["--runs", "五"], /--runs 应当是 1 到 50 之间的整数/],
    [["03"], /不接受位置参数/],
    [["--chapter", "00"], /观察章/],
    [["--chapter", "99"], /可选章节/],
    [["--bogus"], /不认识的选项 --bogus/],
  ];
  for (const [args, message] of cases) {
    const { code, stderr } = await runScript("bench", args, { kit: await kit() });
    assert.equal(code, 2, `参数 ${JSON.stringify(args)}：${stderr}`);
    assert.match(stderr, message);
  }
  const help = await runScript("bench", ["--help"], { kit: await kit() });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /每一章 ≤ 0\.3 s/);
  assert.match(help.stdout, /最后一章 ≤ 2\.5 s/);
  assert.match(help.stdout, /watch：保存/);
  assert.match(help.stdout, /--full/);
});
