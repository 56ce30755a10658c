/**
 * 会话条目：会话文件里的一行就是一个条目。每个条目带着 id 和 parentId，于是整份文件是一棵树；
 * timestamp 是条目写下的时刻（ISO 8601 字符串，与消息自己的毫秒时间戳无关）。
 *
 * 文件是外部世界：它可能被手改、被截断、被别的版本写过。所以读回来的每一行都先当作 unknown，
 * 逐个字段收窄成 SessionEntry；哪一行、哪个条目、哪个字段不对，错误里都要说出来。
 */

import type { AgentMessage, StopReason, TextContent } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface SessionEntryBase {
  type: string;
  /** 在这份会话里唯一。 */
  id: string;
  /** 父条目的 id；null 表示它是一棵树的根。父条目总是写在它前面。 */
  parentId: string | null;
  /** 条目写下的时刻，ISO 8601。 */
  timestamp: string;
}

/** Agent 的 transcript 里的一条消息，原样保存。 */
export interface SessionMessageEntry extends SessionEntryBase {
  type: "message";
  message: AgentMessage;
}

/** 应用自己的状态（审计记录、进度……）：保存、可以重放给界面，但从不进模型的上下文。 */
export interface CustomEntry<T = unknown> extends SessionEntryBase {
  type: "custom";
  customType: string;
  data?: T;
}

/** 一条 custom 角色的消息：重建上下文时变回消息，content 会以 user 身份交给模型。 */
export interface CustomMessageEntry<T = unknown> extends SessionEntryBase {
  type: "custom_message";
  customType: string;
  content: string | TextContent[];
  /** 给界面看：要不要显示它。 */
  display: boolean;
  /** 给程序看的结构化附加信息，不发给模型。 */
  details?: T;
}

/** 给某个条目贴上书签；label 为 undefined（写进文件就是没有这个字段）表示撤掉。 */
export interface LabelEntry extends SessionEntryBase {
  type: "label";
  targetId: string;
  label: string | undefined;
}

/** 一次压缩：firstKeptEntryId 之前的历史在上下文里由 summary 代替（条目本身一条不删）。 */
export interface CompactionEntry extends SessionEntryBase {
  type: "compaction";
  summary: string;
  /** 原样保留的第一个条目；它必须在这个压缩条目之前的路径上。 */
  firstKeptEntryId: string;
  /** 压缩之前上下文的估算 token 数。 */
  tokensBefore: number;
}

/** 离开一条分支时留下的摘要，挂在新分支的起点下面；fromId 记的就是那个起点。 */
export interface BranchSummaryEntry extends SessionEntryBase {
  type: "branch_summary";
  fromId: string;
  summary: string;
}

/**
 * 会话文件里可以出现的全部条目。以后的章节在这里加新种类，
 * 下面的 ENTRY_READERS 是一张按 type 索引的表：漏登记一种，tsc 当场报错。
 */
export type SessionEntry = SessionMessageEntry | CustomEntry | CustomMessageEntry | LabelEntry | CompactionEntry | BranchSummaryEntry;

export type SessionEntryErrorCode = "invalid_json" | "invalid_entry" | "broken_link";

/** 会话文件（或内存里同样格式的行）有一行不对：说出第几行、哪个条目、哪个字段。 */
export class SessionEntryError extends Error {
  readonly code: SessionEntryErrorCode;
  /** 从 1 开始的行号。 */
  readonly line: number;
  readonly field: string | undefined;
  readonly entryId: string | undefined;

  constructor(code: SessionEntryErrorCode, line: number, problem: string, field?: string, entryId?: string) {
    const who = entryId === undefined ? `第 ${line} 行` : `第 ${line} 行（条目 ${entryId}）`;
    const what = field === undefined ? problem : `字段 ${field} ${problem}`;
    super(`${who}：${what}`);
    this.name = "SessionEntryError";
    this.code = code;
    this.line = line;
    this.field = field;
    this.entryId = entryId;
  }
}

/**
 * 写不进会话的原因，程序按 code 分辨：
 *   unstorable   值在 JSON 里存不下（BigInt、函数、循环引用……），这次追加当场拒绝
 *   not_a_file   会话路径是目录、FIFO 或设备，不能当会话文件
 *   locked       另一个写入者此刻正拿着写锁
 *   changed      这个写入者读过之后，文件被另一个写入者改过
 *   short_write  一行没能一次写完
 *   unwritable   之前有一次写入失败：这个会话不再接受新的东西
 */
export type SessionStoreErrorCode = "unstorable" | "not_a_file" | "locked" | "changed" | "short_write" | "unwritable";

export class SessionStoreError extends Error {
  readonly code: SessionStoreErrorCode;

  constructor(code: SessionStoreErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "SessionStoreError";
    this.code = code;
  }
}

// ── 纯函数：一行 unknown → 一个条目 ─────────────────────────────

type Fields = Record<string, unknown>;

function isFields(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  if (value === undefined) return "缺失";
  const json = JSON.stringify(value);
  return json.length > 60 ? `${json.slice(0, 60)}…` : json;
}

function isTextBlocks(value: unknown): value is TextContent[] {
  return Array.isArray(value) && value.every((block) => isFields(block) && block.type === "text" && typeof block.text === "string");
}

/**
 * 只认识一个条目（或条目里嵌着的一个对象）的字段：每个读取方法要么交回收窄后的值，
 * 要么抛出指名字段的错误。嵌套对象的字段名带着路径（message.content[0].text），错误指到具体的位置。
 */
class EntryFields {
  constructor(
    private readonly fields: Fields,
    private readonly line: number,
    private readonly entryId: string | undefined,
    private readonly path = "",
  ) {}

  fail(field: string, problem: string): never {
    throw new SessionEntryError("invalid_entry", this.line, problem, this.path + field, this.entryId);
  }

  /** 一个嵌着的对象：交回读它的 EntryFields，它的字段名前面带着 field。 */
  object(field: string, what: string): EntryFields {
    const value = this.fields[field];
    if (!isFields(value)) this.fail(field, `应当是${what}（对象），这里是 ${shown(value)}`);
    return new EntryFields(value, this.line, this.entryId, `${this.path}${field}.`);
  }

  /** 一个对象数组：每一项交给 each 检查；省略时 optional 为 true 就放行。 */
  list(field: string, what: string, each: (read: EntryFields) => void, optional = false): void {
    const value = this.fields[field];
    if (optional && value === undefined) return;
    if (!Array.isArray(value)) this.fail(field, `应当是${what}的数组${optional ? "或省略" : ""}，这里是 ${shown(value)}`);
    value.forEach((item, index) => {
      if (!isFields(item)) this.fail(`${field}[${index}]`, `应当是${what}（对象），这里是 ${shown(item)}`);
      each(new EntryFields(item, this.line, this.entryId, `${this.path}${field}[${index}].`));
    });
  }

  /** 任何字符串，空串也行（文字块、system 的 content）。 */
  text(field: string): string {
    const value = this.fields[field];
    if (typeof value !== "string") this.fail(field, `应当是字符串，这里是 ${shown(value)}`);
    return value;
  }

  number(field: string): number {
    const value = this.fields[field];
    if (typeof value !== "number" || !Number.isFinite(value)) this.fail(field, `应当是数字，这里是 ${shown(value)}`);
    return value;
  }

  oneOf<T extends string>(field: string, allowed: readonly T[]): T {
    const value = this.fields[field];
    if (!allowed.includes(value as T)) this.fail(field, `应当是 ${allowed.join("、")} 之一，这里是 ${shown(value)}`);
    return value as T;
  }

  string(field: string): string {
    const value = this.fields[field];
    if (typeof value !== "string" || value === "") this.fail(field, `应当是非空字符串，这里是 ${shown(value)}`);
    return value;
  }

  optionalString(field: string): string | undefined {
    const value = this.fields[field];
    if (value !== undefined && typeof value !== "string") this.fail(field, `应当是字符串或省略，这里是 ${shown(value)}`);
    return value;
  }

  count(field: string): number {
    const value = this.fields[field];
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) this.fail(field, `应当是非负整数，这里是 ${shown(value)}`);
    return value;
  }

  boolean(field: string): boolean {
    const value = this.fields[field];
    if (typeof value !== "boolean") this.fail(field, `应当是 true 或 false，这里是 ${shown(value)}`);
    return value;
  }

  content(field: string): string | TextContent[] {
    const value = this.fields[field];
    if (typeof value !== "string" && !isTextBlocks(value)) this.fail(field, `应当是字符串或文字块数组，这里是 ${shown(value)}`);
    return value;
  }

  /** 任何 JSON 值都行（也可以省略）：它属于写下它的应用，这里不替它检查。 */
  anything(field: string): unknown {
    return this.fields[field];
  }

  /**
   * 一条消息：role 与 timestamp，再按 MESSAGE_SHAPES 查本课程认识的角色，查到每一块内容。
   * 打开时收下的消息，之后的 prompt 都要能直接用：放过一个 content: [null]，崩溃就推迟到了下一次请求。
   * 应用用声明合并登记的角色在这里不认识，只查信封、原样放行，交给 convertToLlm 决定去留。
   */
  message(field: string): AgentMessage {
    const read = this.object(field, "一条消息");
    const role = read.string("role");
    read.number("timestamp");
    if (Object.hasOwn(MESSAGE_SHAPES, role)) MESSAGE_SHAPES[role]!(read);
    return this.fields[field] as AgentMessage;
  }
}

// ── 消息的形状：打开时查到每一块 ────────────────────────────────

const STOP_REASONS: readonly StopReason[] = ["stop", "length", "toolUse", "error", "aborted"];

function textBlock(read: EntryFields): void {
  read.oneOf("type", ["text"]);
  read.text("text");
}

function assistantBlock(read: EntryFields): void {
  if (read.oneOf("type", ["text", "toolCall"]) === "text") return textBlock(read);
  read.string("id");
  read.string("name");
  read.optionalString("rawArguments");
}

function toolDefinition(read: EntryFields): void {
  read.string("name");
  read.text("description");
  read.object("parameters", "JSON Schema");
}

/** 本课程认识的角色各自的字段；这里查过的，convertToLlm 与 Provider 都可以放心直接读。 */
const MESSAGE_SHAPES: Readonly<Record<string, (read: EntryFields) => void>> = {
  system: (read) => {
    read.text("content");
    read.list("toolsAdded", "工具定义", toolDefinition, true);
    read.list("toolsRemoved", "工具引用", (tool) => void tool.string("name"), true);
    const sections = read.anything("sections");
    if (sections !== undefined && !(isFields(sections) && Object.values(sections).every((body) => body === null || typeof body === "string"))) {
      read.fail("sections", `应当是“段落名 → 字符串或 null”的对象或省略，这里是 ${shown(sections)}`);
    }
  },
  user: (read) => read.list("content", "文字块", textBlock),
  assistant: (read) => {
    read.list("content", "文字块或工具调用", assistantBlock);
    read.string("provider");
    read.string("model");
    const usage = read.object("usage", "用量");
    for (const count of ["input", "output", "totalTokens"]) usage.number(count);
    read.oneOf("stopReason", STOP_REASONS);
    read.optionalString("errorMessage");
  },
  toolResult: (read) => {
    read.string("toolCallId");
    read.string("toolName");
    read.list("content", "文字块", textBlock);
    read.boolean("isError");
  },
  custom: (read) => {
    read.string("customType");
    read.content("content");
    read.boolean("display");
  },
};

/** 每种条目自己的字段。键是条目的 type：SessionEntry 多一种而这里没登记，tsc 报错。 */
const ENTRY_READERS: {
  [K in SessionEntry["type"]]: (read: EntryFields, base: SessionEntryBase) => Extract<SessionEntry, { type: K }>;
} = {
  message: (read, base) => ({ ...base, type: "message", message: read.message("message") }),
  custom: (read, base) => {
    const entry: CustomEntry = { ...base, type: "custom", customType: read.string("customType") };
    const data = read.anything("data");
    if (data !== undefined) entry.data = data;
    return entry;
  },
  custom_message: (read, base) => {
    const entry: CustomMessageEntry = {
      ...base,
      type: "custom_message",
      customType: read.string("customType"),
      content: read.content("content"),
      display: read.boolean("display"),
    };
    const details = read.anything("details");
    if (details !== undefined) entry.details = details;
    return entry;
  },
  label: (read, base) => ({ ...base, type: "label", targetId: read.string("targetId"), label: read.optionalString("label") }),
  compaction: (read, base) => ({
    ...base,
    type: "compaction",
    summary: read.string("summary"),
    firstKeptEntryId: read.string("firstKeptEntryId"),
    tokensBefore: read.count("tokensBefore"),
  }),
  branch_summary: (read, base) => ({ ...base, type: "branch_summary", fromId: read.string("fromId"), summary: read.string("summary") }),
};

function isEntryType(type: unknown): type is SessionEntry["type"] {
  return typeof type === "string" && Object.hasOwn(ENTRY_READERS, type);
}

/**
 * 边界上的收窄：一行 JSON.parse 出来的 unknown → 一个 SessionEntry，否则抛出 SessionEntryError。
 * 先查四个公共字段（id 先查，后面的错误就能说出是哪个条目），再按 type 查各自的字段。
 */
export function decodeEntry(value: unknown, line: number): SessionEntry {
  // #region lab 10.1
  if (!isFields(value)) throw new SessionEntryError("invalid_entry", line, `应当是一个 JSON 对象，这里是 ${shown(value)}`);
  const id = value.id;
  if (typeof id !== "string" || id === "") {
    throw new SessionEntryError("invalid_entry", line, `应当是非空字符串，这里是 ${shown(id)}`, "id");
  }
  // 显式标注类型：这样 read.fail(…) 返回 never 才会参与收窄。
  const read: EntryFields = new EntryFields(value, line, id);
  const { type, parentId, timestamp } = value;
  if (!isEntryType(type)) read.fail("type", `不是认识的条目种类（${Object.keys(ENTRY_READERS).join("、")}），这里是 ${shown(type)}`);
  if (parentId !== null && (typeof parentId !== "string" || parentId === "")) {
    read.fail("parentId", `应当是非空字符串或 null，这里是 ${shown(parentId)}`);
  }
  if (typeof timestamp !== "string" || Number.isNaN(Date.parse(timestamp))) {
    read.fail("timestamp", `应当是 ISO 8601 时间字符串，这里是 ${shown(timestamp)}`);
  }
  return ENTRY_READERS[type](read, { type, id, parentId, timestamp });
  // #endregion
}

/**
 * 整份会话的连接关系：id 不重复；parentId 与 label 的 targetId 都指向写在前面的条目。
 * 追加式的写入者天然满足这几条，所以违反它们只能说明文件坏了，或者写入顺序乱了。
 * lines 是每个条目所在的行号（跳过的空行不占条目）；省略时就是 1、2、3……
 */
export function checkLinks(entries: readonly SessionEntry[], lines: readonly number[] = entries.map((_, index) => index + 1)): void {
  // #region lab 10.1
  const lineOf = new Map<string, number>();
  for (const [index, entry] of entries.entries()) {
    const line = lines[index] ?? index + 1;
    const earlier = lineOf.get(entry.id);
    if (earlier !== undefined) throw new SessionEntryError("broken_link", line, `与第 ${earlier} 行重复`, "id", entry.id);
    if (entry.parentId !== null && !lineOf.has(entry.parentId)) {
      throw new SessionEntryError("broken_link", line, `指向的 ${entry.parentId} 不在它前面的任何一行里`, "parentId", entry.id);
    }
    if (entry.type === "label" && !lineOf.has(entry.targetId)) {
      throw new SessionEntryError("broken_link", line, `指向的 ${entry.targetId} 不在它前面的任何一行里`, "targetId", entry.id);
    }
    // #endregion
    // #region lab 11.2 扩展
    if (entry.type === "compaction" && !lineOf.has(entry.firstKeptEntryId)) {
      throw new SessionEntryError("broken_link", line, `指向的 ${entry.firstKeptEntryId} 不在它前面的任何一行里`, "firstKeptEntryId", entry.id);
    }
    // #endregion
    // #region lab 10.1
    lineOf.set(entry.id, line);
  }
  // #endregion
}

// ── 写出去：只写 JSON 原样存得下的值 ─────────────────────────────

function pathOf(path: string, key: string | number): string {
  if (typeof key === "number") return `${path}[${key}]`;
  return path === "" ? key : `${path}.${key}`;
}

/**
 * value 里第一处 JSON 存不下（或存下之后读回来不一样）的地方；全都存得下就交回 undefined。
 * 存得下的只有 null、布尔、有限的数、字符串、数组和普通对象。对象里值为 undefined 的字段没关系：
 * 它本来就表示“没有这个字段”，写进文件就是省略，读回来还是没有。
 */
export function unstorablePart(value: unknown, path = "", ancestors = new Set<object>()): string | undefined {
  // #region lab 10.1
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${path} 是 ${value}，JSON 里没有这个数`;
    case "bigint":
      return `${path} 是 BigInt（${value}n），JSON 表示不了它`;
    case "function":
    case "symbol":
      return `${path} 是${typeof value === "function" ? "一个函数" : "一个 Symbol"}，JSON 会把它悄悄丢掉`;
    case "undefined":
      return `${path} 是 undefined，数组里的 undefined 会变成 null`;
  }
  if (typeof value !== "object" || value === null) return undefined;
  if (ancestors.has(value)) return `${path} 引用了包含它的对象（循环引用）`;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    return `${path} 是 ${value.constructor?.name ?? "带原型的对象"}，不是普通对象，JSON 读回来就不是它了`;
  }
  ancestors.add(value);
  const parts: [string | number, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  for (const [key, item] of parts) {
    if (item === undefined && typeof key === "string") continue;
    const problem = unstorablePart(item, pathOf(path, key), ancestors);
    if (problem !== undefined) return problem;
  }
  ancestors.delete(value);
  return undefined;
  // #endregion
}

/** 存不下就当场抛出 unstorable：什么也还没写，调用方这一次失败，别的都不受影响。 */
export function assertStorable(value: unknown, what: string): void {
  const problem = unstorablePart(value);
  if (problem !== undefined) {
    throw new SessionStoreError("unstorable", `${what}存不进会话文件：${problem}。会话文件里存的必须与内存里的一模一样，所以这一次被拒绝，什么也没写。`);
  }
}

/** 一个条目写成一行：JSON 里的换行都被转义，所以一行里不会出现真正的换行符。 */
export function encodeEntry(entry: SessionEntry): string {
  assertStorable(entry, `${entry.type} 条目`);
  return JSON.stringify(entry);
}

/**
 * 已经提交的各行 → 条目。任何一行不对都整体失败：跳过一行，后面的条目就会接到错误的父节点上。
 * 空行例外：它不承载任何条目（手工编辑常会留下一个），跳过它不会让哪个条目失去父亲。
 */
export function decodeLines(lines: readonly string[]): SessionEntry[] {
  // #region lab 10.1
  const entries: SessionEntry[] = [];
  const numbers: number[] = [];
  for (const [index, text] of lines.entries()) {
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new SessionEntryError("invalid_json", index + 1, `不是合法的 JSON（${(error as Error).message}）`);
    }
    entries.push(decodeEntry(value, index + 1));
    numbers.push(index + 1);
  }
  checkLinks(entries, numbers);
  return entries;
  // #endregion
}
