/**
 * 四个编码工具：read、write、edit、bash，全部按第 06 章的 AgentTool 契约实现。
 * 成功就返回 ToolOutput；失败就抛出一句说清原因的中文 Error，executeToolCall 会把它变成 isError 的结果。
 * 真正的规则都在下层的小文件里：路径（workspace）、截断（truncate）、替换（text-edits）、
 * 排队（mutation-queue）、进程（shell）。这里只负责把它们接到模型能调用的形状上。
 */

import type { MutationQueue } from "./mutation-queue.js";
import { s } from "./schema.js";
import { defineTool, type AgentTool, type ToolOutput } from "./tools.js";
import { text } from "./types.js";
import type { Workspace } from "./workspace.js";

// ── 上限 ────────────────────────────────────────────────────────

export interface CodingToolLimits {
  /** read 一次最多交回多少字节。 */
  readMaxBytes: number;
  /** bash 命令最长运行多久。 */
  bashTimeoutMs: number;
  /** bash 输出最多保留多少字节。 */
  bashMaxOutputBytes: number;
}

/** 上下文窗口是最贵的资源：默认值让一次工具结果只占它的一小块。 */
export const DEFAULT_LIMITS: CodingToolLimits = {
  readMaxBytes: 32 * 1024,
  bashTimeoutMs: 30_000,
  bashMaxOutputBytes: 32 * 1024,
};

function output(message: string, details: unknown): ToolOutput {
  return { content: [text(message)], details };
}

// ── read ────────────────────────────────────────────────────────

const readParameters = s.object({
  path: s.string("相对工作区根目录的文件路径"),
  offset: s.optional(s.integer("从第几行开始读，1 起算")),
  limit: s.optional(s.integer("最多读几行")),
});

export function readTool(workspace: Workspace, maxBytes = DEFAULT_LIMITS.readMaxBytes) {
  return defineTool({
    name: "read",
    description: `读取工作区里的文本文件。一次最多返回 ${maxBytes} 字节的整行；没读完时结果末尾会写明用哪个 offset 继续。`,
    parameters: readParameters,
    async execute({ path: input, offset, limit }) {
      throw new Error("Lab 8.1 尚未实现");
    },
  });
}

// ── write ───────────────────────────────────────────────────────

const writeParameters = s.object({
  path: s.string("相对工作区根目录的文件路径；不存在的父目录会自动创建"),
  content: s.string("文件的完整新内容"),
});

export function writeTool(workspace: Workspace, queue: MutationQueue) {
  return defineTool({
    name: "write",
    description: "创建文件或整体覆盖文件内容，缺少的父目录会自动创建。只改几处时请用 edit。",
    parameters: writeParameters,
    async execute({ path: input, content }) {
      throw new Error("Lab 8.2 尚未实现");
    },
  });
}

// ── edit ────────────────────────────────────────────────────────

const editParameters = s.object({
  path: s.string("相对工作区根目录的文件路径"),
  edits: s.array(
    s.object({
      oldText: s.string("要替换的原文，必须与文件逐字符一致，并且在文件里只出现一次"),
      newText: s.string("替换后的文字"),
    }),
    "一处或多处替换；每个 oldText 都在原文里定位，彼此不能重叠",
  ),
});

export function editTool(workspace: Workspace, queue: MutationQueue) {
  return defineTool({
    name: "edit",
    description: "按原文精确替换文件里的一处或多处文字。任何一处找不到、不唯一或互相重叠，整个编辑都不生效。",
    parameters: editParameters,
    async execute({ path: input, edits }) {
      throw new Error("Lab 8.2 尚未实现");
    },
  });
}

// ── bash ────────────────────────────────────────────────────────

const bashParameters = s.object({
  command: s.string("在工作区根目录里用 /bin/sh 执行的命令"),
});

export function bashTool(workspace: Workspace, limits: CodingToolLimits = DEFAULT_LIMITS) {
  return defineTool({
    name: "bash",
    description: `在工作区根目录里执行 shell 命令，返回合并的 stdout/stderr 与退出码。超过 ${limits.bashTimeoutMs} 毫秒会被终止。`,
    parameters: bashParameters,
    async execute({ command }, { signal }) {
      throw new Error("Lab 8.3 尚未实现");
    },
  });
}

// ── 一整套 ──────────────────────────────────────────────────────

/** 四个工具一起交出；write 与 edit 必须共用同一个 MutationQueue。 */
export function codingTools(workspace: Workspace, limits: Partial<CodingToolLimits> = {}): AgentTool<any>[] {
  throw new Error("Lab 8.4 尚未实现");
}
