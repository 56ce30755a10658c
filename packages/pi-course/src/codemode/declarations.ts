/**
 * codemode 的工具说明：脚本能调用的工具，写成模型熟悉的 TypeScript 声明。
 *
 * 模型写脚本时要知道 tools 上有哪些函数、参数长什么样。工具的参数本来就是 JSON Schema，
 * 这里把它译成 TypeScript 的类型写进 codemode 的说明：认得出的照实写，认不出的写 unknown
 * （宁可宽，不可错：写错的类型会让模型自信地传错参数）。
 */

import type { JsonSchema, ToolDefinition } from "../types.js";

/** 能直接写成 TypeScript 属性名的名字照写，其余（例如带 `-` 的）加上引号。 */
export function propertyKey(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** 一个 JSON Schema 写成 TypeScript 的类型。 */
export function typeOfSchema(schema: JsonSchema): string {
  // #region lab 16.1
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(" | ") || "never";
  switch (schema.type) {
    case "string":
      return "string";
    case "number":
    case "integer":
      return "number";
    case "boolean":
      return "boolean";
    case "null":
      return "null";
    case "array": {
      const items = isSchema(schema.items) ? typeOfSchema(schema.items) : "unknown";
      return items.includes(" | ") ? `(${items})[]` : `${items}[]`;
    }
    case "object":
      return objectType(schema);
    default:
      return "unknown";
  }
  // #endregion
}

// #region lab 16.1 辅助
function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** 对象：每个属性一项，不在 required 里的带 `?`；没写 properties 的对象什么键都可能有。 */
function objectType(schema: JsonSchema): string {
  if (!isSchema(schema.properties)) return "Record<string, unknown>";
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = Object.entries(schema.properties).map(([key, field]) => {
    const type = isSchema(field) ? typeOfSchema(field) : "unknown";
    return `${propertyKey(key)}${required.has(key) ? "" : "?"}: ${type}`;
  });
  return fields.length === 0 ? "{}" : `{ ${fields.join("; ")} }`;
}
// #endregion

/** 一个工具的声明：说明写成注释，下面一行是 tools 上的那个函数。 */
export function toolDeclaration(tool: ToolDefinition): string {
  // #region lab 16.1
  const comments = tool.description.split("\n").map((line) => `  // ${line}`.trimEnd());
  return [...comments, `  ${propertyKey(tool.name)}(args: ${typeOfSchema(tool.parameters)}): Promise<string>;`].join("\n");
  // #endregion
}

/** codemode 工具的说明：怎样写脚本、有哪些限制，最后是脚本能调用的每个工具的声明。 */
export function codemodeDescription(tools: readonly ToolDefinition[]): string {
  const declarations = tools.length === 0 ? "declare const tools: {};" : `declare const tools: {\n${tools.map(toolDeclaration).join("\n")}\n};`;
  return [
    "Run a JavaScript snippet in a sandbox (QuickJS: no Node.js, no network, no file system; only the tools below).",
    "The snippet is the body of an async function: use `await`, and `return` a JSON-serialisable value; it becomes the result.",
    "Each tool returns a Promise of the tool's text and rejects with an Error when that call fails.",
    "`console.log` and friends are captured and returned with the result; `await sleep(ms)` waits (there is no setTimeout).",
    "",
    declarations,
  ].join("\n");
}
