/**
 * MCP 的配置：哪些服务器、怎样启动、工具以什么曝光级别进注册表。
 *
 *   <agent 目录>/mcp.json        用户自己写的，总是读。
 *   <项目>/.pi/mcp.json          仓库里带来的：只在信任的项目里读（第 12 章的信任决定）。
 *                                它写的是要在你机器上运行的命令，与项目扩展是同一种风险。同名的服务器以它为准。
 *
 *   { "mcpServers": { "fs": { "command": "node", "args": ["server.js", "."], "env": {}, "cwd": ".",
 *                             "timeoutMs": 30000, "exposure": "deferred" } } }
 *
 * 服务器名要合 ^[A-Za-z0-9_-]+$：它会出现在工具名 mcp__<服务器>__<工具> 里。写错的一项跳过并报告，不连累别的服务器。
 */

import { readFile } from "node:fs/promises";
import path from "node:path";

import type { ToolExposure } from "../tools.js";

export const SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;
const EXPOSURES: readonly ToolExposure[] = ["direct", "model-only", "codemode", "deferred", "hidden"];

export interface McpServerConfig {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** 子进程的工作目录：相对路径按配置文件所在的项目（或 agent 目录）解析；省略时是工作区。 */
  cwd?: string;
  timeoutMs?: number;
  exposure: ToolExposure;
  /** 这一项来自哪个文件。 */
  source: string;
}

export interface McpConfig {
  servers: McpServerConfig[];
  /** 跳过的项与读不了的文件，每条一句。 */
  problems: string[];
}

export function agentMcpFile(agentDir: string): string {
  return path.join(agentDir, "mcp.json");
}

export function projectMcpFile(cwd: string): string {
  return path.join(cwd, ".pi", "mcp.json");
}

/** 一个文件里的 mcpServers → 检查过的配置；错的项写进 problems。 */
export function parseMcpConfig(body: unknown, source: string, base: string): McpConfig {
  // #region lab 17.4
  const config: McpConfig = { servers: [], problems: [] };
  const servers = (body as { mcpServers?: unknown } | null)?.mcpServers;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    config.problems.push(`${source}：没有 mcpServers 对象。`);
    return config;
  }
  for (const [name, entry] of Object.entries(servers as Record<string, unknown>)) {
    const problem = entryProblem(name, entry);
    if (problem !== undefined) {
      config.problems.push(`${source}：跳过服务器 ${name}：${problem}`);
      continue;
    }
    const e = entry as Record<string, unknown>;
    config.servers.push({
      name,
      command: e.command as string,
      args: (e.args as string[] | undefined) ?? [],
      env: (e.env as Record<string, string> | undefined) ?? {},
      cwd: typeof e.cwd === "string" ? path.resolve(base, e.cwd) : undefined,
      timeoutMs: e.timeoutMs as number | undefined,
      exposure: (e.exposure as ToolExposure | undefined) ?? "deferred",
      source,
    });
  }
  return config;
  // #endregion
}

/** 读两个文件：agent 目录的总是读，项目的只在 trusted 时读；同名的以项目的为准。 */
export async function loadMcpConfig(options: { agentDir: string; cwd: string; trusted: boolean }): Promise<McpConfig> {
  // #region lab 17.4
  const files: [string, string][] = [[agentMcpFile(options.agentDir), options.agentDir]];
  if (options.trusted) files.push([projectMcpFile(options.cwd), options.cwd]);
  const byName = new Map<string, McpServerConfig>();
  const problems: string[] = [];
  for (const [file, base] of files) {
    const body = await readJson(file, problems);
    if (body === undefined) continue;
    const parsed = parseMcpConfig(body, file, base);
    problems.push(...parsed.problems);
    for (const server of parsed.servers) byName.set(server.name, server);
  }
  return { servers: [...byName.values()], problems };
  // #endregion
}

// #region lab 17.4 辅助
function entryProblem(name: string, entry: unknown): string | undefined {
  if (!SERVER_NAME_PATTERN.test(name)) return "名字只能用字母、数字、_ 与 -。";
  if (typeof entry !== "object" || entry === null) return "应当是一个对象。";
  const e = entry as Record<string, unknown>;
  if (typeof e.command !== "string" || e.command === "") return "command 应当是非空的字符串。";
  if (e.args !== undefined && !(Array.isArray(e.args) && e.args.every((arg) => typeof arg === "string"))) return "args 应当是字符串的数组。";
  if (e.env !== undefined && !(typeof e.env === "object" && e.env !== null && Object.values(e.env).every((v) => typeof v === "string"))) {
    return "env 应当是值为字符串的对象。";
  }
  if (e.timeoutMs !== undefined && !(typeof e.timeoutMs === "number" && e.timeoutMs > 0)) return "timeoutMs 应当是正数。";
  if (e.exposure !== undefined && !EXPOSURES.includes(e.exposure as ToolExposure)) return `exposure 应当是 ${EXPOSURES.join("、")} 之一。`;
  return undefined;
}

async function readJson(file: string, problems: string[]): Promise<unknown> {
  let body: string;
  try {
    body = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") problems.push(`${file}：读不了（${(error as Error).message}）。`);
    return undefined;
  }
  try {
    return JSON.parse(body);
  } catch (error) {
    problems.push(`${file}：不是 JSON（${(error as Error).message}）。`);
    return undefined;
  }
}
// #endregion
