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

export type SchemaNode =
  | { kind: "string"; description?: string }
  | { kind: "number"; description?: string }
  | { kind: "integer"; description?: string }
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
  number: (description?: string): Schema<number> => described({ kind: "number" }, description),
  integer: (description?: string): Schema<number> => described({ kind: "integer" }, description),
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

/**
 * 按 schema 检查模型给的参数，通过则返回一份只含声明字段的新值。
 * 不合格就抛 SchemaError，path 指向第一个出错的位置。
 */
export function parse<T>(schema: Schema<T>, value: unknown): T {
  // 提示：写一个递归的 parseNode(node, value, path)，按 node.kind 分支；
  // object 的字段路径是 parent.key（根是空串），数组元素的路径是 parent[index]。
  throw new Error("Lab 6.1 尚未实现");
}

// ── 翻译：schema → 发给 Provider 的 JSON Schema ─────────────────

export function toJsonSchema(schema: SchemaNode): JsonSchema {
  // 提示：同样按 schema.kind 递归；optional 字段不进外层 object 的 required。
  throw new Error("Lab 6.1 尚未实现");
}
