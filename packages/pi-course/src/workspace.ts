/**
 * 工作区：编码工具能碰到的文件，全部在一个根目录之下。
 * 模型写出的路径先折叠 `..`，再顺着符号链接解析到真实位置；两步之后仍在根目录里才算数。
 */

import { realpathSync } from "node:fs";
import { lstat, realpath } from "node:fs/promises";
import path from "node:path";

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

// #region lab 8.1 辅助
function outside(input: string): WorkspaceError {
  return new WorkspaceError("OUTSIDE_WORKSPACE", `路径 ${input} 在工作区之外：工具只能访问工作区根目录里的文件。`);
}
// #endregion

// ── 纯函数 ──────────────────────────────────────────────────────

/** target 是 root 本身或在 root 之下；两者都必须是绝对路径。 */
export function isInside(root: string, target: string): boolean {
  // #region lab 8.1
  const relative = path.relative(root, target);
  // 只看第一段是不是 ".."：名叫 "..notes" 的文件仍在里面。
  const escapes = relative === ".." || relative.startsWith(`..${path.sep}`);
  return !escapes && !path.isAbsolute(relative);
  // #endregion
}

// #region lab 8.1 辅助
function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** 沿着父目录往上找，返回第一个真实存在的路径（符号链接本身也算存在）。 */
async function nearestExisting(target: string): Promise<string> {
  let current = target;
  for (;;) {
    try {
      await lstat(current);
      return current;
    } catch (error) {
      if (!isMissing(error)) throw error;
      current = path.dirname(current);
    }
  }
}
// #endregion

// ── 工作区 ──────────────────────────────────────────────────────

export class Workspace {
  private constructor(
    /** 根目录的真实路径：比较时两边都用 realpath，/tmp 是符号链接的系统上也不会误判。 */
    readonly root: string,
  ) {}

  static async open(dir: string): Promise<Workspace> {
    return new Workspace(await realpath(dir));
  }

  /**
   * 只折叠 `..`，不碰磁盘：同步给出绝对路径。
   * 第一道检查放在这里，明显越界的路径连文件系统都不用访问。
   */
  lexicalPath(input: string): string {
    // #region lab 8.1
    const absolute = path.resolve(this.root, input);
    if (!isInside(this.root, absolute)) throw outside(input);
    return absolute;
    // #endregion
  }

  /**
   * 变更队列的 key：同一个文件的两个名字（例如符号链接 alias.txt → a.txt）必须排进同一条队伍。
   * 所以 key 是真实路径：最近的已存在祖先的 realpath，接上还不存在的那几段。
   * 同步计算，是为了在第一个 await 之前入队：并发的调用按发起顺序排队。
   */
  queueKey(input: string): string {
    // #region lab 8.2
    const absolute = this.lexicalPath(input);
    for (let existing = absolute; ; existing = path.dirname(existing)) {
      try {
        return path.join(realpathSync(existing), path.relative(existing, absolute));
      } catch (error) {
        // 走到根目录仍解析不了（不该发生），就退回字面路径：排队只影响先后，不影响越界检查。
        if (!isMissing(error) || existing === path.dirname(existing)) return absolute;
      }
    }
    // #endregion
  }

  /** 要读或改的已有文件：顺着符号链接到达的真实位置也必须在根目录里。 */
  async resolveExisting(input: string): Promise<string> {
    // #region lab 8.1
    const absolute = this.lexicalPath(input);
    let real: string;
    try {
      real = await realpath(absolute);
    } catch (error) {
      if (isMissing(error)) throw new WorkspaceError("NOT_FOUND", `文件 ${input} 不存在。`);
      throw error;
    }
    if (!isInside(this.root, real)) throw outside(input);
    return real;
    // #endregion
  }

  /**
   * 要创建或覆盖的文件：它自己可能还不存在，就检查最近的已存在祖先。
   * 那个祖先若是指向外面的符号链接，mkdir 和 writeFile 会顺着它写到工作区之外。
   */
  async resolveWritable(input: string): Promise<string> {
    // #region lab 8.1
    const absolute = this.lexicalPath(input);
    const existing = await nearestExisting(absolute);
    let real: string;
    try {
      real = await realpath(existing);
    } catch (error) {
      // 悬空的符号链接：看不到它指向哪里，就不能放行。
      if (isMissing(error)) throw outside(input);
      throw error;
    }
    if (!isInside(this.root, real)) throw outside(input);
    return path.join(real, path.relative(existing, absolute));
    // #endregion
  }
}
