/**
 * 第 14 章的留出任务：只在课程套件的 npm test 里、在第 14 章的目标上运行，从不进练习目录。
 * 它们和可见任务考的是同一组规则，但换掉了可以被“照着写死”的一切：
 * 文件名与目录、调用 id 的写法、一轮里结果完成的先后、被离开的分支、失败的工具。
 */

import { answerIncludes, fileEquals, neverSent, sentAsUser, sessionCount, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { say, TIGHT_BUDGET, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_TASKS: EvalTask[] = [
  {
    id: "heldout-readme-elsewhere",
    title: "项目名在另一个文件里",
    files: { "docs/LIESMICH.md": "# Polaris\n\nEin kleines Werkzeug.\n", "README.md": "# 不是这个\n" },
    prompts: ["请读取 docs/LIESMICH.md，然后告诉我项目名"],
    turns: [use(["c_ff01", "read", { path: "docs/LIESMICH.md" }]), say("项目名是 Polaris。")],
    checks: [toolCallsPaired(), toolErrors(0), sentAsUser(1, "LIESMICH"), answerIncludes("Polaris")],
  },
  {
    id: "heldout-out-of-order",
    title: "一轮三个调用，完成的先后与请求的次序不同，其中一个失败",
    files: { "lib/.keep": "" },
    prompts: ["同时做三件事：生成 lib/slow.txt、写 lib/fast.txt、读 missing/NOTE.md"],
    turns: [
      use(
        ["zz-9", "bash", { command: "sleep 0.05; printf 慢 > lib/slow.txt" }],
        ["aa-1", "write", { path: "lib/fast.txt", content: "快" }],
        ["mm-5", "read", { path: "missing/NOTE.md" }],
      ),
      say("前两件做完了；missing/NOTE.md 不存在。"),
    ],
    checks: [fileEquals("lib/slow.txt", "慢"), fileEquals("lib/fast.txt", "快"), toolCallsPaired(), toolErrors(1), sessionCount("toolResult", 3)],
  },
  {
    id: "heldout-branch-leak",
    title: "同一个调用 id 出现在两条分支上，被离开的那支不漏进请求",
    files: {},
    prompts: ["给发布说明起个标题，写进 RELEASE.txt", "/branch 发布说明", "给发布说明起个更短的标题，写进 RELEASE.txt"],
    turns: [
      use(["toolu_01A", "write", { path: "RELEASE.txt", content: "Vega-β 正式版\n" }]),
      say("标题是 Vega-β 正式版。"),
      use(["toolu_01A", "write", { path: "RELEASE.txt", content: "Lyra\n" }]),
      say("新标题是 Lyra。"),
    ],
    checks: [fileEquals("RELEASE.txt", "Lyra\n"), neverSent("Vega-β", 3), sessionCount("user", 2), toolCallsPaired()],
  },
  {
    id: "heldout-compact-after-failure",
    title: "私密命令、失败的编辑、压缩，之后接着确认",
    files: { "src/app.py": "DEBUG = True\n", ".secrets/token": "ghp_heldout_9931\n" },
    prompts: ["!!cat .secrets/token", "看看 src/app.py", "关掉调试", "/compact", "确认一下改好了"],
    turns: [
      use(["fn-a", "read", { path: "src/app.py" }]),
      say("DEBUG 现在是 True。"),
      use(["fn-b", "edit", { path: "src/app.py", edits: [{ oldText: "DEBUG = true", newText: "DEBUG = False" }] }]),
      use(["fn-c", "edit", { path: "src/app.py", edits: [{ oldText: "DEBUG = True", newText: "DEBUG = False" }] }]),
      say("关掉了。"),
      say("## 目标\n关闭调试（交接-Q9）"),
      use(["fn-d", "read", { path: "src/app.py" }]),
      say("确认：DEBUG = False。"),
    ],
    compaction: TIGHT_BUDGET,
    checks: [
      fileEquals("src/app.py", "DEBUG = False\n"),
      toolErrors(1),
      toolCallsPaired(),
      sessionCount("compaction", 1),
      sentAsUser(7, "交接-Q9"),
      neverSent("ghp_heldout_9931"),
      sessionCount("bashExecution", 1),
    ],
  },
];
