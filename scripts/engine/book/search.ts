import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import MiniSearch from "minisearch";

/**
 * 全书搜索：构建时用 MiniSearch 把每一章按二、三级标题切成小节编好索引，写成一个普通脚本
 * assets/search-index.js；浏览器里不联网、不用服务器（file:// 打开也能搜），打开搜索框时才加载。
 * 提示梯子不进索引：搜索结果不能把还没打开的提示露出来。
 */
export interface SearchSection {
  /** 页面文件，例如 05-provider-adapter.html。 */
  page: string;
  /** 小节标题的锚点；一章开头（第一个二级标题之前）为空。 */
  anchor: string;
  chapter: string;
  title: string;
  text: string;
}

/** 索引里的字段与存下来给结果列表用的字段：构建与查询两边都用这一份。 */
export const SEARCH_OPTIONS = { fields: ["title", "text"], storeFields: ["page", "anchor", "chapter", "title", "text"] } as const;

const TOKENIZER_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), "assets", "search-tokenize.js");

/** 浏览器用的分词脚本，在 Node 里原样执行一遍，取出同一个函数。 */
export function loadTokenizer(): (text: string) => string[] {
  const source = readFileSync(TOKENIZER_FILE, "utf8");
  return new Function(`${source}\nreturn tokenizeForSearch;`)() as (text: string) => string[];
}

const HEADING = /<h([23]) id="([^"]*)"[^>]*>([\s\S]*?)<\/h\1>/g;

/** 一章正文的 HTML → 按二、三级标题切开的小节（纯文字）。 */
export function lessonSections(page: string, chapter: string, html: string): SearchSection[] {
  const body = html.replace(/<section class="ladder"[\s\S]*?<\/section>/g, "");
  const sections: SearchSection[] = [];
  let last = 0;
  let current = { anchor: "", title: chapter };
  const push = (end: number) => {
    const text = plain(body.slice(last, end));
    if (text !== "") sections.push({ page, chapter, anchor: current.anchor, title: current.title, text });
  };
  for (const match of body.matchAll(HEADING)) {
    push(match.index);
    current = { anchor: decodeEntities(match[2]!), title: plain(match[3]!) };
    last = match.index + match[0].length;
  }
  push(body.length);
  return sections;
}

/** 小节 → 浏览器加载的脚本：一个全局变量，值是 MiniSearch 序列化后的 JSON 文字。 */
export function searchIndexScript(sections: readonly SearchSection[]): string {
  const tokenize = loadTokenizer();
  const index = new MiniSearch<SearchSection & { id: number }>({
    fields: [...SEARCH_OPTIONS.fields],
    storeFields: [...SEARCH_OPTIONS.storeFields],
    tokenize,
    processTerm: (term) => term,
  });
  index.addAll(sections.map((section, id) => ({ id, ...section })));
  return `// npm run book 生成的全书搜索索引（MiniSearch）\nwindow.bookSearchIndex = ${JSON.stringify(JSON.stringify(index))};\n`;
}

function plain(html: string): string {
  // 块级标签之间隔一个空格，行内标签（code、strong、a……）直接去掉，汉字和标识符之间不凭空多出空格
  return decodeEntities(html.replace(/<\/?(?:p|li|ul|ol|h\d|pre|div|figure|table|tr|td|th|br|blockquote|section|dt|dd)\b[^>]*>/g, " ").replace(/<[^>]+>/g, ""))
    .replace(/\s+/g, " ")
    .trim();
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&#x([0-9a-f]+);/gi, (_, code: string) => String.fromCodePoint(parseInt(code, 16)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&nbsp;/g, " ")
    .replace(/&amp;/g, "&");
}
