/**
 * 适配器：把一个 MCP 服务器的工具放进第 15 章的注册表。
 *
 *   名字      mcp__<服务器>__<工具>，不合 ^[A-Za-z0-9_-]{1,64}$ 的字符换成 _；超过 64 个字符、或者与已有的名字撞了，
 *             就截短再接上原名的 8 位哈希。同一个原名永远得到同一个名字：会话续上时，transcript 里的调用还对得上。
 *   曝光      默认 deferred：一个服务器动辄几十个工具，先不声明，等 tool_search 找到再说；脚本里随时能调用。
 *   参数      服务器的 inputSchema 翻译成第 06 章的 schema（参数照样先检查再发出）；课程的 schema 写不出的
 *             （没有 type、联合类型……）整个工具跳过，报一个问题。
 *   结果      内容块映射成文字：text 原样；image 只写一句占位（课程的消息只有文字，base64 绝不倒进文字里）；
 *             只有 structuredContent 的结果写成它的 JSON；resource_link 写成“名字: uri”。isError 照样是 isError。
 *   变化      sync() 按服务器此刻的工具同步注册表：新的登记，去掉的从此调用就失败并说明原因。
 */

import { createHash } from "node:crypto";

import { s, type SchemaNode } from "../schema.js";
import { defineTool, type AgentTool, type ToolExposure, type ToolRegistry } from "../tools.js";
import { text, type TextContent } from "../types.js";
import type { McpCallResult, McpSession, McpToolInfo } from "./session.js";

export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_TOOL_NAME = 64;

/** 结果的 details：程序看得出这是哪个服务器的哪个工具。 */
export interface McpToolDetails {
  kind: "mcp";
  server: string;
  tool: string;
  structuredContent?: unknown;
}

// ── 名字 ────────────────────────────────────────────────────────

/** 服务器工具在注册表里的名字；taken 是已经用掉的名字。 */
export function mcpToolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  // #region lab 17.4
  const raw = `mcp__${server}__${tool}`;
  const clean = raw.replace(/[^A-Za-z0-9_-]/g, "_");
  if (clean.length <= MAX_TOOL_NAME && !taken.has(clean)) return clean;
  const hash = createHash("sha256").update(raw).digest("hex").slice(0, 8);
  return `${clean.slice(0, MAX_TOOL_NAME - hash.length - 1)}_${hash}`;
  // #endregion
}

// ── 参数 ────────────────────────────────────────────────────────

/** 服务器的 JSON Schema → 课程的 schema；写不出来就抛错，说明是哪一处。 */
export function schemaFromJson(json: unknown, at = "参数"): SchemaNode {
  // #region lab 17.4
  if (typeof json !== "object" || json === null) throw new Error(`${at} 不是一个 schema。`);
  const node = json as Record<string, unknown>;
  const description = typeof node.description === "string" ? node.description : undefined;
  const bounds = {
    ...(typeof node.minimum === "number" ? { minimum: node.minimum } : {}),
    ...(typeof node.maximum === "number" ? { maximum: node.maximum } : {}),
  };
  switch (node.type) {
    case "string":
      return s.string(description);
    case "number":
      return s.number(description, bounds);
    case "integer":
      return s.integer(description, bounds);
    case "boolean":
      return s.boolean(description);
    case "array":
      return s.array(schemaFromJson(node.items, `${at}[]`), description);
    case "object": {
      const properties = typeof node.properties === "object" && node.properties !== null ? (node.properties as Record<string, unknown>) : {};
      const required = new Set(Array.isArray(node.required) ? node.required : []);
      const fields = Object.entries(properties).map(([key, field]) => {
        const inner = schemaFromJson(field, `${at}.${key}`);
        return [key, required.has(key) ? inner : s.optional(inner)] as const;
      });
      return s.object(Object.fromEntries(fields), description);
    }
    default:
      throw new Error(`${at} 的类型 ${JSON.stringify(node.type)} 课程的 schema 写不出来。`);
  }
  // #endregion
}

// ── 结果 ────────────────────────────────────────────────────────

/** 一个内容块 → 模型读到的一段文字。 */
export function blockText(block: Record<string, unknown>): string {
  // #region lab 17.4
  switch (block.type) {
    case "text":
      return String(block.text);
    case "image":
    case "audio": {
      const size = typeof block.data === "string" ? Math.floor((block.data.length * 3) / 4) : 0;
      return `[${block.type} ${String(block.mimeType)}, ${size} bytes: not shown, this model reads text only]`;
    }
    case "resource_link":
      return `${String(block.name)}: ${String(block.uri)}`;
    case "resource": {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      return typeof resource.text === "string" ? resource.text : `[resource ${String(resource.uri)}: binary, not shown]`;
    }
    default:
      return `[${String(block.type)} content: not shown]`;
  }
  // #endregion
}

/** 整个结果 → 文字块；只有 structuredContent 时写它的 JSON。 */
export function resultContent(result: McpCallResult): TextContent[] {
  // #region lab 17.4
  if (result.content.length === 0 && result.structuredContent !== undefined) return [text(JSON.stringify(result.structuredContent))];
  return result.content.map((block) => text(blockText(block)));
  // #endregion
}

// ── 工具 ────────────────────────────────────────────────────────

export interface McpToolSetOptions {
  /** 这个服务器的工具的曝光级别；默认 deferred。 */
  exposure?: ToolExposure;
  /** 工具翻译不了时给人看的一句。 */
  onProblem?(problem: string): void;
}

/** 一个服务器的工具：名字稳定，sync() 跟着服务器此刻的工具走。 */
export class McpToolSet {
  /** 注册表名 → 工具；去掉的工具留在这里，只是调用会失败。 */
  private readonly byName = new Map<string, AgentTool<any>>();
  /** 服务器的原名 → 注册表名。 */
  private readonly names = new Map<string, string>();
  private offered = new Set<string>();

  constructor(
    readonly session: McpSession,
    private readonly options: McpToolSetOptions = {},
  ) {}

  /** 上一次 sync() 时服务器提供的工具（已经翻译好的）。 */
  get tools(): AgentTool<any>[] {
    return [...this.names].filter(([raw]) => this.offered.has(raw)).map(([, name]) => this.byName.get(name)!);
  }

  /** 按服务器此刻的工具同步（给了注册表就把新的登记进去），交回加了哪些、去掉了哪些。 */
  sync(registry?: ToolRegistry): { added: string[]; removed: string[] } {
    // #region lab 17.4
    const before = new Set(this.tools.map((tool) => tool.name));
    this.update(this.session.tools);
    const after = this.tools.map((tool) => tool.name);
    const added = after.filter((name) => !before.has(name));
    for (const name of added) if (registry !== undefined && registry.get(name) === undefined) registry.register(this.byName.get(name)!);
    return { added, removed: [...before].filter((name) => !after.includes(name)) };
    // #endregion
  }

  // #region lab 17.4 辅助
  private update(infos: readonly McpToolInfo[]): void {
    this.offered = new Set();
    for (const info of infos) {
      if (!this.names.has(info.name)) {
        const tool = this.translate(info);
        if (tool === undefined) continue;
        this.names.set(info.name, tool.name);
        this.byName.set(tool.name, tool);
      }
      this.offered.add(info.name);
    }
  }

  private translate(info: McpToolInfo): AgentTool<any> | undefined {
    const server = this.session.options.name;
    let parameters: SchemaNode;
    try {
      parameters = schemaFromJson(info.inputSchema);
    } catch (error) {
      this.options.onProblem?.(`跳过 MCP 服务器 ${server} 的工具 ${info.name}：${(error as Error).message}`);
      return undefined;
    }
    const name = mcpToolName(server, info.name, new Set(this.byName.keys()));
    return defineTool<any>({
      name,
      description: info.description ?? `Tool ${info.name} of the MCP server ${server}.`,
      parameters,
      exposure: this.options.exposure ?? "deferred",
      execute: async (args, context) => {
        if (!this.offered.has(info.name)) throw new Error(`MCP 服务器 ${server} 已经不再提供工具 ${info.name}。`);
        const result = await this.session.callTool(info.name, args, { signal: context.signal });
        const details: McpToolDetails = { kind: "mcp", server, tool: info.name };
        if (result.structuredContent !== undefined) details.structuredContent = result.structuredContent;
        return { content: resultContent(result), details, isError: result.isError === true };
      },
    });
  }
  // #endregion
}
