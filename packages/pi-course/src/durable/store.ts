/**
 * 记录存在哪里：一个 JSONL 文件，或者一个真正的 SQLite 数据库。两者接口相同：
 * 读回全部已提交的条目，把一批条目原子地提交（要么全在，要么全不在）。
 *
 * 提交之前看不见：DurableLog 只在存储的 commit 返回之后才把条目交给订阅者、界面和下一次请求。
 * 结局不确定的失败（写了一半、COMMIT 抛出）让整个会话停用：之后每个操作都是同一句错误，
 * 绝不显示一个可能没存下的条目。提交里只有数据：工具、模型调用都不在提交里跑。
 */

import { open, readFile, stat, truncate } from "node:fs/promises";

import { committedLength, splitCommitted } from "../session-store.js";
import { freezeEntry, type EntryDraft, type EntryRecord } from "./entries.js";

// ── 接口 ────────────────────────────────────────────────────────

export interface DurableStore {
  /** 存储的名字，写进提示与错误里：jsonl 或 sqlite。 */
  readonly kind: "jsonl" | "sqlite";
  /** 全部已提交的条目，按 id 排好；没提交完的一批不在里面。 */
  load(): Promise<EntryRecord[]>;
  /** 原子地提交一批条目：返回时它们已经落盘；抛出时调用方不知道它们在不在。 */
  commit(records: readonly EntryRecord[]): Promise<void>;
  close(): Promise<void>;
}

export interface DurableStoreOptions {
  /**
   * 只给崩溃测试用：提交做到一半时同步调用（JSONL：这一批的那一行写了、换行还没写；
   * SQLite：事务里的行插好了、还没 COMMIT）。测试在这里把进程杀掉。
   */
  crashPoint?: () => void;
}

/** 存储的失败。nothingWritten 为真时可以确定什么也没写（例如条目根本编码不成 JSON），会话不必停用。 */
export class DurableStoreError extends Error {
  readonly nothingWritten: boolean;
  constructor(message: string, nothingWritten: boolean) {
    super(message);
    this.name = "DurableStoreError";
    this.nothingWritten = nothingWritten;
  }
}

/** 会话停用之后的每个操作都抛出它，说的是同一句话。 */
export class PoisonedSessionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PoisonedSessionError";
  }
}

/** 写进存储的一条记录：除了 id 与 commitSeq 的所有字段（两者另外存）。 */
function recordOf(entry: EntryRecord): EntryDraft {
  const { id: _id, commitSeq: _seq, ...record } = entry;
  return record;
}

function encodeRecord(entry: EntryRecord): string {
  try {
    const json = JSON.stringify(recordOf(entry));
    if (typeof json !== "string") throw new Error("不是一个对象");
    return json;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DurableStoreError(`条目 ${entry.id} 编码不成 JSON（${reason}）：什么也没写。`, true);
  }
}

function decodeRecord(id: number, commitSeq: number, json: string, where: string): EntryRecord {
  let record: unknown;
  try {
    record = JSON.parse(json);
  } catch {
    throw new DurableStoreError(`${where}：已提交的条目 ${id} 不是合法的 JSON，拒绝打开。`, true);
  }
  if (record === null || typeof record !== "object" || typeof (record as EntryDraft).kind !== "string") {
    throw new DurableStoreError(`${where}：已提交的条目 ${id} 没有 kind，拒绝打开。`, true);
  }
  return freezeEntry({ ...(record as EntryDraft), id, commitSeq });
}

// ── JSONL：一次提交一行，换行符就是“已提交” ─────────────────────

interface CommitLine {
  commitSeq: number;
  entries: ({ id: number } & EntryDraft)[];
}

export class JsonlDurableStore implements DurableStore {
  readonly kind = "jsonl" as const;
  readonly path: string;
  private readonly options: DurableStoreOptions;
  /** 残行只在第一次提交之前截一次（与第 10 章相同）。 */
  private tailCut = false;

  constructor(path: string, options: DurableStoreOptions = {}) {
    this.path = path;
    this.options = options;
  }

  async load(): Promise<EntryRecord[]> {
    // #region lab 19.4
    const bytes = await readIfExists(this.path);
    // 第 10 章的规矩：最后一个换行符之后的残行从未提交，不算数。
    const { lines } = splitCommitted(bytes);
    const entries: EntryRecord[] = [];
    lines.forEach((line, index) => {
      const where = `${this.path} 第 ${index + 1} 行`;
      let commit: CommitLine;
      try {
        commit = JSON.parse(line) as CommitLine;
      } catch {
        throw new DurableStoreError(`${where}：已提交的一行不是合法的 JSON，拒绝打开。`, true);
      }
      for (const entry of commit.entries) entries.push(decodeRecord(entry.id, commit.commitSeq, JSON.stringify(entry), where));
    });
    return entries;
    // #endregion
  }

  async commit(records: readonly EntryRecord[]): Promise<void> {
    // #region lab 19.4
    if (records.length === 0) return;
    // 先编码整批：编码不成时什么也没写。
    const commitSeq = records[0]!.commitSeq;
    const body = `{"commitSeq":${commitSeq},"entries":[${records.map((entry) => `{"id":${entry.id},${encodeRecord(entry).slice(1)}`).join(",")}]}`;
    if (!this.tailCut) await this.cutTornTail();
    this.tailCut = true;
    const handle = await open(this.path, "a");
    try {
      // 整批是一行：行写完、换行符落盘之前，这一批都不算提交。
      await handle.write(body);
      this.options.crashPoint?.();
      await handle.write("\n");
      await handle.sync();
    } finally {
      await handle.close();
    }
    // #endregion
  }

  async close(): Promise<void> {}

  // #region lab 19.4 辅助
  private async cutTornTail(): Promise<void> {
    const bytes = await readIfExists(this.path);
    const end = committedLength(bytes);
    if (end < bytes.length) await truncate(this.path, end);
  }
  // #endregion
}

async function readIfExists(file: string): Promise<Uint8Array> {
  try {
    await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Uint8Array();
    throw error;
  }
  return readFile(file);
}

// ── SQLite：entries 表，一批一个事务，WAL ───────────────────────

/** node:sqlite 里本章用到的那一小部分（@types/node 20 还没有它的类型）。 */
interface SqliteStatement {
  run(...values: unknown[]): unknown;
  all(...values: unknown[]): unknown[];
  get(...values: unknown[]): unknown;
}
interface SqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
}
interface SqliteModule {
  DatabaseSync: new (path: string) => SqliteDatabase;
}

let sqliteModule: Promise<SqliteModule | undefined> | undefined;

/** 这一版 Node 有没有内置的 node:sqlite（22.13 起有，Node 20 没有）：有就交回模块，没有就是 undefined。 */
export function loadSqlite(): Promise<SqliteModule | undefined> {
  const name = "node:sqlite";
  sqliteModule ??= (import(name) as Promise<SqliteModule>).catch(() => undefined);
  return sqliteModule;
}

export const SQLITE_SCHEMA = `CREATE TABLE IF NOT EXISTS entries (
  id INTEGER PRIMARY KEY,
  commit_seq INTEGER NOT NULL,
  record TEXT NOT NULL
)`;

export class SqliteDurableStore implements DurableStore {
  readonly kind = "sqlite" as const;
  readonly path: string;
  private readonly db: SqliteDatabase;
  private readonly options: DurableStoreOptions;

  private constructor(path: string, db: SqliteDatabase, options: DurableStoreOptions) {
    this.path = path;
    this.db = db;
    this.options = options;
  }

  /** 打开（或建出）数据库。这一版 Node 没有 node:sqlite 时抛出，说明要哪一版。 */
  static async open(path: string, options: DurableStoreOptions = {}): Promise<SqliteDurableStore> {
    // #region lab 19.4
    const sqlite = await loadSqlite();
    if (sqlite === undefined) {
      throw new DurableStoreError(`Node ${process.version} 没有内置的 node:sqlite（要 Node 22.13 或更新）：请改用 JSONL 存储。`, true);
    }
    const db = new sqlite.DatabaseSync(path);
    // WAL：提交只追加到日志文件，读的人不挡写的人；FULL：COMMIT 返回之前日志已经落盘。
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    db.exec(SQLITE_SCHEMA);
    return new SqliteDurableStore(path, db, options);
    // #endregion
  }

  async load(): Promise<EntryRecord[]> {
    // #region lab 19.4
    const rows = this.db.prepare("SELECT id, commit_seq, record FROM entries ORDER BY id").all() as { id: number; commit_seq: number; record: string }[];
    return rows.map((row) => decodeRecord(Number(row.id), Number(row.commit_seq), row.record, this.path));
    // #endregion
  }

  async commit(records: readonly EntryRecord[]): Promise<void> {
    // #region lab 19.4
    if (records.length === 0) return;
    const rows = records.map((entry) => [entry.id, entry.commitSeq, encodeRecord(entry)] as const);
    const insert = this.db.prepare("INSERT INTO entries (id, commit_seq, record) VALUES (?, ?, ?)");
    this.db.exec("BEGIN IMMEDIATE");
    try {
      for (const row of rows) insert.run(...row);
      this.options.crashPoint?.();
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
    // #endregion
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/** 在 dir 里打开一份存储：sqlite 要这一版 Node 有 node:sqlite。 */
export async function openStore(kind: "jsonl" | "sqlite", file: string, options: DurableStoreOptions = {}): Promise<DurableStore> {
  return kind === "sqlite" ? SqliteDurableStore.open(file, options) : new JsonlDurableStore(file, options);
}

// ── DurableLog：提交之后才看得见 ────────────────────────────────

export type LogListener = (entries: readonly EntryRecord[]) => void;

export class DurableLog {
  readonly store: DurableStore;
  private readonly committed: EntryRecord[];
  private readonly listeners: LogListener[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private poison: PoisonedSessionError | undefined;

  private constructor(store: DurableStore, entries: EntryRecord[]) {
    this.store = store;
    this.committed = entries;
  }

  static async open(store: DurableStore): Promise<DurableLog> {
    return new DurableLog(store, await store.load());
  }

  /** 已提交、已显示的条目（冻住的副本）。 */
  get entries(): readonly EntryRecord[] {
    this.assertUsable();
    return Object.freeze([...this.committed]);
  }

  get poisoned(): PoisonedSessionError | undefined {
    return this.poison;
  }

  /** 每次提交之后拿到这一批新条目。 */
  subscribe(listener: LogListener): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index !== -1) this.listeners.splice(index, 1);
    };
  }

  /** 等前面排着的提交都做完（成功或失败）。 */
  async settled(): Promise<void> {
    await this.queue.catch(() => undefined);
  }

  /** 追加一批条目：排在前面的提交之后，原子地提交；提交返回之后才进 entries、才通知订阅者。 */
  append(drafts: readonly EntryDraft[]): Promise<readonly EntryRecord[]> {
    // 现在就拷一份：调用方之后再改那个对象，也改不到排队等着提交的条目。
    const copies = drafts.map((draft) => structuredClone(draft));
    const work = this.queue.catch(() => undefined).then(() => this.commitNow(copies));
    this.queue = work;
    return work;
  }

  private assertUsable(): void {
    if (this.poison !== undefined) throw this.poison;
  }

  private async commitNow(drafts: readonly EntryDraft[]): Promise<readonly EntryRecord[]> {
    // #region lab 19.4
    this.assertUsable();
    if (drafts.length === 0) return [];
    const last = this.committed[this.committed.length - 1];
    const commitSeq = (last?.commitSeq ?? 0) + 1;
    const records = drafts.map((draft, index) => freezeEntry({ ...draft, id: (last?.id ?? 0) + index + 1, commitSeq }));
    try {
      await this.store.commit(records);
    } catch (error) {
      if (error instanceof DurableStoreError && error.nothingWritten) throw error;
      // 不知道这一批在不在存储里：从此拒绝一切，不显示任何可能没存下的东西。
      const reason = error instanceof Error ? error.message : String(error);
      this.poison = new PoisonedSessionError(`会话记录已停用：第 ${commitSeq} 次提交的结局不确定（${reason}）。为了不显示可能没存下的条目，之后的每个操作都会拒绝；请重新打开会话。`);
      throw this.poison;
    }
    this.committed.push(...records);
    for (const listener of [...this.listeners]) listener(records);
    return records;
    // #endregion
  }
}
