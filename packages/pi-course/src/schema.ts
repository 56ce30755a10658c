/**
 * 工具参数的 schema：同一份描述既把模型给的 unknown 收窄成有类型的值，
 * 又翻译成发给 Provider 的 JSON Schema。两边出自同一个对象，模型看到的约定
 * 和执行前检查的约定就不会各说各话。
 *
 *   const params = s.object({ path: s.string("相对工作区的路径"), limit: s.optional(s.integer()) });
 *   parse(params, toolCall.arguments)   // { path: string; limit?: number }，不合法就抛 SchemaError
 *   toJsonSchema(params)                // { type: "object", properties: {…}, required: ["path"], … }
 */

import type { JsonSchema } from "./types.js";

// ── schema 是数据 ───────────────────────────────────────────────

/** 只存在于类型层面的标记：记住一个 schema 收窄出的值是什么类型，运行时没有这个字段。 */
declare const narrowsTo: unique symbol;

/** 数的取值范围（含端点）：写进 JSON Schema 让模型看到，parse 也照同一份数字检查。 */
export interface Bounds {
  minimum?: number;
  maximum?: number;
}

export type SchemaNode =
  | { kind: "string"; description?: string }
  | ({ kind: "number"; description?: string } & Bounds)
  | ({ kind: "integer"; description?: string } & Bounds)
  | { kind: "boolean"; description?: string }
  | { kind: "array"; items: SchemaNode; description?: string }
  | { kind: "object"; properties: Record<string, SchemaNode>; description?: string }
  // 只在 object 的字段上有意义：这个字段可以不给。
  | { kind: "optional"; inner: SchemaNode };

/** 一个 schema 节点，外加它收窄出的值的类型 T。 */
export type Schema<T> = SchemaNode & { readonly [narrowsTo]?: T };

/** 从 schema 读出它收窄出的类型：Infer<typeof params>。 */
export type Infer<S> = S extends Schema<infer T> ? T : never;

type Shape = Record<string, Schema<unknown>>;
type OptionalKeys<S extends Shape> = {
  [K in keyof S]: S[K] extends { kind: "optional" } ? K : never;
}[keyof S];
type Flatten<T> = { [K in keyof T]: T[K] };

/** object 的值类型：optional 字段变成 `?:`，其余字段必填。 */
export type ObjectValue<S extends Shape> = Flatten<
  { [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & {
    [K in OptionalKeys<S>]?: Exclude<Infer<S[K]>, undefined>;
  }
>;

// ── 构造函数：只拼数据，不做检查 ────────────────────────────────

function described<N extends SchemaNode>(node: N, description: string | undefined): N {
  return description === undefined ? node : { ...node, description };
}

export const s = {
  string: (description?: string): Schema<string> => described({ kind: "string" }, description),
  number: (description?: string, bounds: Bounds = {}): Schema<number> =>
    described({ kind: "number", ...bounds }, description),
  integer: (description?: string, bounds: Bounds = {}): Schema<number> =>
    described({ kind: "integer", ...bounds }, description),
  boolean: (description?: string): Schema<boolean> => described({ kind: "boolean" }, description),
  array: <T>(items: Schema<T>, description?: string): Schema<T[]> =>
    described({ kind: "array", items }, description),
  object: <S extends Shape>(properties: S, description?: string): Schema<ObjectValue<S>> =>
    described({ kind: "object", properties }, description),
  optional: <T>(inner: Schema<T>): Schema<T | undefined> & { kind: "optional" } => ({
    kind: "optional",
    inner,
  }),
};

// ── 收窄：unknown → T，失败时指出路径 ───────────────────────────

/** 参数里第一个不合格的位置。path 形如 edits[1].oldText；空串表示整个参数对象。 */
export class SchemaError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`${path === "" ? "参数" : path} ${problem}`);
    this.name = "SchemaError";
  }
}

// #region lab 6.1 辅助
function describeValue(value: unknown): string {
  if (value === undefined) return "缺少这个字段";
  if (Array.isArray(value)) return "实际是数组";
  // JSON.stringify 会把 NaN 写成 null，数字照原样写出才不误导。
  if (typeof value === "number") return `实际是 ${value}`;
  return `实际是 ${JSON.stringify(value) ?? String(value)}`;
}

function expected(path: string, what: string, value: unknown): never {
  throw new SchemaError(path, `应当是${what}，${describeValue(value)}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fieldPath(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

/** 类型对了还要在范围里：offset: 0 是整数，却不是一个行号。 */
function withinBounds(bounds: Bounds, value: number, path: string): number {
  if (bounds.minimum !== undefined && value < bounds.minimum) {
    throw new SchemaError(path, `应当不小于 ${bounds.minimum}，实际是 ${value}`);
  }
  if (bounds.maximum !== undefined && value > bounds.maximum) {
    throw new SchemaError(path, `应当不大于 ${bounds.maximum}，实际是 ${value}`);
  }
  return value;
}

function parseObject(
  node: Extract<SchemaNode, { kind: "object" }>,
  value: unknown,
  path: string,
): Record<string, unknown> {
  if (!isRecord(value)) expected(path, "对象", value);
  // 拼错的可选参数（limt）不报错就会被悄悄忽略；指出来，模型才知道改名字。
  for (const key of Object.keys(value)) {
    if (!(key in node.properties)) throw new SchemaError(fieldPath(path, key), "不是这个工具的参数");
  }
  const result: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(node.properties)) {
    const child = value[key];
    if (child === undefined && field.kind === "optional") continue;
    result[key] = parseNode(field, child, fieldPath(path, key));
  }
  return result;
}

function parseNode(node: SchemaNode, value: unknown, path: string): unknown {
  switch (node.kind) {
    case "string":
      return typeof value === "string" ? value : expected(path, "字符串", value);
    case "number":
      if (typeof value !== "number" || !Number.isFinite(value)) return expected(path, "数字", value);
      return withinBounds(node, value, path);
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) return expected(path, "整数", value);
      return withinBounds(node, value, path);
    case "boolean":
      return typeof value === "boolean" ? value : expected(path, " true 或 false", value);
    case "array":
      if (!Array.isArray(value)) return expected(path, "数组", value);
      return value.map((item: unknown, index) => parseNode(node.items, item, `${path}[${index}]`));
    case "object":
      return parseObject(node, value, path);
    case "optional":
      return value === undefined ? undefined : parseNode(node.inner, value, path);
  }
}
// #endregion

/**
 * 按 schema 检查模型给的参数，通过则返回一份只含声明字段的新值。
 * 不合格就抛 SchemaError，path 指向第一个出错的位置。
 */
export function parse<T>(schema: Schema<T>, value: unknown): T {
  // #region lab 6.1
  // parseNode 逐个节点检查过的值，形状正是 Schema<T> 描述的 T。
  return parseNode(schema, value, "") as T;
  // #endregion
}

// ── 翻译：schema → 发给 Provider 的 JSON Schema ─────────────────

// #region lab 6.1 辅助
/** 只写出给了的端点：没有 minimum 就没有这个键。 */
function boundsOf(bounds: Bounds): JsonSchema {
  const json: JsonSchema = {};
  if (bounds.minimum !== undefined) json.minimum = bounds.minimum;
  if (bounds.maximum !== undefined) json.maximum = bounds.maximum;
  return json;
}

function withDescription(json: JsonSchema, node: { description?: string }): JsonSchema {
  return node.description === undefined ? json : { ...json, description: node.description };
}
// #endregion

export function toJsonSchema(schema: SchemaNode): JsonSchema {
  // #region lab 6.1
  switch (schema.kind) {
    case "string":
    case "boolean":
      return withDescription({ type: schema.kind }, schema);
    case "number":
    case "integer":
      return withDescription({ type: schema.kind, ...boundsOf(schema) }, schema);
    case "array":
      return withDescription({ type: "array", items: toJsonSchema(schema.items) }, schema);
    case "object": {
      const fields = Object.entries(schema.properties);
      const json: JsonSchema = {
        type: "object",
        properties: Object.fromEntries(fields.map(([key, field]) => [key, toJsonSchema(field)])),
        required: fields.filter(([, field]) => field.kind !== "optional").map(([key]) => key),
        additionalProperties: false,
      };
      return withDescription(json, schema);
    }
    case "optional":
      // 可不可以省略由外层 object 的 required 表达，字段本身的描述不变。
      return toJsonSchema(schema.inner);
  }
  // #endregion
}
