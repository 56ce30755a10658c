import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import diff from "highlight.js/lib/languages/diff";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import plaintext from "highlight.js/lib/languages/plaintext";
import typescript from "highlight.js/lib/languages/typescript";

/**
 * 构建时的语法高亮（highlight.js）：输出只带 class 的 span，颜色全在它自带的
 * github / github-dark 样式表里，按系统主题切换；浏览器里不需要任何脚本。
 * 只注册课文用到的几种语言，整本书的高亮在几百毫秒内完成。
 */
export const CODE_LANGUAGES = ["ts", "js", "json", "bash", "diff", "text"] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];

const GRAMMARS = { ts: typescript, js: javascript, json, bash, diff, text: plaintext } as const;
for (const lang of CODE_LANGUAGES) hljs.registerLanguage(lang, GRAMMARS[lang]);

/** 课文里常见的别名，归到上面几种之一。 */
const ALIASES: Record<string, CodeLanguage> = {
  typescript: "ts",
  javascript: "js",
  mjs: "js",
  sh: "bash",
  shell: "bash",
  console: "bash",
  jsonc: "json",
  patch: "diff",
  txt: "text",
  plaintext: "text",
  "": "text",
};

export function codeLanguage(info: string): CodeLanguage | undefined {
  const name = info.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
  if ((CODE_LANGUAGES as readonly string[]).includes(name)) return name as CodeLanguage;
  return ALIASES[name];
}

/** 一段代码 → 高亮后的内层 HTML（已转义，可直接放进 <code>）。 */
export function highlight(code: string, lang: CodeLanguage): string {
  return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
}
