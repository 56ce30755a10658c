/**
 * 第 18 章的留出任务：只在课程套件的 npm test 里、在第 18 章的目标上运行，从不进练习目录。
 * 与可见的 fallback-after-503 考同一条规则（可重试的失败换备选重试一次，尝试记进会话），
 * 但换了状态与形状：主模型回 502，模型先写一个文件、再读回来，三次请求每一次都要换到备选。
 */

import { answerIncludes, fileEquals, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { routeRetried } from "../../src/eval/routing.js";
import { say, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_ROUTING_TASKS: EvalTask[] = [
  {
    id: "heldout-fallback-after-502",
    title: "主模型回 502，三次请求都换到备选：写一个文件、读回来、回答",
    files: {},
    prompts: ["新建 todo.txt 写上“买牛奶”，再读出来给我看"],
    turns: [
      use(["w-7", "write", { path: "todo.txt", content: "买牛奶\n" }]),
      use(["r-8", "read", { path: "todo.txt" }]),
      say("todo.txt 里写着：买牛奶。"),
    ],
    routing: { failWith: 502 },
    checks: [routeRetried(502, 3), fileEquals("todo.txt", "买牛奶\n"), toolCallsPaired(), toolErrors(0), answerIncludes("买牛奶")],
  },
];
