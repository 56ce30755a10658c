/**
 * 可见任务：`npm run eval` 跑的就是它们。每个任务都是一段完整的真实使用——
 * 一个工作区、用户说的话、模型的回答（脚本），以及跑完之后用证据核对的几项检查。
 * 课程另有几个留出任务不在这里：它们换了文件名、调用 id、结果次序，专门抓“照着可见任务写死”的实现。
 */

import { createRequire } from "node:module";
import path from "node:path";

import type { CompactionSettings } from "../compaction.js";
import type { ReplyTurn } from "../scripted-model.js";
import {
  answerIncludes,
  declaredFrom,
  fileEquals,
  fileIncludes,
  mcpResult,
  neverSent,
  scriptCalled,
  sentAsUser,
  sessionCount,
  toolCallsPaired,
  toolErrors,
} from "./checks.js";
import { DURABLE_TASKS } from "./durable.js";
import { ROUTING_TASKS } from "./routing.js";
import type { EvalTask } from "./types.js";

// ── 写脚本的两个帮手 ────────────────────────────────────────────

/** 模型这一轮只说话，说完就停。 */
export function say(words: string): ReplyTurn {
  return { kind: "reply", content: [{ type: "text", text: words }], stopReason: "stop" };
}

/** 模型这一轮请求一个或几个工具，按写下的顺序。 */
export function use(...calls: [id: string, name: string, args: Record<string, unknown>][]): ReplyTurn {
  return { kind: "reply", content: calls.map(([id, name, args]) => ({ type: "toolCall", id, name, arguments: args })), stopReason: "toolUse" };
}

/**
 * 第 17 章：一份让 tiny-pi 启动官方 server-filesystem 的 mcp.json（服务器名 fs，允许的目录是工作区）。
 * 程序从套件的 node_modules 里找（它是套件的开发依赖），不联网、不经过 npx。
 */
export function filesystemMcpConfig(): string {
  const require = createRequire(import.meta.url);
  let bin = "@modelcontextprotocol/server-filesystem";
  try {
    const manifest = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
    const entry = Object.values((require(manifest) as { bin: Record<string, string> }).bin)[0];
    if (entry !== undefined) bin = path.join(path.dirname(manifest), entry);
  } catch {
    // 没装：服务器起不来，任务报告里会写明
  }
  return `${JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [bin, "."] } } }, null, 2)}\n`;
}

/** 让 `/compact` 真的有东西可压：只保留最近的一段交互。 */
export const TIGHT_BUDGET: CompactionSettings = { contextWindow: 1_000_000, reserveTokens: 0, safetyMargin: 0, keepRecentTokens: 1 };

// ── 任务 ────────────────────────────────────────────────────────

export const VISIBLE_TASKS: EvalTask[] = [
  {
    id: "readme-name",
    title: "读 README，说出项目名",
    files: { "README.md": "# 星图\n\n一个画星座的小工具。\n" },
    prompts: ["请读取 README，然后告诉我项目名"],
    turns: [use(["call-1", "read", { path: "README.md" }]), say("项目名是 星图。")],
    checks: [toolCallsPaired(), toolErrors(0), sentAsUser(1, "请读取 README"), answerIncludes("星图")],
  },
  {
    id: "write-file",
    title: "新建一个文件",
    files: {},
    prompts: ["新建 hello.txt，内容是“你好”"],
    turns: [use(["call-1", "write", { path: "hello.txt", content: "你好\n" }]), say("写好了 hello.txt。")],
    checks: [fileEquals("hello.txt", "你好\n"), toolCallsPaired(), sessionCount("toolResult", 1)],
  },
  {
    id: "edit-config",
    title: "改配置里的一个值",
    files: { "config.json": '{\n  "port": 3000,\n  "host": "localhost"\n}\n' },
    prompts: ["把端口改成 8080"],
    turns: [
      use(["call-1", "read", { path: "config.json" }]),
      use(["call-2", "edit", { path: "config.json", edits: [{ oldText: '"port": 3000', newText: '"port": 8080' }] }]),
      say("端口改成 8080 了。"),
    ],
    checks: [fileEquals("config.json", '{\n  "port": 8080,\n  "host": "localhost"\n}\n'), toolCallsPaired(), toolErrors(0)],
  },
  {
    id: "bash-build",
    title: "用 bash 生成文件",
    files: { "src/a.txt": "alpha\n", "src/b.txt": "beta\n" },
    prompts: ["把 src 下的文件合并成 dist/all.txt"],
    turns: [use(["call-1", "bash", { command: "mkdir -p dist && cat src/a.txt src/b.txt > dist/all.txt" }]), say("合并好了。")],
    checks: [fileEquals("dist/all.txt", "alpha\nbeta\n"), toolCallsPaired(), toolErrors(0)],
  },
  {
    id: "two-reads",
    title: "一轮读两个文件，再写结果",
    files: { "first.txt": "上半句，", "second.txt": "下半句。" },
    prompts: ["把 first.txt 和 second.txt 拼成 joined.txt"],
    turns: [
      use(["call-1", "read", { path: "first.txt" }], ["call-2", "read", { path: "second.txt" }]),
      use(["call-3", "write", { path: "joined.txt", content: "上半句，下半句。" }]),
      say("拼好了。"),
    ],
    checks: [fileEquals("joined.txt", "上半句，下半句。"), toolCallsPaired(), sessionCount("toolResult", 3)],
  },
  {
    id: "user-command",
    title: "用户的 !cmd 进入上下文",
    files: { "VERSION": "1.4.2\n" },
    prompts: ["!cat VERSION", "刚才那条命令输出了什么？"],
    turns: [say("输出是 1.4.2。")],
    checks: [sessionCount("bashExecution", 1), sentAsUser(1, "1.4.2"), answerIncludes("1.4.2")],
  },
  {
    id: "private-command",
    title: "用户的 !!cmd 不进请求",
    files: { ".env": "API_TOKEN=tok-visible-42\n" },
    prompts: ["!!cat .env", "照着 .env 的键写一个 .env.example，值留空"],
    turns: [use(["call-1", "write", { path: ".env.example", content: "API_TOKEN=\n" }]), say("写好了 .env.example。")],
    checks: [fileEquals(".env.example", "API_TOKEN=\n"), sessionCount("bashExecution", 1), neverSent("tok-visible-42")],
  },
  {
    id: "compact-then-continue",
    title: "压缩之后接着干活",
    files: { "notes.md": "登录页的按钮在手机上点不到。\n" },
    prompts: ["读一下 notes.md", "用一句话说要修什么", "/compact", "把要修的事写进 TODO.md"],
    turns: [
      use(["call-1", "read", { path: "notes.md" }]),
      say("笔记说登录页的按钮在手机上点不到。"),
      say("要修手机上登录按钮点不到的问题。"),
      say("## 目标\n修登录按钮（摘要-7f3）\n## 进展\n读过 notes.md"),
      use(["call-2", "write", { path: "TODO.md", content: "- 修手机上的登录按钮\n" }]),
      say("写进 TODO.md 了。"),
    ],
    compaction: TIGHT_BUDGET,
    checks: [sessionCount("compaction", 1), sentAsUser(5, "摘要-7f3"), fileEquals("TODO.md", "- 修手机上的登录按钮\n"), toolCallsPaired()],
  },
  {
    id: "branch-retry",
    title: "回到分支点重来",
    files: {},
    prompts: ["把代号 Apollo 写进 name.txt", "/branch Apollo", "把代号 Hermes 写进 name.txt"],
    turns: [
      use(["call-1", "write", { path: "name.txt", content: "Apollo\n" }]),
      say("写了 Apollo。"),
      use(["call-2", "write", { path: "name.txt", content: "Hermes\n" }]),
      say("写了 Hermes。"),
    ],
    checks: [fileEquals("name.txt", "Hermes\n"), neverSent("Apollo", 3), sessionCount("user", 2), toolCallsPaired()],
  },
  {
    id: "extension-guard",
    title: "项目里的扩展拦下一条危险命令",
    files: {
      "build/app.js": "console.log(\"hi\");\n",
      // 第 12 章的扩展：工作区里的一个模块，createRuntime 负责把它接上。
      ".pi/extensions/guard.mjs":
        "export default function guard(pi) {\n" +
        "  pi.on(\"tool_call\", (event) => {\n" +
        "    const command = String(event.input?.command ?? \"\");\n" +
        "    if (event.toolName === \"bash\" && /\\brm\\b/.test(command)) return { block: true, reason: \"guard：这个项目不许删文件\" };\n" +
        "  });\n" +
        "}\n",
    },
    prompts: ["把 build 目录删掉"],
    turns: [use(["call-1", "bash", { command: "rm -rf build" }]), say("删除被项目的扩展拦下了。")],
    checks: [fileIncludes("build/app.js", "console.log"), toolErrors(1), toolCallsPaired()],
  },
  {
    id: "tool-fails",
    title: "工具失败之后换个办法",
    files: { "docs/setup.md": "先运行 npm ci。\n" },
    prompts: ["读一下安装说明"],
    turns: [
      use(["call-1", "read", { path: "SETUP.md" }]),
      use(["call-2", "read", { path: "docs/setup.md" }]),
      say("安装说明：先运行 npm ci。"),
    ],
    checks: [toolErrors(1), toolCallsPaired(), fileIncludes("docs/setup.md", "npm ci"), answerIncludes("npm ci")],
  },
  {
    id: "search-then-ls",
    title: "先用 tool_search 找到 ls，再列目录",
    files: { "src/main.ts": "export {};\n", "src/util.ts": "export {};\n" },
    prompts: ["src 目录里有哪些文件？"],
    turns: [
      // 第 15 章：ls 是 deferred 工具，第一次请求里没有它；同一批里直接调用会被拒，下一次请求才声明。
      use(["call-1", "tool_search", { query: "list the entries of a directory" }], ["call-2", "ls", { path: "src" }]),
      use(["call-3", "ls", { path: "src" }]),
      say("src 里有 main.ts 和 util.ts。"),
    ],
    checks: [declaredFrom(2, "ls"), toolErrors(1), toolCallsPaired(), answerIncludes("util.ts")],
  },
  {
    id: "script-two-tools",
    title: "一段 codemode 脚本调用两个工具，交回 JSON",
    files: { "package.json": '{ "name": "orbit", "version": "1.4.0" }\n', "CHANGELOG.md": "# 1.4.0\n\n- 加上了轨道图。\n" },
    prompts: ["用一段脚本查出包名、版本和最新的更新说明"],
    turns: [
      // 第 16 章：脚本里的 read 与 bash 走与模型的调用同一条路；它们只出现在 codemode 结果的 details 里。
      use([
        "call-1",
        "codemode",
        {
          code: [
            'const pkg = JSON.parse(await tools.read({ path: "package.json" }));',
            'const log = await tools.bash({ command: "head -n 1 CHANGELOG.md" });',
            "return { name: pkg.name, version: pkg.version, latest: log.trim() };",
          ].join("\n"),
        },
      ]),
      say("orbit 1.4.0，最新的更新说明是 # 1.4.0。"),
    ],
    checks: [scriptCalled("read", "bash"), toolErrors(0), toolCallsPaired(), sessionCount("toolResult", 1), answerIncludes("orbit 1.4.0")],
  },
  {
    id: "mcp-read",
    title: "用 MCP 服务器的工具读一个文件",
    files: { "notes.txt": "发布日期：3 月 14 日\n负责人：小周\n" },
    agentFiles: { "mcp.json": filesystemMcpConfig() },
    prompts: ["用 MCP 服务器读 notes.txt，告诉我发布日期"],
    turns: [
      // 第 17 章：真正的 server-filesystem；它的工具是 deferred，先由 tool_search 找到，下一次请求才声明。
      use(["call-1", "tool_search", { query: "read the complete contents of a text file" }]),
      use(["call-2", "mcp__fs__read_text_file", { path: "notes.txt" }]),
      say("发布日期是 3 月 14 日。"),
    ],
    checks: [declaredFrom(2, "mcp__fs__read_text_file"), mcpResult("mcp__fs__read_text_file", "发布日期：3 月 14 日"), toolErrors(0), toolCallsPaired()],
  },
  // 第 18 章：经过模型目录的任务。
  ...ROUTING_TASKS,
  // 第 19 章：持久会话，中途死掉一次再续上。
  ...DURABLE_TASKS,
];
