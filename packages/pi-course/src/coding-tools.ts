/**
 * 四个编码工具：read、write、edit、bash，全部按第 06 章的 AgentTool 契约实现。
 * 成功就返回 ToolOutput；失败就抛出一句说清原因的中文 Error，executeToolCall 会把它变成 isError 的结果；
 * bash 的失败还带着退出码等 details，所以它返回 isError 的 ToolOutput 而不是抛出。
 * 真正的规则都在下层的小文件里：路径（workspace）、读写文件（file-io）、截断（truncate）、
 * 替换（text-edits）、排队（mutation-queue）、进程（shell）。这里只负责把它们接到模型能调用的形状上。
 */

import { mkdir } from "node:fs/promises";
import path from "node:path";

import { readFileWindow, readRegularFile, writeFileAtomic } from "./file-io.js";
import { MutationQueue } from "./mutation-queue.js";
import { s } from "./schema.js";
import { runCommand, type CommandResult } from "./shell.js";
import { EditError, applyEdits, decodeUtf8Strict } from "./text-edits.js";
import { defineTool, type AgentTool, type ToolOutput } from "./tools.js";
import { tailOfBytes } from "./truncate.js";
import { text } from "./types.js";
import type { Workspace } from "./workspace.js";

// ── 上限 ────────────────────────────────────────────────────────

export interface CodingToolLimits {
  /** read 一次最多交回多少字节。 */
  readMaxBytes: number;
  /** edit 最多把多大的文件整个读进内存（read 流式地只读一个窗口，不受它限制）。 */
  readMaxFileBytes: number;
  /** bash 命令最长运行多久。 */
  bashTimeoutMs: number;
  /** bash 输出最多保留多少字节。 */
  bashMaxOutputBytes: number;
}

/** 上下文窗口是最贵的资源：默认值让一次工具结果只占它的一小块。 */
export const DEFAULT_LIMITS: CodingToolLimits = {
  readMaxBytes: 32 * 1024,
  readMaxFileBytes: 16 * 1024 * 1024,
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
    async execute({ path: input, offset, limit }, { signal }) {
      // #region lab 8.1
      const file = await workspace.resolveExisting(input);
      const { body, window } = await readFileWindow(file, { offset, limit, maxBytes }, input, signal);
      return output(body, window);
      // #endregion
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
      // #region lab 8.2
      // 排队的 key 在第一个 await 之前算出：并发的调用按发起顺序入队。
      return queue.run(workspace.queueKey(input), async () => {
        const file = await workspace.resolveWritable(input);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFileAtomic(file, content, input);
        const bytes = Buffer.byteLength(content, "utf8");
        return output(`已写入 ${input}（${bytes} 字节）。`, { path: input, bytes });
      });
      // #endregion
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

export function editTool(workspace: Workspace, queue: MutationQueue, maxFileBytes = DEFAULT_LIMITS.readMaxFileBytes) {
  return defineTool({
    name: "edit",
    description: "按原文精确替换文件里的一处或多处文字。任何一处找不到、不唯一或互相重叠，整个编辑都不生效。",
    parameters: editParameters,
    async execute({ path: input, edits }) {
      // #region lab 8.2
      return queue.run(workspace.queueKey(input), async () => {
        const file = await workspace.resolveExisting(input);
        const bytes = await readRegularFile(file, maxFileBytes, input);
        let after: string;
        try {
          after = applyEdits(decodeUtf8Strict(bytes), edits);
        } catch (error) {
          if (error instanceof EditError) throw new Error(`${input} 没有改动：${error.message}`);
          throw error;
        }
        await writeFileAtomic(file, after, input);
        return output(`已在 ${input} 里替换 ${edits.length} 处。`, { path: input, replaced: edits.length });
      });
      // #endregion
    },
  });
}

// ── bash ────────────────────────────────────────────────────────

const bashParameters = s.object({
  command: s.string("在工作区根目录里用 /bin/sh 执行的命令"),
});

// #region lab 8.3 辅助
function statusLine(result: CommandResult, limits: CodingToolLimits): string {
  switch (result.status) {
    case "exited":
      return `[退出码 ${result.exitCode ?? "无（进程被信号终止）"}]`;
    case "timedOut":
      return `[命令超过 ${limits.bashTimeoutMs} 毫秒仍未结束，已终止它的整个进程组。]`;
    case "cancelled":
      return result.spawned ? "[命令被取消，已终止它的整个进程组。]" : "[调用在启动前就被取消，命令没有执行。]";
  }
}

/**
 * 输出在前，状态在后：模型先看到命令说了什么，再看到它怎样结束。
 * 上限管的是整段文字：放不下时，截断说明和状态行先占位，输出只留剩下的那点结尾。
 */
function describeCommand(result: CommandResult, limits: CodingToolLimits): string {
  const cap = limits.bashMaxOutputBytes;
  const output = result.output.trimEnd();
  const status = statusLine(result, limits);
  const whole = `${output === "" ? "（没有输出）" : output}\n\n${status}`;
  if (!result.truncated && Buffer.byteLength(whole, "utf8") <= cap) return whole;
  const footer = `[输出共 ${result.totalBytes} 字节，连同说明超过 ${cap} 字节上限，只保留了结尾部分。]\n\n${status}`;
  const room = cap - Buffer.byteLength(footer, "utf8") - 2;
  return `${tailOfBytes(Buffer.from(output, "utf8"), Math.max(room, 0))}\n\n${footer}`;
}
// #endregion

export function bashTool(workspace: Workspace, limits: CodingToolLimits = DEFAULT_LIMITS) {
  return defineTool({
    name: "bash",
    description: `在工作区根目录里执行 shell 命令，返回合并的 stdout/stderr 与退出码。超过 ${limits.bashTimeoutMs} 毫秒会被终止。`,
    parameters: bashParameters,
    async execute({ command }, { signal }) {
      // #region lab 8.3
      const result = await runCommand(command, {
        cwd: workspace.root,
        timeoutMs: limits.bashTimeoutMs,
        maxOutputBytes: limits.bashMaxOutputBytes,
        signal,
      });
      // 非零退出、超时、取消都算失败：isError 让模型一眼知道这条命令没有成功。
      // 失败也用返回而不是抛出：抛出会丢掉 details，程序就读不到退出码和结局了。
      const failed = result.status !== "exited" || result.exitCode !== 0;
      return { ...output(describeCommand(result, limits), result), isError: failed };
      // #endregion
    },
  });
}

// ── 一整套 ──────────────────────────────────────────────────────

/** write 与 edit 共用一个队列：同一个文件上的两种变更也要排在同一条队伍里。 */
export function codingTools(workspace: Workspace, limits: Partial<CodingToolLimits> = {}): AgentTool<any>[] {
  // #region lab 8.4
  const all = { ...DEFAULT_LIMITS, ...limits };
  const queue = new MutationQueue();
  return [
    readTool(workspace, all.readMaxBytes),
    writeTool(workspace, queue),
    editTool(workspace, queue, all.readMaxFileBytes),
    bashTool(workspace, all),
  ];
  // #endregion
}
