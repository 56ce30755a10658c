// 测试结果的记录格式（test-reporter.mjs 写出，runner.ts 的 recordsIn 读回）：
// 每条记录一行 JSON，失败时带上断言的信息、actual / expected 与堆栈。

// 断言的 actual / expected 要穿过 JSON：正则、undefined、NaN、bigint 这些 JSON 表达不了的值
// 换成带标记的对象，runner.ts 的 reviveValue 再还原（否则 assert.match 的期望会变成 “{}”）。
const TAG = "$piCourse";

function encodeValue(value, seen = new Set()) {
  if (value instanceof RegExp) return { [TAG]: "regexp", source: value.source, flags: value.flags };
  if (value === undefined) return { [TAG]: "undefined" };
  if (typeof value === "bigint") return { [TAG]: "bigint", text: value.toString() };
  if (typeof value === "number" && !Number.isFinite(value)) return { [TAG]: "number", text: String(value) };
  if (typeof value === "symbol" || typeof value === "function") return { [TAG]: "text", text: String(value) };
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  if (seen.has(value)) return { [TAG]: "text", text: "[Circular]" };
  seen.add(value);
  const encoded =
    value instanceof Map
      ? { [TAG]: "map", entries: [...value].map(([key, item]) => [encodeValue(key, seen), encodeValue(item, seen)]) }
      : value instanceof Set
        ? { [TAG]: "set", values: [...value].map((item) => encodeValue(item, seen)) }
        : Array.isArray(value)
          ? value.map((item) => encodeValue(item, seen))
          : Object.fromEntries(Object.entries(value).map(([key, item]) => [key, encodeValue(item, seen)]));
  seen.delete(value);
  return encoded;
}

function serialisable(value) {
  try {
    const encoded = encodeValue(value);
    JSON.stringify(encoded);
    return encoded;
  } catch {
    return String(value);
  }
}

export function failureOf(error) {
  const root = error?.cause ?? error;
  if (root === null || typeof root !== "object") return { message: String(root) };
  const failure = { message: String(root.message ?? root) };
  if ("actual" in root) failure.actual = serialisable(root.actual);
  if ("expected" in root) failure.expected = serialisable(root.expected);
  if (typeof root.stack === "string") failure.stack = root.stack;
  return failure;
}


/** 测试进程的标准输出里，以它开头的行才是记录。 */
export const RECORD_PREFIX = "\u001e@pi-course ";
