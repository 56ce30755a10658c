import { HINT_LEVELS, HINT_LEVEL_NAMES, type Chapter, type FirstRed, type Lab } from "../chapters.js";
import { BUILD_COMMAND, expectation, focusedTestCommand } from "../card.js";
import { shortHash, type ChapterCommits } from "../history.js";
import { COURSE_BRANCH, COURSE_PACKAGE } from "../paths.js";
import type { CourseMap, MapEntry } from "../course-map.js";
import { codeBlock, escapeHtml, labAnchor, permalink, type TocEntry } from "./markdown.js";

/** 页面模板：纯函数，数据进、HTML 字符串出。 */
export const BOOK_TITLE = "build-your-own-pi";

export function pageFile(chapter: Pick<Chapter, "dirName">): string {
  return `${chapter.dirName}.html`;
}

export interface PageLink {
  href: string;
  label: string;
}

interface LayoutInput {
  title: string;
  body: string;
  /** 左栏：课程地图。 */
  sidebar: string;
  /** 右栏：本章目录。 */
  toc?: string;
  prev?: PageLink;
  next?: PageLink;
  /** 本地预览：页面脚本连上服务器，课文一改就刷新。 */
  live: boolean;
}

export function layout(input: LayoutInput): string {
  const rel = [input.prev && `<link rel="prev" href="${input.prev.href}">`, input.next && `<link rel="next" href="${input.next.href}">`]
    .filter(Boolean)
    .join("\n");
  return `<!doctype html>
<html lang="zh-CN"${input.live ? " data-live" : ""}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(input.title)} · ${BOOK_TITLE}</title>
<link rel="icon" href="assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/book.css">
<link rel="stylesheet" href="assets/code-light.css" media="not all and (prefers-color-scheme: dark)">
<link rel="stylesheet" href="assets/code-dark.css" media="(prefers-color-scheme: dark)">
${rel}
</head>
<body>
<a class="skip" href="#main">跳到正文</a>
<header class="topbar"><a class="menu-button" href="#chapters" aria-controls="chapters" aria-expanded="false"><span aria-hidden="true">☰</span> 章节</a><a class="brand" href="index.html">${BOOK_TITLE}</a><span class="tagline">亲手重建一个迷你 pi 编码智能体</span>
<form class="search" role="search" hidden><input type="search" id="search" name="q" placeholder="搜索全书（按 / 或 s）" aria-label="搜索全书" autocomplete="off" aria-controls="search-results"><ol class="search-results" id="search-results" aria-live="polite" hidden></ol></form></header>
<div class="layout${input.toc ? "" : " no-toc"}">
<nav class="sidebar" id="chapters" aria-label="课程地图">
${input.sidebar}
</nav>
<main id="main" tabindex="-1">
${input.body}
${pager(input.prev, input.next)}
</main>
${input.toc ?? ""}
</div>
<footer class="footer"><p>课文来自 <code>lessons/</code>，代码来自课程历史 <code>${COURSE_BRANCH}</code>。键盘：← 上一章 · → 下一章</p></footer>
<script src="assets/book.js" defer></script>
</body>
</html>
`;
}

function pager(prev: PageLink | undefined, next: PageLink | undefined): string {
  if (!prev && !next) return "";
  const link = (item: PageLink | undefined, rel: "prev" | "next", label: string) =>
    item
      ? `<a class="${rel}" rel="${rel}" href="${item.href}"><span class="dir">${label}</span><span class="name">${escapeHtml(item.label)}</span></a>`
      : "<span></span>";
  return `<nav class="pager" aria-label="翻页">\n${link(prev, "prev", "← 上一页")}\n${link(next, "next", "下一页 →")}\n</nav>`;
}

export function tocHtml(entries: readonly TocEntry[]): string {
  const items = entries
    .map((entry) => `<li class="toc-${entry.level}"><a href="#${encodeURIComponent(entry.id)}">${escapeHtml(entry.text)}</a></li>`)
    .join("\n");
  return `<nav class="toc" aria-label="本章目录">
<details open><summary>本章目录</summary>
<ol>
${items}
</ol>
</details>
</nav>`;
}

// ── 课程地图 ────────────────────────────────────────────────────

const STATE_TEXT: Record<MapEntry["state"], string> = {
  lit: "已点亮",
  "lit-old": "已点亮（课程已更新，可重新 verify）",
  started: "进行中",
  open: "未点亮",
  planned: "未开放",
};
const STATE_MARK: Record<MapEntry["state"], string> = { lit: "●", "lit-old": "●", started: "◐", open: "○", planned: "·" };

export interface MapView {
  map: CourseMap;
  /** 读到了学习者的进度（本地预览）；发布版不显示点亮状态。 */
  personal: boolean;
  current?: string;
}

/** 左栏的小地图，与 npm start 同样的部分与章节。 */
export function sidebarHtml(view: MapView): string {
  const { map } = view;
  const summary = view.personal
    ? `<p class="map-summary">已点亮 ${map.lit}/${map.open} 章</p>`
    : `<p class="map-summary">已开放 ${map.open} 章 · 规划 ${map.planned} 章</p>`;
  const parts = map.parts
    .map((part) => {
      const items = part.entries
        .map((entry) => {
          const state = view.personal ? entry.state : entry.state === "planned" ? "planned" : "open";
          const mark = `<span class="mark" aria-hidden="true">${STATE_MARK[state]}</span>`;
          const label = `<span class="num">${entry.id}</span> ${escapeHtml(entry.title)}`;
          const status = view.personal || state === "planned" ? `<span class="visually-hidden">（${STATE_TEXT[state]}）</span>` : "";
          const next = view.personal && map.next?.id === entry.id ? ' data-next=""' : "";
          if (!entry.chapter) return `<li class="planned">${mark}<span>${label}${status}</span></li>`;
          const current = entry.id === view.current ? ' aria-current="page"' : "";
          return `<li class="${state}"${next}>${mark}<a href="${pageFile(entry.chapter)}"${current}>${label}${status}</a></li>`;
        })
        .join("\n");
      return `<h2>${escapeHtml(part.title)}</h2>\n<ol class="map">\n${items}\n</ol>`;
    })
    .join("\n");
  return `${summary}\n${parts}`;
}

// ── 章节卡片 ────────────────────────────────────────────────────

function code(text: string): string {
  return `<code>${escapeHtml(text)}</code>`;
}

function hash(full: string): string {
  return `<code title="${escapeHtml(full)}">${shortHash(full)}</code>`;
}

function commands(lines: readonly string[]): string {
  return codeBlock(lines.join("\n"), "bash", "章节卡片");
}

/** 课文开头的章节卡片：数据全部来自 chapter.json 与真实的课程历史，和 checkpoint 打印的是同一份。
 * 卡片要短：开始的命令在最前，第一次红灯只列每个实践的第一条失败，其余的和提交、文件一起折叠起来。 */
export function cardHtml(chapter: Chapter, commits: ChapterCommits | undefined, all: readonly Chapter[], renderInline: (text: string) => string = escapeHtml): string {
  const parent = commits?.parent ?? "";
  const target = commits?.target ?? "";
  const prerequisites =
    chapter.prerequisites
      .map((id) => all.find((other) => other.id === id))
      .map((other) => (other ? `<a href="${pageFile(other)}">${other.id}</a>` : ""))
      .filter(Boolean)
      .join("、") || "无";
  const steps = Object.entries(commits?.steps ?? {})
    .map(([id, commit]) => `<dt>步骤 ${escapeHtml(id)}</dt><dd>${hash(commit)}</dd>`)
    .join("");
  const labs = chapter.labs
    .map(
      (lab) => `<li><a href="#${encodeURIComponent(labAnchor(lab.id))}">实践 ${escapeHtml(lab.id)} · ${renderInline(lab.title)}</a>
<span class="expect">预期 ${lab.runs.map((run) => `<strong>${expectation(run)}</strong>`).join("，然后 ")}</span></li>`,
    )
    .join("\n");
  // 每个实践的命令很长：折叠起来，要用时再展开复制
  const labCommands = chapter.labs
    .map((lab) => `<p class="lab-command">实践 ${escapeHtml(lab.id)}</p>\n${commands(lab.runs.map((run) => `${BUILD_COMMAND} && ${focusedTestCommand(chapter, run)}`))}`)
    .join("\n");
  return `<section class="card" aria-labelledby="章节卡片">
<h2 id="章节卡片">章节卡片${permalink("章节卡片")}</h2>
<p class="lead">${renderInline(chapter.summary)}</p>
<ul class="facts">
<li>约 ${chapter.minutes} 分钟</li><li>难度 ${escapeHtml(chapter.difficulty)}</li><li>模式 ${escapeHtml(chapter.mode)}</li><li>前置 ${prerequisites}</li>
</ul>
<h3 id="开始这一章">开始这一章${permalink("开始这一章")}</h3>
${commands([`npm run checkpoint -- ${chapter.id}`, `npm run practice -- ${chapter.id}`])}
<h3>第一次红灯</h3>
${firstRedHtml(chapter.firstRed, renderInline)}
<h3>实践与预期</h3>
<ol class="labs">
${labs}
</ol>
<details class="card-more"><summary>每个实践的命令</summary>
${labCommands}
</details>
<details class="card-more"><summary>提交、文件与故障实验</summary>
<dl class="commits">
<dt>起点</dt><dd>${hash(parent)}</dd>${steps}<dt>目标</dt><dd>${hash(target)}</dd>
<dt>课程分支</dt><dd>${code(COURSE_BRANCH)}</dd>
<dt>教学文件</dt><dd>${chapter.teachingFiles.map(code).join("、")}</dd>
<dt>产物</dt><dd>${chapter.artifacts.map(code).join("、")}</dd>
<dt>聚焦测试</dt><dd>${code(chapter.focusedTest.path)}（${chapter.focusedTest.count} 项）</dd>
<dt>故障实验</dt><dd>${renderInline(chapter.fault.title)}：应让「${renderInline(chapter.fault.test)}」失败</dd>
</dl>
<p class="answer-note">查看本章的改动和答案（<strong>做完本章再看答案</strong>）：</p>
${commands([
  `# ${ANSWER_WARNING}`,
  `git diff ${shortHash(parent)} ${shortHash(target)} -- ${COURSE_PACKAGE}`,
  `git worktree add ../pi-course-${chapter.id} ${shortHash(target)}`,
])}
</details>
</section>`;
}

/** 和终端里 checkpoint 的提醒同一句话：答案就在这两条命令里。 */
export const ANSWER_WARNING = "做完本章再看答案";

interface RedItem {
  group: string;
  html: string;
}

/**
 * 第一次红灯的摘要：说明一句，然后每个实践一行（几项红、第一条是哪项），
 * 其余的失败折叠在 details 里——完整的清单仍在页面上，只是不占地方。
 */
export function firstRedHtml(firstRed: FirstRed, renderInline: (text: string) => string = escapeHtml): string {
  const summary = `<p class="red-summary">${renderInline(firstRed.summary)}</p>`;
  if (firstRed.kind === "none") return summary;
  const items: RedItem[] =
    firstRed.kind === "tsc"
      ? firstRed.errors.map((e) => ({ group: "", html: `${code(e.code)} ${code(e.file)}：…${code(e.includes)}…` }))
      : firstRed.failures.map((f) => ({ group: /^(?:实践\s*)?(\d+\.\d+)/.exec(f.test)?.[1] ?? "", html: `✗ ${renderInline(f.test)}：…${code(f.includes)}…` }));
  const groups = new Map<string, RedItem[]>();
  for (const item of items) groups.set(item.group, [...(groups.get(item.group) ?? []), item]);
  const shown: string[] = [];
  const folded: string[] = [];
  for (const [group, members] of groups) {
    const label = firstRed.kind === "tsc" ? `${members.length} 个 tsc 错误` : group === "" ? `其他 ${members.length} 项失败` : `实践 ${group}：${members.length} 项失败`;
    const [first, ...rest] = members;
    shown.push(`<li><span class="red-count">${escapeHtml(label)}</span>，第一条：${first!.html}</li>`);
    folded.push(...rest.map((item) => `<li>${item.html}</li>`));
  }
  const more = folded.length > 0 ? `\n<details class="red-more"><summary>其余 ${folded.length} 项</summary>\n<ul class="red">\n${folded.join("\n")}\n</ul>\n</details>` : "";
  return `${summary}\n<ul class="red">\n${shown.join("\n")}\n</ul>${more}`;
}

// ── 提示梯子 ────────────────────────────────────────────────────

/**
 * 四级提示折叠成嵌套的 details：下一级在上一级里面，只有打开上一级才看得见，
 * 所以一次只能升一级——和 npm run hint 一样，不需要脚本。
 */
export function hintLadderHtml(lab: Lab, renderInline: (text: string) => string, where: string): string {
  const levels = HINT_LEVELS.map((level, index) => {
    const text = lab.hints[level];
    const body = level === "code" ? codeBlock(text, "ts", where) : level === "file" ? hintParagraphs(text, renderInline) : hintLines(text);
    return { summary: `第 ${index + 1} 级 · ${HINT_LEVEL_NAMES[level]}`, body };
  });
  const nested = levels.reduceRight(
    (inner, level, index) =>
      `<details class="hint" data-level="${index + 1}"><summary>${level.summary}</summary>\n<div class="hint-body">\n${level.body}\n${inner}</div></details>`,
    "",
  );
  return `<section class="ladder" aria-label="实践 ${escapeHtml(lab.id)} 的提示梯子">
<p class="ladder-title">卡住了？提示一级一级地打开：</p>
${nested}
</section>\n`;
}

/**
 * 签名与伪代码是一行一条：每行一个列表项，空行分开几组，不挤成一段。
 * 它们是代码式的文字（反引号是 JavaScript 的模板字符串），照原样显示，不当 Markdown 解析。
 */
export function hintLines(text: string): string {
  return hintGroups(text)
    .map((group) => `<ul class="hint-lines">\n${group.map(hintLine).join("\n")}\n</ul>`)
    .join("\n");
}

/** 伪代码靠行首缩进表示“属于上一行”：缩进保留下来，画成左边距。 */
function hintLine(line: string): string {
  const indent = /^ */.exec(line)![0].length;
  const style = indent > 0 ? ` style="--indent: ${indent}ch"` : "";
  return `<li${style}>${escapeHtml(line.trim())}</li>`;
}

/** 定位文件的说明是几句话：每行一段。 */
function hintParagraphs(text: string, renderInline: (text: string) => string): string {
  return hintGroups(text)
    .map((group) => group.map((line) => `<p>${renderInline(line.trim())}</p>`).join("\n"))
    .join("\n");
}

function hintGroups(text: string): string[][] {
  return text
    .split(/\n\s*\n/)
    .map((group) => group.split("\n").map((line) => line.trimEnd()).filter((line) => line.trim() !== ""))
    .filter((group) => group.length > 0);
}

// ── 找不到的页面 ────────────────────────────────────────────────

export function notFoundBody(): string {
  return `<article class="not-found">
<h1>没有这一页</h1>
<p>地址可能打错了，或者这一章改了名字。回到<a href="index.html">封面与课程地图</a>，从那里找你要读的一章。</p>
</article>`;
}

// ── 封面 ────────────────────────────────────────────────────────

export function indexBody(view: MapView, first: Chapter | undefined, renderInline: (text: string) => string = escapeHtml): string {
  const { map } = view;
  const start = view.personal && map.next ? map.next : first;
  const startLabel = view.personal && map.next ? `继续：第 ${map.next.id} 章 · ${map.next.title}` : `从第 ${first?.id ?? "00"} 章开始`;
  const rows = map.parts
    .map((part) => {
      const items = part.entries
        .map((entry) => {
          const state = view.personal ? entry.state : entry.state === "planned" ? "planned" : "open";
          const title = entry.chapter ? `<a href="${pageFile(entry.chapter)}">${escapeHtml(entry.title)}</a>` : escapeHtml(entry.title);
          const about = entry.chapter
            ? `<p class="about">${renderInline(entry.chapter.summary)}</p><p class="meta">${entry.chapter.minutes} 分钟 · ${entry.chapter.difficulty} · ${entry.chapter.mode}</p>`
            : `<p class="meta">未开放</p>`;
          const status = view.personal && entry.chapter ? `<p class="status">${STATE_TEXT[state]}${map.next?.id === entry.id ? " · 下一章" : ""}</p>` : "";
          return `<li class="${state}"><span class="mark" aria-hidden="true">${STATE_MARK[state]}</span><div><h3><span class="num">${entry.id}</span> ${title}</h3>${about}${status}</div></li>`;
        })
        .join("\n");
      return `<section class="part"><h2>${escapeHtml(part.title)}</h2>\n<ol class="chapters">\n${items}\n</ol></section>`;
    })
    .join("\n");
  const progress = view.personal
    ? `<p class="progress">你的进度：已点亮 ${map.lit}/${map.open} 章。地图只读你的进度文件，点亮章节要靠 <code>npm run verify</code>。</p>`
    : "";
  return `<article class="cover">
<h1>${BOOK_TITLE}</h1>
<p class="lead">用 TypeScript 一章一章地造出一个迷你的 pi 编码智能体。每一章是课程历史上的一对真实提交：起点上聚焦测试是红的，你把它写绿；课文讲清这一步为什么这样做。</p>
${progress}
${start ? `<p><a class="start" href="${pageFile(start)}">${escapeHtml(startLabel)} →</a></p>` : ""}
<h2 class="visually-hidden">课程地图</h2>
${rows}
<section class="part"><h2>在课程套件里</h2>
<p>克隆套件、安装依赖之后，地图、练习目录和验证都是一条命令：</p>
${commands(["npm start", `npm run practice -- ${first?.id ?? "00"}`, `npm run verify -- ${first?.id ?? "00"}`])}
</section>
</article>`;
}
