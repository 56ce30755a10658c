import assert from "node:assert/strict";
import test from "node:test";

import { formatEvalTable } from "../../src/eval/report.js";
import { runEvalTask } from "../../src/eval/run.js";
import { VISIBLE_TASKS } from "../../src/eval/tasks.js";
import { HELD_OUT_TASKS } from "./heldout-tasks.js";

// 留出任务：与可见任务考同样的规则，换掉了文件名、调用 id、结果次序与分支。每个任务一项测试。
for (const task of HELD_OUT_TASKS) {
  test(`留出任务 ${task.id}：${task.title}`, { timeout: 10_000 }, async () => {
    assert.ok(!VISIBLE_TASKS.some((visible) => visible.id === task.id), "留出任务不能与可见任务同名");
    const report = await runEvalTask(task);
    assert.ok(report.ok, formatEvalTable([report]));
  });
}
