/**
 * 规范 JSON：同一个值永远写成同一串字节。
 *
 * 工具定义每次请求都要发给 Provider，排在消息前面。提供方的提示缓存按字节前缀命中：
 * 前缀里差一个字节，后面整段都要重新计算。JSON.stringify 按属性的插入顺序写键，
 * 同一份 schema 换个来源（读文件、MCP 服务器、另一个版本的构造函数）键序就可能不同，
 * 于是“同一个工具”看起来变了，被重新声明一次。比较之前先把键排好序，这件事就不会发生。
 */

import type { ToolDefinition } from "./types.js";

/** 对象的键按字典序排列，数组保持原顺序（数组的顺序本身就是值的一部分），其余照 JSON.stringify。 */
export function canonicalJson(value: unknown): string {
  // #region lab 15.1
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    // 与 JSON.stringify 一致：值为 undefined 的属性不写出来。sort() 按 UTF-16 码元比较，与语言环境无关。
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
  // #endregion
}

/** 两个工具定义是不是同一个：名字、说明、参数 schema 的规范 JSON 都相同。键序不算数。 */
export function sameDefinition(a: ToolDefinition, b: ToolDefinition): boolean {
  // #region lab 15.1
  return canonicalJson([a.name, a.description, a.parameters]) === canonicalJson([b.name, b.description, b.parameters]);
  // #endregion
}
