/**
 * 会话条目存在哪里：一个 JSONL 文件，或者内存里的一组行。两者接口相同、格式相同，
 * 读回来都要经过 decodeLines 的同一道检查。
 *
 * JSONL 的规矩：一个条目一行，行尾的换行符就是“这一条已提交”的标记。
 *   进程在写一行的中途死掉，文件末尾会留下一段没有换行符的残行：它从未提交，
 *     打开时报告出来、不算数；下一次追加之前把它截掉，新的一行从干净的行首开始。
 *   带着换行符的行都已提交：其中任何一行坏了，就拒绝打开并说出行号，绝不悄悄跳过。
 *
 * 同一个文件同一时刻只有一个写入者：一行用一次 write 写出，写之前拿到写锁（`会话文件.lock`），
 *   并核对文件还是这个写入者见过的样子；别人在写、或者别人写过，这一次就拒绝。
 */

import type { Stats } from "node:fs";
import { open, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";

import { decodeLines, encodeEntry, SessionEntryError, SessionStoreError, type SessionEntry } from "./session-entries.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 文件末尾没有换行符的那一段：写到一半的最后一行。 */
export interface TornLine {
  /** 它本该是第几行（从 1 开始）。 */
  line: number;
  /** 被忽略的字节数。 */
  bytes: number;
  /** 残行的文字（方便诊断；可能是半个 JSON）。 */
  text: string;
}

export interface LoadedSession {
  entries: SessionEntry[];
  /** 打开时发现并忽略的残行；没有就是 undefined。 */
  torn: TornLine | undefined;
}

/** 会话树只用这两个方法：全部读回来，和在末尾追加一条。 */
export interface SessionStore {
  load(): Promise<LoadedSession>;
  append(entry: SessionEntry): Promise<void>;
}

const NEWLINE = 0x0a;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

// ── 纯函数：字节 → 已提交的行 + 残行 ───────────────────────────

/** 已提交部分的字节数：最后一个换行符之后的都不算。UTF-8 的多字节字符里不会出现 0x0a，所以按字节切是安全的。 */
export function committedLength(bytes: Uint8Array): number {
  // #region lab 10.2
  return bytes.lastIndexOf(NEWLINE) + 1;
  // #endregion
}

/** 已提交的一行必须是合法的 UTF-8：坏字节不换成 U+FFFD 蒙混过去，而是说出行号。 */
function decodeLine(bytes: Uint8Array, line: number): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new SessionEntryError("invalid_json", line, "不是合法的 UTF-8 文本");
  }
}

/** 把文件内容切成已提交的各行和（可能有的）残行。 */
export function splitCommitted(bytes: Uint8Array): { lines: string[]; torn: TornLine | undefined } {
  // #region lab 10.2
  const end = committedLength(bytes);
  const lines: string[] = [];
  for (let start = 0; start < end; ) {
    const stop = bytes.indexOf(NEWLINE, start);
    lines.push(decodeLine(bytes.subarray(start, stop), lines.length + 1));
    start = stop + 1;
  }
  if (end === bytes.length) return { lines, torn: undefined };
  const rest = bytes.subarray(end);
  const torn: TornLine = { line: lines.length + 1, bytes: rest.length, text: new TextDecoder().decode(rest) };
  return { lines, torn };
  // #endregion
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

function kindOf(info: Stats): string {
  if (info.isDirectory()) return "目录";
  if (info.isFIFO()) return "FIFO（命名管道）";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "设备";
  if (info.isSocket()) return "套接字";
  return "特殊文件";
}

/**
 * 会话文件现在有多少字节；还不存在就是 undefined（新会话）。先 stat 再 open：
 * 目录读不出行，设备读不完，FIFO 在没有写端时 open 会一直等下去，所以它们在 open 之前就被拒绝。
 */
async function regularFileSize(file: string): Promise<number | undefined> {
  try {
    const info = await stat(file);
    if (!info.isFile()) {
      throw new SessionStoreError("not_a_file", `会话文件 ${file} 不是普通文件（是一个${kindOf(info)}）：会话只能存进普通文件，请换一个路径。`);
    }
    return info.size;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

async function readIfExists(file: string): Promise<Buffer> {
  // 还没写过任何条目的新会话：文件不存在就是一份空会话。
  if ((await regularFileSize(file)) === undefined) return Buffer.alloc(0);
  return readFile(file);
}

/** 一行只用一次 write，写在以追加方式打开的句柄上：别的写入者的字节插不进这一行的中间。 */
async function appendLine(file: string, line: Buffer): Promise<void> {
  const handle = await open(file, "a");
  try {
    const { bytesWritten } = await handle.write(line);
    // 写短了就是失败：末尾那段没有换行符，是残行，下一次打开时会被报告出来。
    if (bytesWritten !== line.length) {
      throw new SessionStoreError("short_write", `会话文件 ${file} 的一行只写进了 ${bytesWritten}/${line.length} 字节。`);
    }
  } finally {
    await handle.close();
  }
}

/** 锁文件里记的 pid 还活着吗？没有权限发信号（EPERM）也说明它活着。 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === "EPERM";
  }
}

async function lockHolder(lock: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(lock, "utf8"), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * 拿到 file 的写锁，交回释放它的函数。锁是旁边的 `file.lock`，用 wx 建：文件已存在就失败，
 * 所以同一时刻只有一个进程（或同一进程里的一个写入者）能建出它。里面记着持有者的 pid：
 * 持有者活着就拒绝；它已经死了（崩溃、kill -9 留下的锁），就删掉旧锁再建一次。
 */
export async function lockForWriting(file: string): Promise<() => Promise<void>> {
  // #region lab 10.2
  const lock = `${file}.lock`;
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      await writeFile(lock, `${process.pid}\n`, { flag: "wx" });
      return () => rm(lock, { force: true });
    } catch (error) {
      if (errorCode(error) !== "EEXIST") throw error;
      const holder = await lockHolder(lock);
      // 读不出 pid：锁可能正在被建（建出文件和写进 pid 之间），当作有人持有。
      if (holder === undefined || isAlive(holder)) {
        const who = holder === undefined ? "" : `（进程 ${holder}）`;
        throw new SessionStoreError("locked", `会话文件 ${file} 正被另一个写入者${who}写入：同一个会话同一时刻只能有一个写入者。确认没有别人在写之后，可以删掉 ${lock}。`);
      }
      await rm(lock, { force: true });
    }
  }
  throw new SessionStoreError("locked", `会话文件 ${file} 的写锁 ${lock} 刚被另一个写入者拿走：同一个会话同一时刻只能有一个写入者。`);
  // #endregion
}

// ── 两种存储 ────────────────────────────────────────────────────

export class JsonlSessionStore implements SessionStore {
  readonly path: string;
  /** 这个写入者见过的文件长度：load 时量下，自己每写一行就加上这一行；没读过就是 undefined。 */
  private seenBytes: number | undefined;
  /** 残行只在第一次追加之前截一次。 */
  private tailCut = false;

  constructor(path: string) {
    this.path = path;
  }

  /** 只读：残行只报告，不在这里修。打开一份文件看看，不该改动它。 */
  async load(): Promise<LoadedSession> {
    // #region lab 10.2
    const bytes = await readIfExists(this.path);
    const { lines, torn } = splitCommitted(bytes);
    this.seenBytes = bytes.length;
    return { entries: decodeLines(lines), torn };
    // #endregion
  }

  /**
   * 一次追加：存不下的条目在碰文件之前就失败；拿到写锁后核对文件仍是自己见过的样子，
   * 第一次追加先截掉残行，再用一次 write 写出这一行。锁只在这一行写完之前持有。
   */
  async append(entry: SessionEntry): Promise<void> {
    // #region lab 10.2
    const line = Buffer.from(`${encodeEntry(entry)}\n`);
    const release = await lockForWriting(this.path);
    try {
      const size = (await regularFileSize(this.path)) ?? 0;
      if (this.seenBytes !== undefined && size !== this.seenBytes) {
        throw new SessionStoreError("changed", `会话文件 ${this.path} 在这个会话读过之后被另一个写入者改过（读到 ${this.seenBytes} 字节，现在 ${size} 字节）：接着写会把两段对话缠进同一棵树，所以拒绝。请重新打开会话。`);
      }
      const start = this.tailCut ? size : await this.cutTornTail();
      this.tailCut = true;
      // 一次写入，行尾带换行：换行符落盘，这一条才算提交。
      await appendLine(this.path, line);
      this.seenBytes = start + line.length;
    } finally {
      await release();
    }
    // #endregion
  }

  // #region lab 10.2 辅助
  /** 截到最后一个换行符为止，交回截完之后的长度。 */
  private async cutTornTail(): Promise<number> {
    const bytes = await readIfExists(this.path);
    const end = committedLength(bytes);
    if (end < bytes.length) await truncate(this.path, end);
    return end;
  }
  // #endregion
}

/** 不落盘的会话（测试、一次性的运行）：存的是和文件一模一样的行，读回来走同一道检查。 */
export class InMemorySessionStore implements SessionStore {
  private readonly lines: string[];

  /** 可以用现成的行开头，例如从别处拿来的会话。 */
  constructor(lines: readonly string[] = []) {
    this.lines = [...lines];
  }

  /** 存下的全部行，和 JSONL 文件的内容一致（每行去掉换行符）。 */
  get text(): readonly string[] {
    return [...this.lines];
  }

  async load(): Promise<LoadedSession> {
    // #region lab 10.2
    return { entries: decodeLines(this.lines), torn: undefined };
    // #endregion
  }

  async append(entry: SessionEntry): Promise<void> {
    // #region lab 10.2
    // 存成文本而不是对象引用：调用方之后再改那个对象，也改不到已经存下的条目。
    this.lines.push(encodeEntry(entry));
    // #endregion
  }
}
