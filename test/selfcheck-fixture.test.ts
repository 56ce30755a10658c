import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { cloneKit, runScript, tempDir } from "./helpers.ts";

const work = tempDir("fixture");
after(() => work.remove());

/**
 * 自检本身也要被证明：在一份临时克隆里弄坏第 02 章的承诺，
 * `npm run course -- check` 必须以非零状态退出，并点名章节和承诺。
 */
test("弄坏一章的声明后，课程自检大声失败并点名章节与承诺", { timeout: 120_000 }, async () => {
  const kit = await cloneKit(work.dir);
  const metaPath = path.join(kit, "lessons", "02-event-stream", "chapter.json");
  const meta = JSON.parse(readFileSync(metaPath, "utf8")) as {
    focusedTest: { count: number };
    fault: { includes: string[] };
  };
  meta.focusedTest.count += 1;
  meta.fault.includes = ["这段文字不会出现在任何失败信息里"];
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);

  const result = await runScript("course", ["check", "02"], { kit, cwd: kit });
  assert.equal(result.code, 1, result.stdout + result.stderr);
  assert.match(result.stdout, /✗ 第 02 章 · 承诺 3 目标构建干净、聚焦测试与每个实践的计数准确/);
  assert.match(result.stdout, /聚焦测试应为 7\/7，实际 6\/6/);
  assert.match(result.stdout, /✗ 第 02 章 · 承诺 5 故障实验让指定测试按声明失败/);
  assert.match(result.stdout, /✓ 第 02 章 · 承诺 2 练习目录因声明的原因变红/);
  assert.match(result.stderr, /课程自检发现 2 条承诺被打破/);
});

test("练习目录的红灯换了原因（多出一条 tsc 错误）也会被抓住", { timeout: 120_000 }, async () => {
  const kit = await cloneKit(work.dir, "red");
  const metaPath = path.join(kit, "lessons", "03-message-ir", "chapter.json");
  const meta = JSON.parse(readFileSync(metaPath, "utf8")) as { firstRed: { errors: unknown[] } };
  meta.firstRed.errors = meta.firstRed.errors.slice(0, 1);
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);

  const result = await runScript("course", ["check", "03"], { kit, cwd: kit });
  assert.equal(result.code, 1);
  assert.match(result.stdout, /✗ 第 03 章 · 承诺 2 练习目录因声明的原因变红/);
  assert.match(result.stdout, /多出未声明的 tsc 错误 TS2307/);
});
