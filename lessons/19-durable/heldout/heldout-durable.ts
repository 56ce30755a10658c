/**
 * 第 19 章的留出任务：只在课程套件的 npm test 里、在第 19 章的目标上运行，从不进练习目录。
 * 与可见的 durable-crash-in-read 考同一条规则（重新打开时没有结果的调用怎样收场），
 * 但换成了不能重跑的那一边：bash 往账本里追加了一行之后进程死掉；重新打开时它不能再跑一次，
 * 模型读到 interrupted，账本里仍然只有一行。
 */

import { answerIncludes, fileEquals, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { recoveredAs } from "../../src/eval/durable.js";
import { say, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_DURABLE_TASKS: EvalTask[] = [
  {
    id: "heldout-durable-crash-in-bash",
    title: "bash 记完一笔账之后进程死掉，重新打开：不再跑第二次，模型读到 interrupted",
    files: { "ledger.txt": "" },
    prompts: ["给 ledger.txt 记一笔：paid 5"],
    turns: [use(["pay-1", "bash", { command: "echo 'paid 5' >> ledger.txt" }]), say("这一笔可能已经记过了，请先核对 ledger.txt，再决定要不要重记。")],
    durable: { crashIn: "bash", safeTools: ["read"] },
    checks: [recoveredAs("bash", "interrupted"), fileEquals("ledger.txt", "paid 5\n"), toolCallsPaired(), toolErrors(1), answerIncludes("核对")],
  },
];
