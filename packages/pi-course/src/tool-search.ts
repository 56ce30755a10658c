/**
 * tool_search：模型用一句话找 deferred 工具，找到的就加载。
 *
 * 它自己是 model-only：声明给模型，只能由模型直接调用（脚本里找工具没有意义，脚本本来就能调用 deferred 工具）。
 * 交回的文字写给模型，所以是英文：加载了哪些、什么时候能用、为了守住上限卸载了哪些。
 */

import { rankBm25, toolDocument, type Ranked } from "./bm25.js";
import { s, toJsonSchema } from "./schema.js";
import type { ToolActivation } from "./tool-activation.js";
import { defineTool, type AgentTool } from "./tools.js";
import { text } from "./types.js";

export const TOOL_SEARCH_NAME = "tool_search";
export const DEFAULT_SEARCH_LIMIT = 3;

export interface ToolSearchDetails {
  kind: "tool_search";
  query: string;
  matches: Ranked[];
  loaded: string[];
  unloaded: string[];
}

/** 交给模型的那段话。 */
export function searchReport(query: string, matches: readonly Ranked[], unloaded: readonly string[]): string {
  // #region lab 15.5
  if (matches.length === 0) return `No deferred tool matches "${query}". Try other words, or go on with the tools you have.`;
  const names = matches.map((match) => match.name).join(", ");
  const lines = [`Loaded ${matches.length} tool(s): ${names}. They are declared from the next request on; call them then.`];
  if (unloaded.length > 0) lines.push(`Unloaded (least recently used, to stay within the budget): ${unloaded.join(", ")}.`);
  return lines.join("\n");
  // #endregion
}

/** 在 activation 登记的 deferred 工具里按 BM25 检索，加载排在前面的至多 limit 个。 */
export function toolSearchTool(activation: ToolActivation, options: { limit?: number } = {}): AgentTool<any> {
  const documents = activation.tools.map((tool) =>
    toolDocument({ name: tool.name, description: tool.description, parameters: toJsonSchema(tool.parameters) }),
  );
  const limit = Math.min(options.limit ?? DEFAULT_SEARCH_LIMIT, activation.maxLoaded);
  return defineTool({
    name: TOOL_SEARCH_NAME,
    description:
      "Search the deferred tools by what they do and load the best matches. " +
      "Loaded tools are declared from the next request on. Use it when none of your tools fits the task.",
    parameters: s.object({ query: s.string("Words that describe the tool you need, e.g. \"convert currency\".") }),
    exposure: "model-only",
    async execute({ query }) {
      // #region lab 15.5
      const matches = rankBm25(documents, query, { limit });
      const change = activation.load(matches.map((match) => match.name));
      const details: ToolSearchDetails = { kind: "tool_search", query, matches, loaded: change.loaded, unloaded: change.unloaded };
      return { content: [text(searchReport(query, matches, change.unloaded))], details };
      // #endregion
    },
  });
}
