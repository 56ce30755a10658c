/**
 * 工作区：编码工具能碰到的文件，全部在一个根目录之下。
 * 模型写出的路径先折叠 `..`，再顺着符号链接解析到真实位置；两步之后仍在根目录里才算数。
 */

import { realpath } from "node:fs/promises";

// ── 错误 ────────────────────────────────────────────────────────

export type WorkspaceErrorCode = "OUTSIDE_WORKSPACE" | "NOT_FOUND";

/** 工具把它变成一条 isError 的结果；code 稳定，消息是给模型和人读的中文。 */
export class WorkspaceError extends Error {
  constructor(
    readonly code: WorkspaceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "WorkspaceError";
  }
}

// ── 纯函数 ──────────────────────────────────────────────────────

/** target 是 root 本身或在 root 之下；两者都必须是绝对路径。 */
export function isInside(root: string, target: string): boolean {
  throw new Error("Lab 8.1 尚未实现");
}

// ── 工作区 ──────────────────────────────────────────────────────

export class Workspace {
  private constructor(
    /** 根目录的真实路径：比较时两边都用 realpath，/tmp 是符号链接的系统上也不会误判。 */
    readonly root: string,
  ) {}

  static async open(dir: string): Promise<Workspace> {
    return new Workspace(await realpath(dir));
  }

  /** 只折叠 `..`，不碰磁盘：同步给出绝对路径，越界就抛 OUTSIDE_WORKSPACE。 */
  lexicalPath(input: string): string {
    throw new Error("Lab 8.1 尚未实现");
  }

  /** 要读或改的已有文件：顺着符号链接到达的真实位置也必须在根目录里；不存在就抛 NOT_FOUND。 */
  async resolveExisting(input: string): Promise<string> {
    throw new Error("Lab 8.1 尚未实现");
  }

  /** 要创建或覆盖的文件：它自己可能还不存在，就检查最近的已存在祖先的真实位置。 */
  async resolveWritable(input: string): Promise<string> {
    throw new Error("Lab 8.1 尚未实现");
  }
}
