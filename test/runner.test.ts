import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { failureMentions, runTests } from "../scripts/engine/runner.ts";
import { deviationLines } from "../scripts/engine/screen.ts";
import { tempDir } from "./helpers.ts";

const work = tempDir("runner");
after(() => work.remove());

const plain = (_style: unknown, text: string) => text;

test("assert.match 失败：期望显示正则本身（不是 “{}”），watch 与 verify 的偏差行都用它", async () => {
  const file = path.join(work.dir, "regex.test.mjs");
  writeFileSync(
    file,
    [
      'import assert from "node:assert/strict";',
      'import { test } from "node:test";',
      'test("不匹配", () => assert.match("工具结果缺失", /^没有收到 \\d+ 个结果$/u));',
      'test("嵌套", () => assert.deepEqual({ pattern: /a+/g, missing: undefined, size: 1n }, { pattern: /b/, missing: null, size: 2n }));',
    ].join("\n"),
  );
  const report = await runTests([file]);
  const [match, nested] = report.tests;
  assert.ok(match && nested);
  assert.ok(match.expected instanceof RegExp, `expected 应当还原成正则，收到 ${JSON.stringify(match.expected)}`);
  assert.equal(String(match.expected), "/^没有收到 \\d+ 个结果$/u");
  assert.equal(match.actual, "工具结果缺失");
  assert.ok(failureMentions(match, "没有收到 \\d+ 个结果"), "按片段查找失败信息时也看得到模式");

  const lines = deviationLines({ kind: "test", test: match, chapter: { id: "03" } as never }, { kitRoot: "/kit", dir: work.dir }, plain);
  assert.ok(lines.includes("  期望：/^没有收到 \\d+ 个结果$/u"), lines.join("\n"));
  assert.ok(lines.includes("  实际：'工具结果缺失'"), lines.join("\n"));
  assert.ok(!lines.some((line) => line.includes("{}")), lines.join("\n"));

  assert.deepEqual(nested.actual, { pattern: /a+/g, missing: undefined, size: 1n });
  assert.deepEqual(nested.expected, { pattern: /b/, missing: null, size: 2n });
});
