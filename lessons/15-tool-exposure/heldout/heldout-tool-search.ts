/**
 * 第 15 章的留出任务：只在课程套件的 npm test 里、在第 15 章的目标上运行，从不进练习目录。
 * 与可见的 search-then-ls 考同一条规则（deferred 工具找到之后从下一次请求起才声明），
 * 但换掉了查询的说法、目录、调用 id，以及“同一批里先调用”这一步：这里模型老老实实先找再用。
 */

import { answerIncludes, declaredFrom, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { say, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_SEARCH_TASKS: EvalTask[] = [
  {
    id: "heldout-search-folder",
    title: "换一种说法找到 ls，下一轮再列另一个目录",
    files: { "docs/guide/intro.md": "# Intro\n", "docs/guide/faq.md": "# FAQ\n" },
    prompts: ["docs/guide 里都有什么？"],
    turns: [
      use(["q-7f", "tool_search", { query: "show what is inside a folder" }]),
      use(["q-80", "ls", { path: "docs/guide" }]),
      say("docs/guide 里有 faq.md 和 intro.md。"),
    ],
    checks: [declaredFrom(2, "ls"), toolErrors(0), toolCallsPaired(), answerIncludes("faq.md")],
  },
];
