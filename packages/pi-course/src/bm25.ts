/**
 * 给工具打分：Okapi BM25，在工具的名字、说明和参数名上检索。
 *
 * 三百个工具里找出和一句话最相关的那几个。最朴素的办法是数查询里有几个词出现在工具里（词重叠），
 * 它有两个毛病：“the”“a”“for”这样到处都有的词和“invoice”一样算一分；说明写得越长的工具，
 * 碰巧沾上的词越多，分数越高。BM25 正好修这两处：
 *   idf            一个词出现在越少的工具里，命中它越说明问题；到处都有的词几乎不加分。
 *   k1（≈1.2）     同一个词在一个工具里重复出现，分数增长很快饱和，刷词没有用。
 *   b（≈0.75）     按文档长度归一：比平均长的说明要多命中才能拿到同样的分。
 *
 * 排序是稳定的：分数相同按目录里的先后，同一个查询永远给出同一个顺序。
 */

import type { ToolDefinition } from "./types.js";

/** 一个可检索的文档：工具名，以及从它身上切出来的词。 */
export interface SearchDocument {
  name: string;
  terms: string[];
}

export interface Ranked {
  name: string;
  score: number;
}

export interface Bm25Options {
  /** 最多交回几个。 */
  limit: number;
  k1?: number;
  b?: number;
}

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/**
 * 把一段文字切成小写的词：按非字母数字的字符切，再按 camelCase 的大小写边界切。
 * 工具名 readFile、read_file、read-file 都切成 read 与 file，与说明里的词对得上。
 */
export function splitWords(value: string): string[] {
  // #region lab 15.3
  return value
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== "")
    .map((word) => word.toLowerCase());
  // #endregion
}

/** JSON Schema 顶层 properties 的键：参数名也是线索（city、invoiceId）。 */
function parameterNames(parameters: ToolDefinition["parameters"]): string[] {
  const properties = parameters.properties;
  if (properties === null || typeof properties !== "object" || Array.isArray(properties)) return [];
  return Object.keys(properties);
}

/** 一个工具的文档：名字、说明与参数名切出来的全部词，按这个顺序。 */
export function toolDocument(tool: ToolDefinition): SearchDocument {
  // #region lab 15.3
  const parts = [tool.name, tool.description, ...parameterNames(tool.parameters)];
  return { name: tool.name, terms: parts.flatMap(splitWords) };
  // #endregion
}

/** 分数大于 0 的按分数从高到低排；分数相同按 documents 里的先后；最多 limit 个。 */
export function topRanked(documents: readonly SearchDocument[], scores: readonly number[], limit: number): Ranked[] {
  // #region lab 15.3
  return documents
    .map((document, index) => ({ name: document.name, score: scores[index] ?? 0 }))
    .filter((entry) => entry.score > 0)
    // Array.prototype.sort 是稳定的（ES2019 起写进规范）：分数相同的保持 documents 里的先后。
    .sort((a, b) => b.score - a.score)
    .slice(0, Math.max(0, limit));
  // #endregion
}

/**
 * Okapi BM25。对查询里每个不同的词 t、每个文档 d：
 *   idf(t)   = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))      N 个文档里有 n(t) 个含 t
 *   score   += idf(t) · f · (k1 + 1) / (f + k1 · (1 − b + b · |d| / avgdl))   f 是 t 在 d 里出现的次数
 */
export function rankBm25(documents: readonly SearchDocument[], query: string, options: Bm25Options): Ranked[] {
  // #region lab 15.3
  const k1 = options.k1 ?? BM25_K1;
  const b = options.b ?? BM25_B;
  const queryTerms = [...new Set(splitWords(query))];
  const total = documents.length;
  const totalLength = documents.reduce((sum, document) => sum + document.terms.length, 0);
  // 没有文档，或者所有文档都没有词：什么也匹配不上（也免得除以 0）。
  if (totalLength === 0) return [];
  const averageLength = totalLength / total;
  const counts = documents.map((document) => termCounts(document.terms));
  const idf = new Map(
    queryTerms.map((term) => {
      const containing = counts.filter((count) => count.has(term)).length;
      return [term, Math.log(1 + (total - containing + 0.5) / (containing + 0.5))];
    }),
  );
  const scores = documents.map((document, index) => {
    const lengthNorm = 1 - b + (b * document.terms.length) / averageLength;
    let score = 0;
    for (const [term, weight] of idf) {
      const frequency = counts[index]?.get(term) ?? 0;
      score += weight * ((frequency * (k1 + 1)) / (frequency + k1 * lengthNorm));
    }
    return score;
  });
  return topRanked(documents, scores, options.limit);
  // #endregion
}

// #region lab 15.3 辅助
function termCounts(terms: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  return counts;
}
// #endregion

/** 对照组：查询里有几个不同的词出现在文档里，就是几分。 */
export function rankByOverlap(documents: readonly SearchDocument[], query: string, limit: number): Ranked[] {
  const queryTerms = [...new Set(splitWords(query))];
  const scores = documents.map((document) => {
    const present = new Set(document.terms);
    return queryTerms.filter((term) => present.has(term)).length;
  });
  return topRanked(documents, scores, limit);
}
