/**
 * 编码 Agent 自己的消息角色，以及它通往模型的出口 convertToLlm。
 *
 * transcript 与会话文件保存的是这些角色的原样：界面要按结构渲染它们，回放要一字不差。
 * 模型却只认识 system / user / assistant / toolResult，所以每次请求之前，
 * convertToLlm 把多出来的角色改写成 user 消息，或者整条略去。
 *
 * custom 角色是“程序发给模型的话”：content 会变成一条 user 消息；display 只管界面显示不显示，
 * details 只给程序读，两者都到不了模型那里。
 */

import { text, type AgentMessage, type Message, type TextContent, type UserMessage } from "./types.js";

// ── 摘要的包装：一段写给模型看的英文，不是协议字段 ─────────────────

/** 与上游 pi 的常量逐字相同（这里只是为了行宽拆成两段）：模型只能从这段话知道后面是一份压缩摘要。 */
export const COMPACTION_SUMMARY_PREFIX =
  "The conversation history before this point " + "was compacted into the following summary:\n\n<summary>\n";
export const COMPACTION_SUMMARY_SUFFIX = "\n</summary>";

/** 上游的分支摘要后缀前面没有换行，这里照样保留这点不对称。 */
export const BRANCH_SUMMARY_PREFIX =
  "The following is a summary of a branch " + "that this conversation came back from:\n\n<summary>\n";
export const BRANCH_SUMMARY_SUFFIX = "</summary>";

// ── 类型 ────────────────────────────────────────────────────────

/** 用户亲手运行的一条 shell 命令（`!cmd`），不是模型请求的工具调用。 */
export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  /** 命令自己退出时的退出码；被终止时没有。 */
  exitCode: number | undefined;
  /** 被取消或超时终止：输出只到终止那一刻为止。 */
  cancelled: boolean;
  /** 输出超过上限，只留下了结尾。 */
  truncated: boolean;
  /** 截断时完整输出存放的位置（如果保存了的话）。 */
  fullOutputPath?: string;
  timestamp: number;
  /** `!!cmd`：照样运行、显示、保存，只是不进模型的上下文。 */
  excludeFromContext?: boolean;
}

export interface CustomMessage<T = unknown> {
  role: "custom";
  /** 谁发的、哪一类：应用靠它在重放时认出自己的消息。 */
  customType: string;
  /** 唯一会进模型上下文的部分。 */
  content: string | TextContent[];
  /** 界面要不要显示它。 */
  display: boolean;
  /** 给程序看的结构化附加信息，不发给模型。 */
  details?: T;
  timestamp: number;
}

/** sendMessage 的参数：就是一条 CustomMessage，只是 role 和 timestamp 由会话来填（形状只在这里写一次）。 */
export type CustomMessageInput<T = unknown> = Omit<CustomMessage<T>, "role" | "timestamp">;

/** 回到树上另一处时，被离开的那条分支的摘要。 */
export interface BranchSummaryMessage {
  role: "branchSummary";
  summary: string;
  /** 摘要挂在哪个条目下面，也就是新分支的起点（上游的取法，见课文）。 */
  fromId: string;
  timestamp: number;
}

/** 一次压缩留下的摘要：它替代了 firstKeptEntryId 之前的全部历史。 */
export interface CompactionSummaryMessage {
  role: "compactionSummary";
  summary: string;
  /** 压缩之前上下文的估算 token 数，给界面和日志看。 */
  tokensBefore: number;
  timestamp: number;
}

/**
 * 编码 Agent 自己的角色表。经 extends 并进 CustomAgentMessages，整个程序的 AgentMessage 就有了它们；
 * 这张表同时是 convertToLlm 必须逐个处理的清单——往这里加一个角色而不加 case，编译失败。
 */
export interface CodingAgentMessages {
  bashExecution: BashExecutionMessage;
  custom: CustomMessage;
  branchSummary: BranchSummaryMessage;
  compactionSummary: CompactionSummaryMessage;
}

// 声明合并：从这里起，整个程序里的 AgentMessage 都多了这四种。
declare module "./types.js" {
  interface CustomAgentMessages extends CodingAgentMessages {}
}

/** 编码 Agent 认识的全部消息：模型的四种加上自己登记的四种。 */
export type CodingAgentMessage = Message | CodingAgentMessages[keyof CodingAgentMessages];

/**
 * 运行时的同一张清单。写成以角色为键的对象，少写或多写一个角色都是编译错误，
 * 它和上面的类型不会各说各话。
 */
const CODING_AGENT_ROLES: Record<CodingAgentMessage["role"], true> = {
  system: true,
  user: true,
  assistant: true,
  toolResult: true,
  bashExecution: true,
  custom: true,
  branchSummary: true,
  compactionSummary: true,
};

/** 别的模块（另一个扩展、一份测试）也可能往 CustomAgentMessages 里登记角色：那些不归编码 Agent 转换。 */
export function isCodingAgentMessage(message: AgentMessage): message is CodingAgentMessage {
  return Object.hasOwn(CODING_AGENT_ROLES, message.role);
}

// ── 纯函数 ──────────────────────────────────────────────────────

export function createCustomMessage<T>(
  customType: string,
  content: string | TextContent[],
  display: boolean,
  details: T | undefined,
  timestamp: number,
): CustomMessage<T> {
  const message: CustomMessage<T> = { role: "custom", customType, content, display, timestamp };
  if (details !== undefined) message.details = details;
  return message;
}

/** 会话条目的 timestamp 是 ISO 字符串，消息的是毫秒：从条目生成消息时换算。 */
export function createBranchSummaryMessage(summary: string, fromId: string, timestamp: number): BranchSummaryMessage {
  return { role: "branchSummary", summary, fromId, timestamp };
}

export function createCompactionSummaryMessage(summary: string, tokensBefore: number, timestamp: number): CompactionSummaryMessage {
  return { role: "compactionSummary", summary, tokensBefore, timestamp };
}

/** 模型读到的那段话：命令、输出，以及结局——取消、非零退出、截断都用话说出来。 */
export function bashExecutionToText(message: BashExecutionMessage): string {
  // #region lab 11.1
  const parts = [`用户在终端里运行了 \`${message.command}\``];
  parts.push(message.output === "" ? "（没有输出）" : "```\n" + message.output + "\n```");
  if (message.cancelled) parts.push("命令没有跑完：被取消了。");
  else if (message.exitCode !== undefined && message.exitCode !== 0) parts.push(`命令以退出码 ${message.exitCode} 结束。`);
  if (message.truncated) {
    const where = message.fullOutputPath === undefined ? "" : `完整输出在 ${message.fullOutputPath}。`;
    parts.push(`输出太长，上面只留了结尾。${where}`);
  }
  return parts.join("\n\n");
  // #endregion
}

function userText(value: string, timestamp: number): UserMessage {
  return { role: "user", content: [text(value)], timestamp };
}

/** custom → user：只搬 content，一个字段也不多带。 */
function customToUser(message: CustomMessage): UserMessage {
  // #region lab 10.4
  const blocks = typeof message.content === "string" ? [text(message.content)] : message.content.map((block) => text(block.text));
  return { role: "user", content: blocks, timestamp: message.timestamp };
  // #endregion
}

/**
 * 编码 Agent 的转换器，也是它的第二道闸。自己的每个角色都有一个 case：default 里的 never 让
 * “登记了新角色却忘了在这里处理”成为编译错误，而不是一条悄悄消失的消息。
 * 不是编码 Agent 登记的角色（isCodingAgentMessage 为假）不进请求，和上游 default 分支的做法一样。
 */
export function convertToLlm(messages: AgentMessage[]): Message[] {
  return messages.flatMap((message): Message[] => {
    // #region lab 11.1
    if (!isCodingAgentMessage(message)) return [];
    switch (message.role) {
      case "bashExecution":
        // `!!` 的逃生口：会话里有它，界面上有它，请求里没有。
        if (message.excludeFromContext === true) return [];
        return [userText(bashExecutionToText(message), message.timestamp)];
      case "custom":
        return [customToUser(message)];
      case "branchSummary":
        return [userText(BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX, message.timestamp)];
      case "compactionSummary":
        return [userText(COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX, message.timestamp)];
      case "system":
      case "user":
      case "assistant":
      case "toolResult":
        return [message];
      default: {
        const unhandled: never = message;
        return unhandled;
      }
    }
    // #endregion
  });
}
