/**
 * 第 16 章的留出任务：只在课程套件的 npm test 里、在第 16 章的目标上运行，从不进练习目录。
 * 与可见的 script-two-tools 考同一条规则（脚本里的调用走与模型的调用同一条路，只记在 codemode 结果的 details 里），
 * 但换了工具：脚本先调用从没声明给模型的 deferred 工具 ls，再逐个 read，交回一个 JSON 对象。
 */

import { answerIncludes, scriptCalled, sessionCount, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { say, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_CODEMODE_TASKS: EvalTask[] = [
  {
    id: "heldout-script-deferred",
    title: "脚本调用没声明过的 ls，再读出每个文件的行数",
    files: { "notes/a.md": "one\ntwo\n", "notes/b.md": "three\n" },
    prompts: ["notes 里每个文件各有几行？"],
    turns: [
      use([
        "s-31",
        "codemode",
        {
          code: [
            'const names = (await tools.ls({ path: "notes" })).split("\\n").filter((name) => name !== "");',
            "const counts = {};",
            'for (const name of names) counts[name] = (await tools.read({ path: "notes/" + name })).split("\\n").filter((line) => line !== "").length;',
            "return counts;",
          ].join("\n"),
        },
      ]),
      say("a.md 有 2 行，b.md 有 1 行。"),
    ],
    checks: [scriptCalled("ls", "read", "read"), toolErrors(0), toolCallsPaired(), sessionCount("toolResult", 1), answerIncludes("b.md 有 1 行")],
  },
];
