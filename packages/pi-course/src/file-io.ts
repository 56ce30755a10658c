/**
 * 文件读写的最后一道防线：工作区检查之后、真正打开文件之前，磁盘还可能在脚下变化。
 * 读：只打开普通文件，不跟随最后一段的符号链接；read 一块一块地读，窗口满了就停，文件多大都只占有限的内存；
 * edit 要整个文件，所以只有它受单文件上限约束。
 * 写：先写同目录的临时文件，再 rename 到位；rename 之前确认目录还是检查过的那一个。
 */

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open, realpath, rename, stat, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";

import { collectWindow, windowWithNotice, type ReadWindow, type WindowRequest } from "./truncate.js";

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

/** read 每次向文件要多少字节：与窗口大小无关，只决定一次系统调用搬多少。 */
export const READ_CHUNK_BYTES = 64 * 1024;

// #region lab 8.1 辅助
/**
 * 打开一个普通文件，交出句柄和打开时的大小。
 * O_NOFOLLOW：最后一段在检查之后被换成符号链接，open 直接失败（ELOOP），不会读到链接指向的外部文件。
 * O_NONBLOCK：FIFO 没有写入方时，普通的 open 会一直阻塞；带上它，open 立即返回，再由 fstat 拒绝。
 */
async function openRegularFile(file: string, input: string): Promise<{ handle: FileHandle; size: number }> {
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
    return { handle, size: info.size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** 从当前位置一块一块地读到文件末尾；消费方提前 return，生成器就此结束。取消在两块之间生效。 */
async function* chunksOf(handle: FileHandle, input: string, signal: AbortSignal | undefined): AsyncGenerator<Uint8Array> {
  // 只有一块缓冲区，每轮复用：collectWindow 会复制它要留下的字节。
  const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
  for (;;) {
    if (signal?.aborted) throw new Error(`读取 ${input} 时调用被取消了，没有交出任何内容。`);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) return;
    yield buffer.subarray(0, bytesRead);
  }
}
// #endregion

/**
 * read 的窗口：打开、流式地攒出整行窗口、加上续读说明、关闭。
 * 窗口满了就不再读，所以开头几行立即返回；offset 指向深处时只数换行符，内存同样有上限。
 */
export async function readFileWindow(
  file: string,
  request: WindowRequest,
  input: string,
  signal?: AbortSignal,
): Promise<{ body: string; window: ReadWindow }> {
  // #region lab 8.1
  const { handle, size } = await openRegularFile(file, input);
  try {
    const collected = await collectWindow(chunksOf(handle, input, signal), request);
    return windowWithNotice(collected, request.maxBytes, size);
  } finally {
    await handle.close();
  }
  // #endregion
}

/** edit 要改整个文件，只能整个读进内存：超过 maxFileBytes 就拒绝，请模型换用 read 与 bash。 */
export async function readRegularFile(file: string, maxFileBytes: number, input: string): Promise<Buffer> {
  // #region lab 8.2
  const { handle, size } = await openRegularFile(file, input);
  try {
    if (size > maxFileBytes) {
      throw new FileError(
        "TOO_LARGE",
        `${input} 有 ${size} 字节，超过单个文件 ${maxFileBytes} 字节的上限：edit 要把整个文件读进内存，改不了它；可以用 read 分段查看，用 bash 修改。`,
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
