import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";

import { HUNG_MESSAGE, runTests, settleHangs } from "../scripts/engine/runner.ts";
import { tempDir } from "./helpers.ts";

const work = tempDir("runner-hangs");
after(() => work.remove());

/** 一份测试文件：names 里以 hang 开头的测试等一个永远不兑现的 Promise，其余立即通过。 */
function testFile(name: string, names: readonly string[]): string {
  const file = path.join(work.dir, name);
  const body = names
    .map((title) =>
      title.startsWith("hang")
        ? `test(${JSON.stringify(title)}, { timeout: 500 }, async () => { await new Promise(() => {}); });`
        : `test(${JSON.stringify(title)}, () => { assert.equal(1 + 1, 2); });`,
    )
    .join("\n");
  writeFileSync(file, `import assert from "node:assert/strict";\nimport { test } from "node:test";\n${body}\n`);
  return file;
}

/**
 * 这些断言在每一条受测的 Node 版本线上都成立（CI 用 scripts/ci/node-lines.mjs 在 20、22、24、26 上运行）：
 * 挂住的测试不再让同文件里其后的测试被取消，也不再随版本换一种说法。
 */
describe("runner：挂住的测试在每个 Node 版本上给出同样的结论", () => {
  test("一项挂住：它失败并给出统一的说明，其后的测试照常运行并通过", async () => {
    const file = testFile(`one-hang.test.mjs`, ["first", "hang here", "third (x)", "fourth [y]"]);
    const report = await runTests([file]);
    assert.deepEqual(
      report.tests.map((outcome) => [outcome.name, outcome.ok]),
      [["first", true], ["hang here", false], ["third (x)", true], ["fourth [y]", true]],
    );
    assert.equal(report.passed, 3);
    const hung = report.tests[1];
    assert.equal(hung?.message, HUNG_MESSAGE);
    assert.equal(hung?.stack, undefined, "node 内部的堆栈随版本而变，不该交给 verify 去定位");
  });

  test("重跑时又有一项挂住：逐轮处理，直到没有“没开始”的测试", async () => {
    const file = testFile(`two-hangs.test.mjs`, ["a", "hang 1", "b", "hang 2", "c"]);
    const report = await runTests([file]);
    assert.deepEqual(
      report.tests.map((outcome) => [outcome.name, outcome.ok, outcome.message ?? ""]),
      [["a", true, ""], ["hang 1", false, HUNG_MESSAGE], ["b", true, ""], ["hang 2", false, HUNG_MESSAGE], ["c", true, ""]],
    );
  });

  test("名称过滤照旧：没被选中的测试不计入，也不会被重跑", async () => {
    const file = testFile(`pattern.test.mjs`, ["keep 1", "hang keep", "drop", "keep 2"]);
    const report = await runTests([file], { pattern: "keep" });
    assert.deepEqual(report.tests.map((outcome) => [outcome.name, outcome.ok]), [["keep 1", true], ["hang keep", false], ["keep 2", true]]);
  });

  test("文件没能加载（import 一个不存在的模块）：以文件路径为名记一次失败，信息是那一行错误", async () => {
    const file = path.join(work.dir, `missing-import.test.mjs`);
    writeFileSync(file, `import { nothing } from "./no-such-module.js";\nimport { test } from "node:test";\ntest("不会运行", () => {});\n`);
    const report = await runTests([file]);
    assert.deepEqual(report.tests.map((outcome) => [outcome.name, outcome.ok]), [[file, false]]);
    assert.match(report.tests[0]?.message ?? "", /ERR_MODULE_NOT_FOUND|Cannot find module/);
  });
});

describe("settleHangs：按 Node 20、22 与 Node 24 起两种报告方式统一", () => {
  const drained = "Promise resolution is still pending but the event loop has already resolved";
  const file = "/p/03.test.js";

  test("Node 20、22：第一个被取消的是挂住的那项，其后被取消的按整名单独重跑", async () => {
    const calls: Array<[string[], string]> = [];
    const tests = await settleHangs(
      [
        { name: "a", file, ok: true },
        { name: "b", file, ok: false, failureType: "cancelledByParent", message: drained, stack: "process.emit (node:events)" },
        { name: "c.d", file, ok: false, failureType: "cancelledByParent", message: drained },
        { name: "e", file, ok: false, failureType: "cancelledByParent", message: drained },
      ],
      async (files, pattern) => {
        calls.push([files, pattern]);
        return [
          { name: "c.d", file, ok: true },
          { name: "e", file, ok: false, message: "Expected values to be strictly equal", failureType: "testCodeFailure" },
        ];
      },
    );
    assert.deepEqual(calls, [[[file], "^(?:c\\.d|e)$"]]);
    assert.deepEqual(tests, [
      { name: "a", file, ok: true },
      { name: "b", file, ok: false, message: HUNG_MESSAGE },
      { name: "c.d", file, ok: true },
      { name: "e", file, ok: false, message: "Expected values to be strictly equal" },
    ]);
  });

  test("Node 24 起：超时的那项换成同一句说明，不需要重跑", async () => {
    const tests = await settleHangs(
      [
        { name: "a", file, ok: true },
        { name: "b", file, ok: false, failureType: "testTimeoutFailure", message: "test timed out after 1000ms", stack: "at x" },
        { name: "c", file, ok: true },
      ],
      () => assert.fail("没有没开始的测试，不该重跑"),
    );
    assert.deepEqual(tests, [
      { name: "a", file, ok: true },
      { name: "b", file, ok: false, message: HUNG_MESSAGE },
      { name: "c", file, ok: true },
    ]);
  });

  test("别的失败原样保留", async () => {
    const failure = { name: "x", file, ok: false, message: "boom", failureType: "testCodeFailure", stack: "Error: boom\n    at /p/src/a.ts:1:1" };
    const tests = await settleHangs([failure], () => assert.fail("不该重跑"));
    assert.deepEqual(tests, [{ name: "x", file, ok: false, message: "boom", stack: "Error: boom\n    at /p/src/a.ts:1:1" }]);
  });
});

test(`测试跑完后进程不退出（留下一个没关的服务器）：runner 在时限之后连进程组一起结束它，报告这个文件失败，不留下进程$`, { timeout: 30_000 }, async () => {
  const file = path.join(work.dir, `open-handle.test.mjs`);
  writeFileSync(
    file,
    `import http from "node:http";\nimport { test } from "node:test";\ntest("通过，但留下一个开着的服务器", () => {});\nhttp.createServer().listen(0, "127.0.0.1");\n`,
  );
  const report = await runTests([file], { timeoutMs: 1_000 });
  assert.deepEqual(
    report.tests.filter((outcome) => outcome.name !== file).map((outcome) => [outcome.name, outcome.ok]),
    [["通过，但留下一个开着的服务器", true]],
  );
  // 各版本的 Node 说法不同（20、22 自己取消这个文件，24 起由 runner 结束），结论相同：这个文件没通过
  const fileLevel = report.tests.find((outcome) => outcome.name === file);
  assert.equal(fileLevel?.ok, false, JSON.stringify(report.tests));
  const left = spawnSync("pgrep", ["-f", file], { encoding: "utf8" });
  assert.equal(left.stdout.trim(), "", "没有留下还在运行的测试进程");
});

test(`stopAtFirstFailure：第一项失败一到就结束进程组交回结果，不等后面挂住的测试和不退出的进程$`, { timeout: 30_000 }, async () => {
  const file = path.join(work.dir, `stop-early.test.mjs`);
  writeFileSync(
    file,
    [
      `import assert from "node:assert/strict";`,
      `import http from "node:http";`,
      `import { test } from "node:test";`,
      `http.createServer().listen(0, "127.0.0.1");`,
      `test("通过", () => {});`,
      `test("失败", () => { assert.equal(1, 2); });`,
      `test("挂住", async () => { await new Promise(() => {}); });`,
    ].join("\n"),
  );
  const started = Date.now();
  const report = await runTests([file], { timeoutMs: 20_000, stopAtFirstFailure: true });
  const elapsed = Date.now() - started;
  assert.ok(report.failed >= 1, JSON.stringify(report.tests));
  assert.deepEqual(report.tests.slice(0, 2).map((outcome) => [outcome.name, outcome.ok]), [["通过", true], ["失败", false]]);
  assert.ok(elapsed < 15_000, `应当在第一项失败之后就收场，实际用了 ${elapsed} ms（挂住的测试要 20 s 才超时）`);
  const left = spawnSync("pgrep", ["-f", file], { encoding: "utf8" });
  assert.equal(left.stdout.trim(), "", "没有留下还在运行的测试进程");
  // 全绿时不提前收场：照常跑完，计数完整
  const green = testFile(`stop-early-green.test.mjs`, ["a", "b", "c"]);
  const full = await runTests([green], { stopAtFirstFailure: true });
  assert.deepEqual([full.passed, full.tests.length], [3, 3]);
});

test("提前结束的测试进程来不及清理：它在 os.tmpdir() 下建的目录随它自己的 TMPDIR 一起删掉，不留在系统的临时目录里", { timeout: 30_000 }, async () => {
  const file = path.join(work.dir, "scratch.test.mjs");
  const note = path.join(work.dir, "scratch-dir.txt");
  writeFileSync(
    file,
    [
      `import assert from "node:assert/strict";`,
      `import { mkdtempSync, writeFileSync } from "node:fs";`,
      `import os from "node:os";`,
      `import path from "node:path";`,
      `import { test } from "node:test";`,
      // 建了目录、本该在最后一项之后删掉：第一项失败时进程组就被结束，删除永远轮不到
      `const dir = mkdtempSync(path.join(os.tmpdir(), "scratch-"));`,
      `writeFileSync(path.join(dir, "data.txt"), "x");`,
      `writeFileSync(${JSON.stringify(note)}, dir);`,
      `test("失败", () => { assert.equal(1, 2); });`,
      `test("挂住", async () => { await new Promise(() => {}); });`,
    ].join("\n"),
  );
  const report = await runTests([file], { timeoutMs: 20_000, stopAtFirstFailure: true });
  assert.ok(report.failed >= 1, JSON.stringify(report.tests));
  const dir = readFileSync(note, "utf8");
  const scratch = path.dirname(dir);
  assert.match(path.basename(scratch), /^pi-course-run-/, `测试进程的 os.tmpdir() 应当是它自己的目录，收到 ${dir}`);
  assert.equal(path.dirname(scratch), os.tmpdir(), "这个目录建在系统的临时目录里");
  assert.equal(existsSync(scratch), false, `测试进程结束之后 ${scratch} 应当已经删掉`);
});

test("节奏（变异用）：某项的结果比未变异时晚到太多，就当作它挂住、记一项失败并收场，不等测试自己的 20 秒时限；跳过的测试不打乱节奏", { timeout: 60_000 }, async () => {
  const file = path.join(work.dir, "paced.test.mjs");
  const write = (slow: boolean) =>
    writeFileSync(
      file,
      [
        `import { test } from "node:test";`,
        `test("快", () => {});`,
        `test("被过滤", () => {});`,
        `test("等一下", { timeout: 20_000 }, async () => { await new Promise((resolve) => setTimeout(resolve, ${slow ? "60_000" : "50"})); });`,
        `test("最后", () => {});`,
      ].join("\n"),
    );
  write(false);
  const baseline = await runTests([file]);
  assert.equal(baseline.failed, 0);
  assert.deepEqual(baseline.pace?.records.map((record) => record.name), ["快", "被过滤", "等一下", "最后"]);
  // 未变异时不会撞上期限：同样的节奏照常全绿
  const again = await runTests([file], { stopAtFirstFailure: true, pace: baseline.pace!, pattern: "^(?:快|等一下|最后)$" });
  assert.deepEqual([again.passed, again.failed], [3, 0]);
  write(true);
  const started = Date.now();
  const report = await runTests([file], { timeoutMs: 20_000, stopAtFirstFailure: true, pace: baseline.pace!, pattern: "^(?:快|等一下|最后)$" });
  const elapsed = Date.now() - started;
  assert.ok(report.failed >= 1, JSON.stringify(report.tests));
  const hung = report.tests.find((outcome) => !outcome.ok);
  assert.match(hung?.message ?? "", /毫秒没有新的结果（未变异时这里只隔 \d+ 毫秒）：当作有一项测试挂住了/);
  assert.equal(hung?.name, "等一下", "以节奏里的下一项记下挂住的测试");
  assert.ok(elapsed < 12_000, `期限由实测的节奏推出（4 倍加 1.5 秒），实际用了 ${elapsed} ms`);
  const left = spawnSync("pgrep", ["-f", file], { encoding: "utf8" });
  assert.equal(left.stdout.trim(), "", "没有留下还在运行的测试进程");
});

test("几个文件：各自一个进程，报告按给出的顺序，一个文件挂住不连累别的文件", { timeout: 30_000 }, async () => {
  const files = [testFile("many-a.test.mjs", ["a1", "a2"]), testFile("many-b.test.mjs", ["b1", "hang b"]), testFile("many-c.test.mjs", ["c1"])];
  const report = await runTests(files);
  assert.deepEqual(
    report.tests.map((outcome) => [path.basename(outcome.file), outcome.name, outcome.ok]),
    [["many-a.test.mjs", "a1", true], ["many-a.test.mjs", "a2", true], ["many-b.test.mjs", "b1", true], ["many-b.test.mjs", "hang b", false], ["many-c.test.mjs", "c1", true]],
  );
  assert.deepEqual([report.passed, report.failed], [4, 1]);
});

test("断言的值里有 Promise 或函数：照常报告那一项失败和它的信息，其余测试照常", { timeout: 30_000 }, async () => {
  const file = path.join(work.dir, "odd-values.test.mjs");
  writeFileSync(
    file,
    [
      `import assert from "node:assert/strict";`,
      `import { test } from "node:test";`,
      `test("promise", () => { assert.deepEqual({ p: Promise.resolve(1) }, { p: 2 }); });`,
      `test("function", () => { assert.equal(() => 1, 2); });`,
      `test("ok", () => {});`,
    ].join("\n"),
  );
  const report = await runTests([file]);
  assert.deepEqual(report.tests.map((outcome) => [outcome.name, outcome.ok]), [["promise", false], ["function", false], ["ok", true]]);
  for (const failed of report.tests.slice(0, 2)) assert.match(failed.message ?? "", /Expected values to be strictly/);
});
