/**
 * 会话条目存在哪里：一个 JSONL 文件，或者内存里的一组行。两者接口相同、格式相同，
 * 读回来都要经过 decodeLines 的同一道检查。
 *
 * JSONL 的规矩：一个条目一行，行尾的换行符就是“这一条已提交”的标记。
 *   进程在写一行的中途死掉，文件末尾会留下一段没有换行符的残行：它从未提交，
 *     打开时报告出来、不算数；下一次追加之前把它截掉，新的一行从干净的行首开始。
 *   带着换行符的行都已提交：其中任何一行坏了，就拒绝打开并说出行号，绝不悄悄跳过。
 */

import { appendFile, readFile, truncate } from "node:fs/promises";

import { decodeLines, encodeEntry, SessionEntryError, type SessionEntry } from "./session-entries.js";

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

async function readIfExists(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    // 还没写过任何条目的新会话：文件不存在就是一份空会话。
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return Buffer.alloc(0);
    throw error;
  }
}

// ── 两种存储 ────────────────────────────────────────────────────

export class JsonlSessionStore implements SessionStore {
  readonly path: string;
  /** 第一次追加之前截掉残行；只做一次，同时到来的追加共用这一次。 */
  private tailCut: Promise<void> | undefined;

  constructor(path: string) {
    this.path = path;
  }

  /** 只读：残行只报告，不在这里修。打开一份文件看看，不该改动它。 */
  async load(): Promise<LoadedSession> {
    // #region lab 10.2
    const { lines, torn } = splitCommitted(await readIfExists(this.path));
    return { entries: decodeLines(lines), torn };
    // #endregion
  }

  async append(entry: SessionEntry): Promise<void> {
    // #region lab 10.2
    this.tailCut ??= this.cutTornTail();
    await this.tailCut;
    // 一次写入，行尾带换行：换行符落盘，这一条才算提交。
    await appendFile(this.path, `${encodeEntry(entry)}\n`);
    // #endregion
  }

  // #region lab 10.2 辅助
  private async cutTornTail(): Promise<void> {
    const bytes = await readIfExists(this.path);
    const end = committedLength(bytes);
    if (end < bytes.length) await truncate(this.path, end);
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
