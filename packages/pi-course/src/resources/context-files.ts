/**
 * 项目上下文文件（实践 12.1）：AGENTS.md（同一层没有就找 CLAUDE.md），从文件系统根一路走到 cwd，
 * 外层在前、最近的在后：越靠近工作目录的说明越具体，放在后面，模型读到它时前面的总则已经读过了。
 *
 * 坏文件不让 Agent 停下：读不了、太大、不是 UTF-8，都记成一条诊断，跳过这一份。
 * 读法（先 stat，不是普通文件或超过上限就不读）也给技能和模板用：一个 FIFO 卡不住启动。
 */

import { lstat, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";

// ── 类型 ────────────────────────────────────────────────────────

export interface ContextFile {
  /** 文件的绝对路径。 */
  path: string;
  content: string;
}

/** 一份被跳过（或有问题）的材料：说清是哪个文件、为什么。 */
export interface ResourceDiagnostic {
  path: string;
  message: string;
}

export interface ContextFileOptions {
  /** 向上找 AGENTS.md 时走到这一层为止（含这一层）；省略时走到文件系统根。测试用它隔开机器上真实的 AGENTS.md。 */
  stopAt?: string;
  /** 一份资源文件（上下文、技能、模板）最多多少字节，默认 64 KiB：上下文每次请求都要发，太大的文件多半是放错了地方。 */
  maxContextBytes?: number;
  /** 诊断写进这里；省略时静默跳过。 */
  diagnostics?: ResourceDiagnostic[];
}

export const DEFAULT_MAX_CONTEXT_BYTES = 64 * 1024;
const CONTEXT_FILE_NAMES = ["AGENTS.md", "CLAUDE.md"];

// ── 读文件 ──────────────────────────────────────────────────────

/** 诊断里的原因：环单独说清，其余用错误自己的话。技能与模板的诊断也用它。 */
export function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ELOOP") return "符号链接绕成了环";
  return error instanceof Error ? error.message : String(error);
}

/**
 * 读一份资源文件：先 stat（顺着符号链接走：指向自己的链接在这里报 ELOOP），不是普通文件、超过上限就不读。
 * 对 FIFO 调 readFile 会一直等到有人往里写：只有 stat 之后再读，启动才不会卡在一个管道上。
 */
export async function readTextFile(file: string, maxBytes: number): Promise<string> {
  // #region lab 12.1
  const info = await stat(file);
  if (!info.isFile()) throw new Error("不是普通文件");
  if (info.size > maxBytes) throw new Error(`文件有 ${info.size} 字节，超过上限 ${maxBytes} 字节`);
  try {
    return strictUtf8.decode(await readFile(file));
  } catch (error) {
    throw error instanceof TypeError ? new Error("不是有效的 UTF-8 文本") : error;
  }
  // #endregion
}

// #region lab 12.1 辅助
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** 从 dir 往上直到 stop（或根）的每一层，外层在前。 */
function ancestors(dir: string, stop: string | undefined): string[] {
  const chain: string[] = [];
  for (let current = dir; ; current = path.dirname(current)) {
    chain.unshift(current);
    // 根目录的 dirname 是它自己：这是循环一定会停下的地方。
    if (current === stop || current === path.dirname(current)) return chain;
  }
}

/** 一层目录里的上下文文件：AGENTS.md 优先，没有才看 CLAUDE.md。问题记成诊断，交回 undefined。 */
async function contextFileIn(dir: string, maxBytes: number, diagnostics: ResourceDiagnostic[]): Promise<ContextFile | undefined> {
  for (const name of CONTEXT_FILE_NAMES) {
    const file = path.join(dir, name);
    try {
      await lstat(file);
    } catch {
      continue;
    }
    try {
      return { path: file, content: await readTextFile(file, maxBytes) };
    } catch (error) {
      diagnostics.push({ path: file, message: `跳过上下文文件：${errorText(error)}。` });
      return undefined;
    }
  }
  return undefined;
}
// #endregion

/**
 * 从文件系统根（或 stopAt）走到 cwd，收集每一层的 AGENTS.md（没有就 CLAUDE.md），外层在前、最近的在后。
 * cwd 先取真实路径：经符号链接进来的工作目录，走的也是它真正所在的那条路。
 */
export async function loadContextFiles(cwd: string, options: ContextFileOptions = {}): Promise<ContextFile[]> {
  // #region lab 12.1
  const diagnostics = options.diagnostics ?? [];
  const maxBytes = options.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
  const start = await realpath(cwd);
  const stop = options.stopAt === undefined ? undefined : await realpath(options.stopAt);
  const files: ContextFile[] = [];
  for (const dir of ancestors(start, stop)) {
    const file = await contextFileIn(dir, maxBytes, diagnostics);
    if (file !== undefined) files.push(file);
  }
  return files;
  // #endregion
}
