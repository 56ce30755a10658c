import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { HUNG_MESSAGE, runTests, type TestOutcome, type TestReport } from "../scripts/engine/runner.ts";
import { WarmTests } from "../scripts/engine/watch/warm-tests.ts";
import { tempDir } from "./helpers.ts";

const work = tempDir("runner-warm");
after(() => work.remove());

/** 一份测试夹具：写在自己的目录里（学习者的代码与测试文件并排），返回测试文件的路径。 */
function fixture(name: string, files: Record<string, string>): string {
  const dir = path.join(work.dir, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return path.join(dir, "fixture.test.mjs");
}

const HEADER = `import assert from "node:assert/strict";\nimport { test } from "node:test";\n`;

const FIXTURES = {
  hang: fixture("hang", {
    "fixture.test.mjs": `${HEADER}test("first", () => {});\ntest("hang", { timeout: 500 }, async () => { await new Promise(() => {}); });\ntest("third", () => {});\n`,
  }),
  // 学习者能改到的代码里把断言换成空函数：测试进程在它运行之前就冻结了 node:assert，这一行本身就失败
  tamperedAssert: fixture("tampered-assert", {
    "solution.mjs": `import assert from "node:assert";\nassert.equal = () => {};\nassert.strict.equal = () => {};\nexport const answer = 1;\n`,
    "fixture.test.mjs": `${HEADER}import { answer } from "./solution.mjs";\ntest("answer is 2", () => { assert.equal(answer, 2); });\n`,
  }),
  envProbe: fixture("env-probe", {
    "fixture.test.mjs": `${HEADER}test("progress location is hidden", () => { assert.equal(process.env.PI_COURSE_PROGRESS, undefined); });\n`,
  }),
  loadFailure: fixture("load-failure", {
    "fixture.test.mjs": `import { nothing } from "./no-such-module.mjs";\n${HEADER}test("never runs", () => {});\n`,
  }),
  // 测完不退出（留下一个还在运行的子进程）：卡住检测连进程组一起结束它们
  openHandle: fixture("open-handle", {
    "fixture.test.mjs": `import { spawn } from "node:child_process";\n${HEADER}test("passes", () => {});\nspawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)", new URL(import.meta.url).pathname]);\n`,
  }),
};

/** 结论：每项的名字、通过与否、信息与断言值（用时与堆栈随进程而变，不比）。 */
function verdict(report: TestReport): unknown {
  const item = ({ name, ok, message, actual, expected }: TestOutcome) => ({ name, ok, message, actual, expected });
  return { tests: report.tests.map(item), passed: report.passed, failed: report.failed };
}

/**
 * 同一份测试夹具经 verify 的运行方式（runner.runTests，现启动进程）与 watch 的运行方式（WarmTests，预先启动好的进程）
 * 各跑一次，结论必须一字不差：两者用同一份进程规格（参数、环境、assert 冻结、进程组、报告器、卡住检测、挂住的统一）。
 */
describe("verify 与 watch 对同一份代码给出同样的结论", () => {
  const timeoutMs = 1_000;
  const warm = new WarmTests(timeoutMs);
  warm.prepare([undefined]);
  after(() => warm.close());
  const outside = process.env.PI_COURSE_PROGRESS;
  process.env.PI_COURSE_PROGRESS = path.join(work.dir, "progress.json"); // 课程命令里总有一个进度文件
  after(() => {
    if (outside === undefined) delete process.env.PI_COURSE_PROGRESS;
    else process.env.PI_COURSE_PROGRESS = outside;
  });

  async function both(file: string): Promise<TestReport> {
    const cold = await runTests([file], { timeoutMs });
    const arrived: TestOutcome[] = [];
    const warmed = await warm.run(file, { onOutcome: (outcome) => arrived.push(outcome) });
    assert.deepEqual(verdict(warmed), verdict(cold));
    // 逐项报告（watch 先行画出第一处偏差用）与最后的报告说法一致
    for (const outcome of arrived) {
      const final = warmed.tests.find((other) => other.name === outcome.name);
      assert.deepEqual([outcome.ok, outcome.message], [final?.ok, final?.message], outcome.name);
    }
    return cold;
  }

  test("挂住的测试：它失败并给出统一的说明，其后的测试照常运行", { timeout: 30_000 }, async () => {
    const report = await both(FIXTURES.hang);
    assert.deepEqual(
      report.tests.map((outcome) => [outcome.name, outcome.ok, outcome.message ?? ""]),
      [["first", true, ""], ["hang", false, HUNG_MESSAGE], ["third", true, ""]],
    );
  });

  test("学习者的代码改写 assert：改不动，测试不会因此“通过”", { timeout: 30_000 }, async () => {
    const report = await both(FIXTURES.tamperedAssert);
    assert.equal(report.passed, 0, JSON.stringify(report.tests));
    assert.equal(report.failed, 1);
    assert.match(report.tests[0]?.message ?? "", /read only|read-only|not extensible/);
  });

  test("测试进程看不到进度文件的位置（PI_COURSE_PROGRESS）", { timeout: 30_000 }, async () => {
    const report = await both(FIXTURES.envProbe);
    assert.deepEqual([report.passed, report.failed], [1, 0], JSON.stringify(report.tests));
  });

  test("文件没能加载：以文件路径为名记一次失败，信息是同一行错误", { timeout: 30_000 }, async () => {
    const report = await both(FIXTURES.loadFailure);
    assert.deepEqual(report.tests.map((outcome) => [outcome.name, outcome.ok]), [[FIXTURES.loadFailure, false]]);
    assert.match(report.tests[0]?.message ?? "", /ERR_MODULE_NOT_FOUND|Cannot find module/);
  });

  test("测完不退出：结束整个进程组，这个文件记为失败，不留下进程", { timeout: 60_000 }, async () => {
    const report = await both(FIXTURES.openHandle);
    assert.equal(report.tests.find((outcome) => outcome.name === "passes")?.ok, true);
    assert.equal(report.tests.find((outcome) => outcome.name === FIXTURES.openHandle)?.ok, false, JSON.stringify(report.tests));
    const left = spawnSync("pgrep", ["-f", FIXTURES.openHandle], { encoding: "utf8" });
    assert.equal(left.stdout.trim(), "", "没有留下还在运行的测试进程");
  });
});
