/**
 * 序章：一次离线的 README 往返，写成固定数据。
 * 这里只放看懂这段 trace 所需的最小形状；第 03 章会给出完整的消息协议。
 */

// ── 最小形状 ────────────────────────────────────────────────────

export interface TraceText {
  type: "text";
  text: string;
}

export interface TraceToolCall {
  type: "toolCall";
  /** 配对键：回答这次调用的工具结果必须带着同一个值。 */
  id: string;
  name: string;
  arguments: unknown;
}

export interface TraceUser {
  role: "user";
  content: TraceText[];
}

export interface TraceAssistant {
  role: "assistant";
  /** 说明文字和工具调用按模型给出的先后排列。 */
  content: Array<TraceText | TraceToolCall>;
  /** toolUse：等工具结果回来再调用一次模型；stop：这一轮说完了。 */
  stopReason: "toolUse" | "stop";
}

export interface TraceToolResult {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: TraceText[];
  isError: boolean;
}

export type TraceMessage = TraceUser | TraceAssistant | TraceToolResult;

// ── 固定的往返 ──────────────────────────────────────────────────

/** 两次模型调用：第一次要求读文件，第二次读到文件内容后才回答。 */
export const README_TRACE: readonly TraceMessage[] = [
  {
    role: "user",
    content: [{ type: "text", text: "请读取 README，然后告诉我项目名。" }],
  },
  {
    role: "assistant",
    content: [
      { type: "text", text: "我先读取项目说明。" },
      { type: "toolCall", name: "read", id: "call_1", arguments: { path: "README.md" } },
    ],
    stopReason: "toolUse",
  },
  {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    isError: false,
    content: [{ type: "text", text: "# tiny-pi\nA small agent runtime." }],
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "项目名是 tiny-pi。" }],
    stopReason: "stop",
  },
];

// ── 配对检查 ────────────────────────────────────────────────────

export interface PairingProblem {
  /** 出问题的那个调用 id。 */
  callId: string;
  message: string;
}

/**
 * 按顺序核对每个工具调用都被同 id 的工具结果回答，且结果不早于调用。
 * 返回问题清单而不是抛错，调用方可以一次看到全部问题。
 */
export function pairingProblems(trace: readonly TraceMessage[]): PairingProblem[] {
  const problems: PairingProblem[] = [];
  const waiting = new Map<string, string>();
  for (const message of trace) {
    if (message.role === "assistant") {
      for (const block of message.content) {
        if (block.type === "toolCall") waiting.set(block.id, block.name);
      }
    } else if (message.role === "toolResult") {
      if (waiting.delete(message.toolCallId)) continue;
      problems.push({
        callId: message.toolCallId,
        message: `工具结果 ${message.toolCallId} 没有对应的、仍在等待回答的工具调用`,
      });
    }
  }
  for (const [callId, name] of waiting) {
    problems.push({ callId, message: `工具调用 ${callId}（${name}）没有收到工具结果` });
  }
  return problems;
}

export class BrokenTraceError extends Error {
  constructor(readonly problems: PairingProblem[]) {
    super(`这段 trace 不能显示：${problems.map((problem) => problem.message).join("；")}`);
    this.name = "BrokenTraceError";
  }
}

// ── 终端画面 ────────────────────────────────────────────────────

function oneLine(text: string): string {
  return text.split("\n").join(" ⏎ ");
}

function linesOf(message: TraceMessage): string[] {
  switch (message.role) {
    case "user":
      return message.content.map((block) => `用户：${block.text}`);
    case "assistant":
      return message.content.map((block) =>
        block.type === "text"
          ? `模型：${block.text}`
          : `调用 ${block.name} ${JSON.stringify(block.arguments)}（${block.id}）`,
      );
    case "toolResult": {
      const label = message.isError ? "工具出错" : "工具结果";
      const body = message.content.map((block) => oneLine(block.text)).join(" ");
      return [`${label} ${message.toolCallId}：${body}`];
    }
  }
}

/**
 * 把 trace 变成终端上的编号行。先整体检查配对再生成第一行：
 * 半截往返一旦显示出来，读的人就会把它当成完整的对话。
 */
export function renderTrace(trace: readonly TraceMessage[]): string[] {
  const problems = pairingProblems(trace);
  if (problems.length > 0) throw new BrokenTraceError(problems);
  return trace.flatMap(linesOf).map((line, index) => `${index + 1}. ${line}`);
}

/** 唯一有副作用的一步：把已经检查过、渲染好的行逐行交给 print。 */
export function showTrace(
  trace: readonly TraceMessage[],
  print: (line: string) => void = console.log,
): void {
  for (const line of renderTrace(trace)) print(line);
}
