/**
 * 文件读写的最后一道防线：工作区检查之后、真正打开文件之前，磁盘还可能在脚下变化。
 * 读：只打开普通文件，不跟随最后一段的符号链接，太大的文件不整个读进内存。
 * 写：先写同目录的临时文件，再 rename 到位；rename 之前确认目录还是检查过的那一个。
 */

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, realpath, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";

// ── 错误 ────────────────────────────────────────────────────────

export type FileErrorCode = "NOT_REGULAR_FILE" | "TOO_LARGE" | "CHANGED_UNDERFOOT";

export class FileError extends Error {
  constructor(
    readonly code: FileErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "FileError";
  }
}

// #region lab 8.1 辅助
function changedUnderfoot(input: string): FileError {
  return new FileError("CHANGED_UNDERFOOT", `${input} 在检查之后被换成了别的东西（例如符号链接）：拒绝跟随，什么也没有读写。`);
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}
// #endregion

// ── 读 ──────────────────────────────────────────────────────────

/**
 * 读一个普通文件的全部字节。
 * O_NOFOLLOW：最后一段在检查之后被换成符号链接，open 直接失败（ELOOP），不会读到链接指向的外部文件。
 * O_NONBLOCK：FIFO 没有写入方时，普通的 open 会一直阻塞；带上它，open 立即返回，再由 fstat 拒绝。
 */
export async function readRegularFile(file: string, maxFileBytes: number, input: string): Promise<Buffer> {
  // #region lab 8.1
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
  let handle;
  try {
    handle = await open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === "ELOOP") throw changedUnderfoot(input);
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) {
      throw new FileError("NOT_REGULAR_FILE", `${input} 不是普通文件（可能是目录、FIFO 或设备）：只能读写普通文件。`);
    }
    if (info.size > maxFileBytes) {
      throw new FileError(
        "TOO_LARGE",
        `${input} 有 ${info.size} 字节，超过单个文件 ${maxFileBytes} 字节的上限：请用 bash 的 head、tail 或 sed -n 取出其中一段。`,
      );
    }
    return await handle.readFile();
  } finally {
    await handle.close();
  }
  // #endregion
}

// ── 写 ──────────────────────────────────────────────────────────

// #region lab 8.2 辅助
/** 覆盖已有文件时沿用它的权限位（例如可执行的脚本）；新文件用默认权限。目录不能被当成文件覆盖。 */
async function modeForReplacing(file: string, input: string): Promise<number | undefined> {
  try {
    const info = await stat(file);
    if (!info.isFile()) throw new FileError("NOT_REGULAR_FILE", `${input} 不是普通文件（可能是目录、FIFO 或设备）：只能读写普通文件。`);
    return info.mode & 0o7777;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}
// #endregion

/**
 * 原子地把 content 写到 file（file 是工作区检查过的真实路径）。
 * 临时文件与目标在同一目录，rename 在同一文件系统内是原子的：读者看到的要么是旧文件，要么是完整的新文件。
 * rename 换掉的是这个名字：符号链接已在检查时解析成真实路径，所以链接照旧指向新内容；
 * 硬链接的其他名字仍指向旧内容（硬链接被拆开）。
 */
export async function writeFileAtomic(file: string, content: string, input: string): Promise<void> {
  // #region lab 8.2
  const dir = path.dirname(file);
  const mode = await modeForReplacing(file, input);
  const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
  // O_EXCL | O_NOFOLLOW：临时文件必须是我们刚刚新建的，不能是别人预先放好的链接。
  const handle = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
  try {
    try {
      if (mode !== undefined) await handle.chmod(mode);
      await handle.writeFile(content, "utf8");
    } finally {
      await handle.close();
    }
    // 打开之后再确认一次目录：它若在检查之后被换成指向外面的链接，临时文件已经落在外面，删掉并拒绝。
    if ((await realpath(dir)) !== dir) throw changedUnderfoot(input);
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  // #endregion
}
