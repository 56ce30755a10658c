import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { runAgentLoop, type AgentEvent } from "../packages/pi-course/src/agent-loop.js";
import { AgentSession } from "../packages/pi-course/src/agent-session.js";
import { codingTools } from "../packages/pi-course/src/coding-tools.js";
import { availableTokens, estimateContext, type CompactionSettings } from "../packages/pi-course/src/compaction.js";
import { COMPACTION_SUMMARY_PREFIX, convertToLlm } from "../packages/pi-course/src/messages.js";
import { modelFromEnv } from "../packages/pi-course/src/openai-compatible.js";
import { ScriptedModel, type ScriptedTurn } from "../packages/pi-course/src/scripted-model.js";
import { JsonlSessionStore } from "../packages/pi-course/src/session-store.js";
import { SessionTree } from "../packages/pi-course/src/session-tree.js";
import { ToolRegistry } from "../packages/pi-course/src/tools.js";
import { text, textOf, userMessage, type AgentMessage, type Message, type Model } from "../packages/pi-course/src/types.js";
import { Workspace } from "../packages/pi-course/src/workspace.js";
import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { CourseError, usageError } from "./engine/errors.js";

const HELP = `用法：npm run demo -- [--workspace 目录] [任务]

用课程最终的迷你 pi 跑一次 README 任务，并逐条打印事件流。
默认使用脚本模型（离线、无需 API key）和一个只含 README.md 的临时工作区；
离线时接着演示一段会话：第一次提问、一条用户命令、关掉会话再从 JSONL 文件恢复、
第二次提问之前上下文超出预算，先请模型写摘要压缩。
脚本模型只会回放 README 任务的两轮固定回答，所以离线时不接受 [任务] 和 --workspace。

设置 PI_COURSE_BASE_URL（以及 PI_COURSE_MODEL、可选的 PI_COURSE_API_KEY）后，
改为连接这个 OpenAI 兼容的端点；这时可以给出自己的任务和工作区：

  --workspace 目录   让工具在这个目录里工作（默认：临时目录；需要真实端点）
  --help             显示本说明`;

const README_TASK = "请读取 README，然后告诉我项目名。";
const SYSTEM_PROMPT = "你是 pi，一个小巧的编码助手。回答前先读取相关文件。";

/** 离线演示用的两次模型调用：先请求 read，再根据结果回答。 */
const README_TURNS: ScriptedTurn[] = [
  {
    kind: "reply",
    content: [text("我先读取项目说明。"), { type: "toolCall", id: "call_1", name: "read", arguments: { path: "README.md" } }],
    stopReason: "toolUse",
    usage: { input: 18, output: 12, totalTokens: 30 },
  },
  {
    kind: "reply",
    content: [text("项目名是 tiny-pi：README 的标题写着 # tiny-pi。")],
    stopReason: "stop",
    usage: { input: 44, output: 16, totalTokens: 60 },
  },
];

function scriptedReadmeModel(): ScriptedModel {
  return new ScriptedModel(README_TURNS);
}

// ── 离线的会话演示：两次提问，中间从 JSONL 恢复，第二问之前先压缩 ─────

const SECOND_TASK = "它是做什么的？";
const USER_COMMAND = "!wc -l README.md";

/** 离线会话用的四次模型调用：README 往返的两次，写摘要的一次，回答第二问的一次。 */
function scriptedSessionModel(): ScriptedModel {
  return new ScriptedModel([
    ...README_TURNS,
    {
      kind: "reply",
      content: [text("## 目标\n说出项目名与用途\n## 进展\n### 已完成\n- 读过 README.md：项目名是 tiny-pi\n## 下一步\n1. 回答用户的下一个问题")],
      stopReason: "stop",
    },
    { kind: "reply", content: [text("README 第二行写着：A small agent runtime，一个小巧的 Agent 运行时。")], stopReason: "stop" },
  ]);
}

/**
 * 窗口故意开得很小：system（含四个工具的声明）约 370 个 token，第一段交互再加 30 多个，
 * 用户命令再加十几个，第二问之前就超出可用量，于是先压缩。
 */
const DEMO_BUDGET: CompactionSettings = { contextWindow: 480, reserveTokens: 48, safetyMargin: 24, keepRecentTokens: 16 };

await runCommandLine(HELP, { workspace: { type: "string" } }, async ({ values, positionals }) => {
  const task = positionals.join(" ").trim() || README_TASK;
  let endpoint: Model | undefined;
  try {
    endpoint = modelFromEnv();
  } catch (error) {
    throw usageError("DEMO_ENV", (error as Error).message);
  }
  if (!endpoint && (task !== README_TASK || values.workspace !== undefined)) {
    const what = task !== README_TASK ? "自定义任务" : "--workspace";
    throw usageError(
      "DEMO_OFFLINE_FIXED",
      `离线的脚本模型只会回放 README 任务，不能用${what}（它照样会回答 tiny-pi）；要让真实模型做你的任务，先设置 PI_COURSE_BASE_URL 和 PI_COURSE_MODEL（可选 PI_COURSE_API_KEY）指向一个 OpenAI 兼容端点`,
    );
  }
  const model: Model = endpoint ?? scriptedReadmeModel();

  const scratch = values.workspace === undefined ? mkdtempSync(path.join(os.tmpdir(), "pi-course-demo-")) : undefined;
  try {
    const dir = scratch ?? path.resolve(userCwd(), values.workspace ?? ".");
    if (scratch) writeFileSync(path.join(scratch, "README.md"), "# tiny-pi\nA small agent runtime.\n");
    const workspace = await Workspace.open(dir).catch(() => {
      throw usageError("DEMO_WORKSPACE", `工作区 ${dir} 不存在或无法访问`);
    });
    console.log(paint("bold", `模型：${model.provider}/${model.id}    工作区：${workspace.root}`));
    console.log(`任务：${task}\n`);

    const messages: AgentMessage[] = [
      { role: "system", content: SYSTEM_PROMPT, timestamp: Date.now() },
      userMessage(task),
    ];
    const result = await runAgentLoop({
      model,
      messages,
      tools: new ToolRegistry(codingTools(workspace)),
      onEvent: printEvent,
    });
    const answer = [...result.messages].reverse().find((message) => message.role === "assistant");
    console.log("");
    if (result.reason !== "stop") {
      const fix = endpoint ? `；${endpointFix(result.errorMessage)}` : "";
      throw new CourseError("DEMO_FAILED", `智能体没有正常结束（${result.reason}）：${result.errorMessage ?? "没有更多说明"}${fix}`);
    }
    console.log(paint("green", `回答：${answer ? textOf(answer) : ""}`));
    if (!endpoint) await sessionDemo(workspace);
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
});

/** 请求里的一条消息是什么：摘要和用户命令到了模型那里都只是 user，靠开头的那段话才分得出来。 */
function describeForModel(message: Message): string {
  if (message.role !== "user") return message.role;
  const body = textOf(message);
  if (body.startsWith(COMPACTION_SUMMARY_PREFIX)) return "user（压缩摘要）";
  if (body.startsWith("用户在终端里运行了")) return "user（用户命令的输出）";
  return "user（提问）";
}

function roleList(messages: readonly (AgentMessage | Message)[]): string {
  return messages.map((message) => message.role).join(" → ");
}

async function sessionDemo(workspace: Workspace): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pi-course-session-"));
  const file = path.join(dir, "session.jsonl");
  const model = scriptedSessionModel();
  const open = async () =>
    new AgentSession({
      tree: await SessionTree.open(new JsonlSessionStore(file)),
      model,
      systemPrompt: SYSTEM_PROMPT,
      tools: codingTools(workspace),
      workspace,
      compaction: DEMO_BUDGET,
    });
  const lines = () => readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { type: string });
  const lastAnswer = (session: AgentSession) => {
    const last = [...session.messages].reverse().find((message) => message.role === "assistant");
    return last?.role === "assistant" ? textOf(last) : "";
  };
  try {
    console.log(paint("bold", "\n会话：两次提问，中间从 JSONL 文件恢复，第二问之前先压缩"));
    const first = await open();
    console.log(`第 1 问：${README_TASK}`);
    await first.prompt(README_TASK);
    console.log(paint("green", `  回答：${lastAnswer(first)}`));
    await first.prompt(USER_COMMAND);
    const ran = first.messages.at(-1);
    if (ran?.role === "bashExecution") console.log(`用户命令：${USER_COMMAND} → bashExecution（退出码 ${ran.exitCode}）：${JSON.stringify(ran.output.trim())}`);
    console.log(`会话文件 ${path.basename(file)}：${lines().length} 行`);

    const resumed = await open();
    console.log(`从 JSONL 恢复：${resumed.messages.length} 条消息，${roleList(resumed.messages)}`);
    const before = estimateContext(resumed.messages);
    const room = availableTokens(DEMO_BUDGET);
    console.log(`第 2 问：${SECOND_TASK}`);
    const { contextWindow, reserveTokens, safetyMargin } = DEMO_BUDGET;
    console.log(`  估算 ${before.total} 个 token（system ${before.systemTokens}），可用 ${room}（窗口 ${contextWindow} − 回答预留 ${reserveTokens} − 余量 ${safetyMargin}）${before.total > room ? "：先压缩" : ""}`);
    await resumed.prompt(SECOND_TASK);
    const compaction = resumed.tree.getEntries().find((entry) => entry.type === "compaction");
    if (compaction?.type === "compaction") {
      console.log(`  压缩：写下 compaction 条目，tokensBefore ${compaction.tokensBefore}，从条目 ${compaction.firstKeptEntryId} 起原样保留`);
    }
    console.log(paint("green", `  回答：${lastAnswer(resumed)}`));
    const request = model.requests.at(-1)?.messages ?? [];
    const described = request.map(describeForModel);
    console.log(`  这次请求里模型看到：${described.join(" → ")}`);
    console.log(`  transcript 经 convertToLlm 之后是 ${convertToLlm([...resumed.messages]).length} 条；会话文件共 ${lines().length} 行，一行都没删`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 连真实端点失败时该查什么：HTTP 错误多半是模型名或 key；连不上多半是地址写错或服务没开。 */
function endpointFix(message: string | undefined): string {
  if (message?.startsWith("HTTP ")) return "检查 PI_COURSE_MODEL 与 PI_COURSE_API_KEY 是否被这个端点接受";
  return `检查 PI_COURSE_BASE_URL（现在是 ${process.env.PI_COURSE_BASE_URL ?? ""}）是否写对、那个服务是否正在运行`;
}

/** 每个事件一行；文字增量原样接在一起，像终端里看到的那样。 */
function printEvent(event: AgentEvent): void {
  const tag = (name: string) => paint("cyan", name.padEnd(22));
  switch (event.type) {
    case "agent_start":
      console.log(tag(event.type));
      return;
    case "turn_start":
      console.log(tag(event.type) + `第 ${event.step} 次调用模型`);
      return;
    case "message_start":
      // 开始时 assistant 还没有结束原因，只报角色。
      console.log(tag(event.type) + event.message.role);
      return;
    case "message_end":
      console.log(tag(event.type) + `${event.message.role}${event.message.role === "assistant" ? `（${event.message.stopReason}）` : ""}`);
      return;
    case "message_update":
      if (event.event.type === "text_delta") console.log(tag(event.type) + `text_delta ${JSON.stringify(event.event.delta)}`);
      else if (event.event.type === "toolcall_end") {
        console.log(tag(event.type) + `toolcall_end ${event.event.toolCall.name}(${JSON.stringify(event.event.toolCall.arguments)})`);
      }
      return;
    case "tool_execution_start":
      console.log(tag(event.type) + `${event.toolName} ${JSON.stringify(event.args)}`);
      return;
    case "tool_execution_update":
      return;
    case "tool_execution_end":
      console.log(tag(event.type) + `${event.toolName} ${event.isError ? "✗" : "✓"} ${JSON.stringify(textOf(event.result).slice(0, 60))}`);
      return;
    case "turn_end":
      console.log(tag(event.type) + `${event.toolResults.length} 条工具结果`);
      return;
    case "agent_end":
      console.log(tag(event.type) + `${event.reason}，新增 ${event.messages.length} 条消息`);
      return;
  }
}
