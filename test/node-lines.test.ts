import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

import { FIRST_LINE_ELSEWHERE, FIRST_LINE_ENV, LINES, elsewhereSkip, firstLineElsewhere, firstLineOnlySkips, suitePassed, summaryCounts } from "../scripts/ci/node-lines.ts";
import { continueChain } from "../scripts/engine/chain.ts";
import { loadChapters } from "../scripts/engine/chapters.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";

test("CI 的汇总：管道里的 TAP（# pass）与 Node 24 起的 spec（ℹ pass）都读得出，取最后一次", () => {
  const tap = "# pass 3\n# fail 0\n...\n# tests 184\n# suites 40\n# pass 184\n# fail 0\n# cancelled 0\n";
  assert.deepEqual(summaryCounts(tap), { tests: 184, pass: 184, fail: 0, cancelled: 0 });
  const spec = "✔ a (1ms)\nℹ tests 184\nℹ suites 40\nℹ pass 182\nℹ fail 1\nℹ cancelled 1\n";
  assert.deepEqual(summaryCounts(spec), { tests: 184, pass: 182, fail: 1, cancelled: 1 });
  assert.deepEqual(summaryCounts("npm ERR! missing script: test\n"), { tests: undefined, pass: undefined, fail: undefined, cancelled: undefined });
});

test("一条线只在退出码为 0、找得到汇总且全部通过时算通过", () => {
  assert.equal(suitePassed(0, { tests: 184, pass: 184, fail: 0 }), true);
  assert.equal(suitePassed(1, { tests: 184, pass: 184, fail: 0 }), false);
  assert.equal(suitePassed(0, { tests: 184, pass: 183, fail: 1 }), false);
  assert.equal(suitePassed(0, { tests: undefined, pass: undefined, fail: undefined }), false, "typecheck 失败时没有测试汇总");
  assert.equal(suitePassed(0, { tests: 0, pass: 0, fail: 0 }), false, "一项测试都没跑不算通过");
});

test("不做变异的线：被跳过的恰好是每章一项才算通过，多一项少一项都不行；做变异的线一项也不许跳过", () => {
  assert.deepEqual(summaryCounts("# tests 10\n# pass 8\n# fail 0\n# cancelled 0\n# skipped 2\n").skipped, 2);
  assert.equal(suitePassed(0, { tests: 184, pass: 172, fail: 0, skipped: 12 }, 12), true);
  assert.equal(suitePassed(0, { tests: 184, pass: 171, fail: 0, skipped: 13 }, 12), false);
  assert.equal(suitePassed(0, { tests: 184, pass: 173, fail: 0, skipped: 11 }, 12), false);
  assert.equal(suitePassed(0, { tests: 184, pass: 183, fail: 0, skipped: 1 }), false);
});

test("钉死的版本：每条线一个确切版本和 sha512 完整性哈希，版本属于那条线", () => {
  for (const pin of LINES) {
    assert.match(pin.version, /^\d+\.\d+\.\d+$/);
    assert.equal(pin.version.split(".")[0], pin.line);
    assert.match(pin.integrity, /^sha512-[A-Za-z0-9+/]{86}==$/);
  }
});

test("按名字启动的 node（npm、测试里的 npm 命令都用它）与正在运行测试的是同一个版本，自检不会悄悄换成别的 Node", () => {
  const onPath = spawnSync("node", ["--version"], { encoding: "utf8" });
  assert.equal(onPath.status, 0, onPath.stderr);
  assert.equal(onPath.stdout.trim(), process.version, "用 PATH 最前面的 node 运行 npm test（CI 由 scripts/ci/node-lines.ts 设置 PATH）");
});

test("第一条线以外要跳过的项：每章一项变异，加上接续链的每一章；只有 elsewhere 才算", () => {
  const chapters = loadChapters(LESSONS_DIR);
  const chain = continueChain(chapters);
  assert.ok(chain.length > 0 && chain[0] === "03", "接续链从第 03 章开始");
  assert.equal(firstLineOnlySkips(chapters), chapters.length + chain.length);
  assert.equal(firstLineElsewhere({ [FIRST_LINE_ENV]: FIRST_LINE_ELSEWHERE }), true);
  assert.equal(firstLineElsewhere({}), false);
  assert.equal(firstLineElsewhere({ [FIRST_LINE_ENV]: "" }), false);
  assert.equal(elsewhereSkip("变异", { [FIRST_LINE_ENV]: FIRST_LINE_ELSEWHERE }), `变异已在另一条 Node 版本线上检验（${FIRST_LINE_ENV}=${FIRST_LINE_ELSEWHERE}）`);
  assert.equal(elsewhereSkip("变异", {}), undefined);
});
