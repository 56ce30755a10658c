/**
 * ls：列出工作区里的一个目录。tiny-pi 的第一个 deferred 工具——平时不占请求里的位置，
 * 模型要看目录时先用 tool_search 找到它（上游 pi 的 ls、find、grep 也是默认不启用的工具）。
 */

import { readdir } from "node:fs/promises";

import { s } from "./schema.js";
import { defineTool, type AgentTool } from "./tools.js";
import { text } from "./types.js";
import type { Workspace } from "./workspace.js";

/** 一次最多列出多少项：大目录只交回前面一段，并写明省略了多少。 */
export const LS_MAX_ENTRIES = 200;

export function lsTool(workspace: Workspace): AgentTool<any> {
  return defineTool({
    name: "ls",
    description: "List the entries of a directory in the workspace, sorted by name; directories end with a slash.",
    parameters: s.object({ path: s.optional(s.string("Directory to list, relative to the workspace; defaults to the root.")) }),
    exposure: "deferred",
    async execute({ path: input }) {
      const directory = await workspace.resolveExisting(input ?? ".");
      const entries = await readdir(directory, { withFileTypes: true });
      const names = entries.map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name)).sort();
      const shown = names.slice(0, LS_MAX_ENTRIES);
      const more = names.length - shown.length;
      const body = shown.length === 0 ? "（空目录）" : shown.join("\n");
      return { content: [text(more > 0 ? `${body}\n……还有 ${more} 项没有列出。` : body)], details: { count: names.length } };
    },
  });
}
