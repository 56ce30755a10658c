/**
 * 第 17 章的留出任务：只在课程套件的 npm test 里、在第 17 章的目标上运行，从不进练习目录。
 * 与可见的 mcp-read 考同一条规则（MCP 服务器的工具以 mcp__<服务器>__<工具> 进注册表，默认 deferred，
 * 先由 tool_search 找到、下一次请求才声明，结果来自真正的服务器），但换了工具、目录和调用 id。
 */

import { declaredFrom, mcpResult, toolCallsPaired, toolErrors } from "../../src/eval/checks.js";
import { filesystemMcpConfig, say, use } from "../../src/eval/tasks.js";
import type { EvalTask } from "../../src/eval/types.js";

export const HELD_OUT_MCP_TASKS: EvalTask[] = [
  {
    id: "heldout-mcp-list",
    title: "用 MCP 服务器列出一个子目录",
    files: { "docs/guide.md": "# 指南\n", "docs/faq.md": "# 问答\n", "src/app.ts": "export {};\n" },
    agentFiles: { "mcp.json": filesystemMcpConfig() },
    prompts: ["用 MCP 服务器看看 docs 目录里有哪些文件"],
    turns: [
      use(["m-71", "tool_search", { query: "get a detailed listing of all files and directories in a specified path" }]),
      use(["m-72", "mcp__fs__list_directory", { path: "docs" }]),
      say("docs 里有 faq.md 和 guide.md。"),
    ],
    checks: [declaredFrom(2, "mcp__fs__list_directory"), mcpResult("mcp__fs__list_directory", "[FILE] guide.md"), toolErrors(0), toolCallsPaired()],
  },
];
