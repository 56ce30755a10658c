import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { loadChapters, type Chapter } from "../chapters.js";
import { CourseError } from "../errors.js";
import { ensureHistory } from "../history.js";
import { emptyProgress, type Progress } from "../progress.js";
import { courseMap } from "../course-map.js";
import { createMarkdown, permalink, renderLesson } from "./markdown.js";
import { lessonSections, searchIndexScript, type SearchSection } from "./search.js";
import { cardHtml, hintLadderHtml, indexBody, layout, notFoundBody, pageFile, sidebarHtml, tocHtml, type MapView, type PageLink } from "./pages.js";

/**
 * 整本书：封面（课程地图）+ 每章一页，课文直接读 lessons/NN-slug/lesson.md，
 * 卡片数据来自 chapter.json 与真实的课程历史。脚本、样式全部来自已安装的 npm 包和本目录的 assets/。
 */
export interface RenderOptions {
  kitRoot: string;
  lessonsDir: string;
  /** 学习者的进度（本地预览时）：地图据此点亮；省略就是发布版，不带任何个人状态。 */
  progress?: Progress;
  /** 本地预览：页面连上服务器，课文一改就刷新。 */
  live?: boolean;
}

export interface BookOptions extends RenderOptions {
  outDir: string;
}

export interface BookPage {
  file: string;
  title: string;
  chapter?: Chapter;
}

export interface Book {
  outDir: string;
  pages: BookPage[];
  ms: number;
}

/**
 * 渲染好、还没写到磁盘上的一本书：页面是字符串，附带的文件记着它在磁盘上的位置（mermaid 有 3 MB，用时再读）。
 * 发布版把它写进输出目录；本地预览直接从内存里送出，带进度的页面从不落到 .book/ 里。
 */
export interface BookSite {
  /** 生成的文件：名字（相对书的根目录，例如 index.html、assets/search-index.js）→ 内容。 */
  files: Map<string, string>;
  /** 文件名 → 磁盘上的源文件。 */
  assets: Map<string, string>;
  list: BookPage[];
  ms: number;
}
const OWN_ASSETS = path.join(path.dirname(fileURLToPath(import.meta.url)), "assets");

/** 随书附带的第三方文件：目标名 → 已安装包里的位置。 */
function vendorAssets(): Record<string, string> {
  const mermaidDir = path.dirname(fileURLToPath(import.meta.resolve("mermaid")));
  return {
    "mermaid.min.js": path.join(mermaidDir, "mermaid.min.js"),
    "minisearch.js": fileURLToPath(new URL("../umd/index.js", import.meta.resolve("minisearch"))),
    "code-light.css": fileURLToPath(import.meta.resolve("highlight.js/styles/github.css")),
    "code-dark.css": fileURLToPath(import.meta.resolve("highlight.js/styles/github-dark.css")),
  };
}

/** 生成发布版或 --out 指定的目录：先整本渲染好，再清空并写入输出目录。 */
export async function buildBook(options: BookOptions): Promise<Book> {
  const started = performance.now();
  // 先看输出目录能不能用，再花几秒渲染
  checkOutDir(options.outDir);
  const site = await renderBook(options);
  writeSite(options.outDir, site);
  return { outDir: options.outDir, pages: site.list, ms: performance.now() - started };
}

export async function renderBook(options: RenderOptions): Promise<BookSite> {
  const started = performance.now();
  const chapters = loadChapters(options.lessonsDir);
  const history = await ensureHistory(options.kitRoot, chapters);
  const targets = Object.fromEntries(Object.entries(history.chapters).map(([id, commits]) => [id, commits.target]));
  const personal = options.progress !== undefined;
  const map = courseMap(chapters, options.progress ?? emptyProgress(), targets);
  const live = options.live ?? false;
  const md = createMarkdown();
  const files = new Map<string, string>();
  const pages: BookPage[] = [];

  const cover: PageLink = { href: "index.html", label: "封面与课程地图" };
  const sections: SearchSection[] = [];
  chapters.forEach((chapter, index) => {
    const where = path.posix.join("lessons", chapter.dirName, "lesson.md");
    const labs = new Map(chapter.labs.map((lab) => [lab.id, lab]));
    const placed = new Set<string>();
    const lesson = renderLesson(md, readFileSync(chapter.lessonPath, "utf8"), {
      where,
      afterLab: (labId) => {
        const lab = labs.get(labId);
        if (!lab) return undefined;
        placed.add(labId);
        return hintLadderHtml(lab, (text) => md.renderInline(text), where);
      },
    });
    // 课文里没有对应一节的实践：提示梯子放在正文末尾，一级也不丢
    const orphans = chapter.labs.filter((lab) => !placed.has(lab.id));
    const orphanHtml = orphans
      .map((lab) => `<h2 id="提示-${lab.id}">实践 ${lab.id} 的提示${permalink(`提示-${lab.id}`)}</h2>\n${hintLadderHtml(lab, (text) => md.renderInline(text), where)}`)
      .join("\n");
    sections.push(...lessonSections(pageFile(chapter), `第 ${chapter.id} 章 · ${chapter.title}`, lesson.html));
    const previous = chapters[index - 1];
    const following = chapters[index + 1];
    const view: MapView = { map, personal, current: chapter.id };
    const body = `<article class="lesson">
<header class="lesson-head"><p class="eyebrow">第 ${chapter.id} 章 · ${chapter.mode}</p><h1>${md.renderInline(lesson.title)}</h1></header>
${cardHtml(chapter, history.chapters[chapter.id], chapters, (text) => md.renderInline(text))}
${lesson.html}${orphanHtml}
</article>`;
    const toc = tocHtml([{ level: 2, id: "章节卡片", text: "章节卡片" }, ...lesson.toc]);
    files.set(
      pageFile(chapter),
      layout({
        title: lesson.title,
        body,
        sidebar: sidebarHtml(view),
        toc,
        prev: previous ? { href: pageFile(previous), label: `第 ${previous.id} 章 · ${previous.title}` } : cover,
        ...(following ? { next: { href: pageFile(following), label: `第 ${following.id} 章 · ${following.title}` } } : {}),
        live,
      }),
    );
    pages.push({ file: pageFile(chapter), title: lesson.title, chapter });
  });

  const first = chapters[0];
  files.set(
    "index.html",
    layout({
      title: "封面与课程地图",
      body: indexBody({ map, personal }, first, (text) => md.renderInline(text)),
      sidebar: sidebarHtml({ map, personal }),
      ...(first ? { next: { href: pageFile(first), label: `第 ${first.id} 章 · ${first.title}` } } : {}),
      live,
    }),
  );
  pages.unshift({ file: "index.html", title: "封面与课程地图" });
  files.set(SEARCH_INDEX, searchIndexScript(sections));
  files.set(NOT_FOUND_PAGE, layout({ title: "没有这一页", body: notFoundBody(), sidebar: sidebarHtml({ map, personal }), live }));

  return { files, assets: assetFiles(), list: pages, ms: performance.now() - started };
}

/** 全书搜索的索引：构建时生成的一个普通脚本。 */
export const SEARCH_INDEX = "assets/search-index.js";

/** 找不到的地址显示这一页（静态托管约定的文件名；本地预览也用它）。 */
export const NOT_FOUND_PAGE = "404.html";

function assetFiles(): Map<string, string> {
  const assets = new Map<string, string>();
  for (const name of readdirSync(OWN_ASSETS)) assets.set(`assets/${name}`, path.join(OWN_ASSETS, name));
  for (const [name, source] of Object.entries(vendorAssets())) {
    if (!existsSync(source)) throw new CourseError("BOOK_ASSET", `找不到 ${source}：请先运行 npm ci 安装依赖`);
    assets.set(`assets/${name}`, source);
  }
  return assets;
}

/** 书的输出目录里的标记文件：只有带着它的目录才会在重建时被清空。 */
export const BOOK_MARKER = ".pi-course-book";

/** 重建会清空输出目录：不是书自己生成的目录，一个文件也不动。 */
function checkOutDir(outDir: string): void {
  if (!existsSync(outDir)) return;
  const entries = readdirSync(outDir);
  if (entries.length > 0 && !entries.includes(BOOK_MARKER)) {
    throw new CourseError("BOOK_OUT_DIR", `${outDir} 里已经有别的文件，不是书的输出目录；请换一个空目录或不存在的目录，原有文件没有动`);
  }
}

function writeSite(outDir: string, site: BookSite): void {
  checkOutDir(outDir);
  if (existsSync(outDir)) {
    for (const entry of readdirSync(outDir)) rmSync(path.join(outDir, entry), { recursive: true, force: true });
  }
  mkdirSync(path.join(outDir, "assets"), { recursive: true });
  writeFileSync(path.join(outDir, BOOK_MARKER), "npm run book 生成的目录：重建时会整个清空\n");
  for (const [name, source] of site.assets) copyFileSync(source, path.join(outDir, name));
  for (const [name, text] of site.files) writeFileSync(path.join(outDir, name), text);
}
