import markdownit, { type MarkdownIt, type Token } from "markdown-it";

import { CourseError } from "../errors.js";
import { codeLanguage, CODE_LANGUAGES, highlight } from "./highlight.js";

/**
 * 课文 → HTML：CommonMark 加 GitHub 表格（markdown-it 的默认预设）。
 * 课文里的原始 HTML 按文字显示（html: false），课文作者写的 Promise<T> 不会被当成标签吞掉。
 */
export interface TocEntry {
  level: 2 | 3;
  id: string;
  text: string;
}

export interface RenderedLesson {
  /** 一级标题的文字（页面标题用）；正文里不再重复。 */
  title: string;
  /** 一级标题之后的正文 HTML。 */
  html: string;
  toc: TocEntry[];
}

export interface LessonContext {
  /** 报错时指出的位置，例如 lessons/03-message-ir/lesson.md。 */
  where: string;
  /** 在「实践 N.M」一节末尾插入的 HTML（提示梯子）；没有这个实践时返回 undefined。 */
  afterLab?: (labId: string) => string | undefined;
}

const LAB_HEADING = /^实践\s+(\d+\.\d+)\s*·/;
/** 指向别章课文的相对链接：../04-scripted-model/lesson.md#锚点 → 04-scripted-model.html#锚点。 */
const LESSON_LINK = /^(?:\.\.\/)?(\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*)\/lesson\.md(#.*)?$/;

/** 渲染时随 token 一起传下去的上下文：代码块出错时指出是哪份课文。 */
function whereOf(env: unknown): string {
  const where = (env as { where?: unknown } | undefined)?.where;
  return typeof where === "string" ? where : "课文";
}

export function createMarkdown(): MarkdownIt {
  const md = markdownit({ html: false, linkify: false, typographer: false });
  const rules = md.renderer.rules;
  rules.fence = (tokens, idx, _options, env) => {
    const fence = tokens[idx]!;
    if (fence.info.trim() === "mermaid") {
      // 没有脚本时显示图的源文字；有脚本时由随书附带的 mermaid 画成 SVG
      return `<figure class="diagram"><pre class="mermaid">${escapeHtml(fence.content)}</pre></figure>\n`;
    }
    return codeBlock(fence.content, fence.info, whereOf(env));
  };
  rules.code_block = (tokens, idx, _options, env) => codeBlock(tokens[idx]!.content, "text", whereOf(env));
  // 二、三级标题末尾一个指向自己的链接（#），方便把某一节的地址发给别人
  const closeHeading = rules.heading_close ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
  rules.heading_close = (tokens, idx, options, env, self) => {
    const close = tokens[idx]!;
    const open = tokens[idx - 2];
    const id = open?.type === "heading_open" ? open.attrGet("id") : null;
    const link = id !== null && (close.tag === "h2" || close.tag === "h3") ? permalink(String(id)) : "";
    return link + closeHeading(tokens, idx, options, env, self);
  };
  // 表格放进可横向滚动的容器，窄屏上不撑破版面
  rules.table_open = () => '<div class="table-wrap"><table>\n';
  rules.table_close = () => "</table></div>\n";
  return md;
}

/** 标题末尾指向这一节的链接；文字由样式表画出，不进标题的文字（目录、搜索里不会多出 #）。 */
export function permalink(id: string): string {
  return `<a class="permalink" href="#${encodeURIComponent(id)}" aria-label="这一节的链接"></a>`;
}

/** 标题 → 锚点：保留汉字、字母、数字，空白变成连字符。 */
export function headingId(text: string): string {
  const id = text
    .trim()
    .toLowerCase()
    .replace(/\s+/g, "-")
    .replace(/[^\p{L}\p{N}_.-]/gu, "")
    .replace(/-{2,}/g, "-")
    .replace(/^-|-$/g, "");
  return id || "section";
}

/** 「实践 N.M」一节的锚点：章节卡片按实践编号链接过来。 */
export function labAnchor(labId: string): string {
  return `实践-${labId}`;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * 一段代码的完整 HTML：带语言标记的 figure 包着高亮后的 pre。
 * bash 代码逐行高亮，每条命令一行、带 command 标记：页面脚本给每条命令配一个复制按钮。
 */
export function codeBlock(code: string, info: string, where: string): string {
  const lang = codeLanguage(info);
  if (!lang) {
    const name = info.trim().split(/\s+/)[0];
    throw new CourseError("BOOK_LANGUAGE", `${where}：代码块语言 ${name} 没有高亮支持（可用：${CODE_LANGUAGES.join("、")}、mermaid）`);
  }
  const source = code.replace(/\n$/, "");
  const body =
    lang === "bash"
      ? source
          .split("\n")
          .map((line) =>
            isCommand(line)
              ? `<span class="line command"><span class="cmd">${bashLine(line)}</span></span>`
              : `<span class="line">${bashLine(line)}</span>`,
          )
          .join("\n")
      : highlight(source, lang);
  return `<figure class="code" data-lang="${lang}"><pre tabindex="0"><code class="hljs language-${lang}">${body}</code></pre></figure>\n`;
}

/** highlight.js 把 node --test 里的 test 当成 shell 内建命令上色；那是 node 的选项，不是 test 命令。 */
function bashLine(line: string): string {
  return highlight(line, "bash").replace(/--<span class="hljs-built_in">([\w-]+)<\/span>/g, "--$1");
}

/** 一行 bash 是不是可以照抄执行的命令（空行和注释不是）。 */
export function isCommand(line: string): boolean {
  const trimmed = line.trim();
  return trimmed !== "" && !trimmed.startsWith("#");
}

export function renderLesson(md: MarkdownIt, source: string, context: LessonContext): RenderedLesson {
  const tokens = md.parse(source, {});
  const toc: TocEntry[] = [];
  const used = new Set<string>();
  let title = "";
  let openLab: string | undefined;
  const out: Token[] = [];
  // markdown-it 只把 Token 类挂在解析状态上，没有单独导出它
  const TokenClass = new md.core.State("", md, {}).Token;

  const closeLab = () => {
    if (openLab === undefined) return;
    const html = context.afterLab?.(openLab);
    if (html) {
      const token = new TokenClass("html_block", "", 0);
      token.content = html;
      out.push(token);
    }
    openLab = undefined;
  };

  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.type === "heading_open") {
      const text = tokens[index + 1]?.content ?? "";
      const level = Number(token.tag.slice(1));
      if (level === 1 && title === "") {
        // 一级标题由页面模板显示：跳过 open / inline / close 三个 token
        title = text;
        index += 2;
        continue;
      }
      if (level <= 2) closeLab();
      const lab = level === 2 ? LAB_HEADING.exec(text) : null;
      if (lab) openLab = lab[1];
      const base = lab?.[1] ? labAnchor(lab[1]) : headingId(text);
      let id = base;
      for (let n = 2; used.has(id); n++) id = `${base}-${n}`;
      used.add(id);
      token.attrSet("id", id);
      if (level === 2 || level === 3) toc.push({ level, id, text: plainText(tokens[index + 1]) });
    }
    if (token.type === "inline") rewriteLinks(token);
    out.push(token);
  }
  closeLab();
  if (title === "") throw new CourseError("BOOK_LESSON", `${context.where}：缺少一级标题`);

  return { title, html: md.renderer.render(out, md.options, { where: context.where }), toc };
}

function plainText(inline: Token | undefined): string {
  return (inline?.children ?? []).map((child) => (child.type === "text" || child.type === "code_inline" ? child.content : "")).join("");
}

function rewriteLinks(inline: Token): void {
  for (const child of inline.children ?? []) {
    if (child.type !== "link_open") continue;
    const href = String(child.attrGet("href") ?? "");
    const match = LESSON_LINK.exec(href);
    if (match) child.attrSet("href", `${match[1]}.html${match[2] ?? ""}`);
  }
}
