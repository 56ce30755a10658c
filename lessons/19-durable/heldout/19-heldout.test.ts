import assert from "node:assert/strict";
import test from "node:test";

import { formatEvalTable } from "../../src/eval/report.js";
import { runEvalTask } from "../../src/eval/run.js";
import { VISIBLE_TASKS } from "../../src/eval/tasks.js";
import { HELD_OUT_DURABLE_TASKS } from "./heldout-durable.js";

// 第 19 章的留出任务：每个任务一项测试，跑的是真正的持久会话与真正的工具。
for (const task of HELD_OUT_DURABLE_TASKS) {
  test(`留出任务 ${task.id}：${task.title}`, { timeout: 10_000 }, async () => {
    assert.ok(!VISIBLE_TASKS.some((visible) => visible.id === task.id), "留出任务不能与可见任务同名");
    const report = await runEvalTask(task);
    assert.ok(report.ok, formatEvalTable([report]));
  });
}
