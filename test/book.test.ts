import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import MiniSearch from "minisearch";

import { createMarkdown, renderLesson } from "../scripts/engine/book/markdown.ts";
import { indexBody, layout, sidebarHtml } from "../scripts/engine/book/pages.ts";
import { serveBook } from "../scripts/engine/book/serve.ts";
import { loadTokenizer, SEARCH_OPTIONS, type SearchSection } from "../scripts/engine/book/search.ts";
import { buildBook, type BookSite } from "../scripts/engine/book/site.ts";
import { BUILD_COMMAND, expectation, focusedTestCommand } from "../scripts/engine/card.ts";
import { loadChapters, type Chapter } from "../scripts/engine/chapters.ts";
import { isCourseError } from "../scripts/engine/errors.ts";
import { ensureHistory, shortHash, type CourseHistory } from "../scripts/engine/history.ts";
import { emptyProgress } from "../scripts/engine/progress.ts";
import { courseMap } from "../scripts/engine/course-map.ts";
import { KIT, runScript, tempDir } from "./helpers.ts";

const LESSONS = path.join(KIT, "lessons");
const work = tempDir("book");
const out = path.join(work.dir, "book");
let chapters: Chapter[];
let history: CourseHistory;
let pages: Map<string, string>;

/** 像浏览器那样解码 HTML 里的字符引用（模板只用 &#NN; 和 &amp; 几种）。 */
function decode(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

function idsOf(html: string): Set<string> {
  return new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => decode(match[1]!)));
}

before(async () => {
  chapters = loadChapters(LESSONS);
  history = await ensureHistory(KIT, chapters);
  // 用真正的命令入口生成一次，整份测试共用
  const built = await runScript("book", ["--out", out]);
  assert.equal(built.code, 0, built.stderr);
  assert.match(built.stdout, /书已生成：.*index\.html（\d+ 页/);
  pages = new Map(readdirSync(out).filter((name) => name.endsWith(".html")).map((name) => [name, readFileSync(path.join(out, name), "utf8")]));
});

after(() => work.remove());

/**
 * 预览服务器测试用的书：页面取自上面生成好的那一版，放进内存里的 BookSite（不再渲染一遍，省下几秒）。
 * 真正的 book --serve 在浏览器测试里跑。
 */
function siteFromOut(extra: Record<string, string> = {}): BookSite {
  const files = new Map([...pages, ...Object.entries(extra)]);
  const assets = new Map(readdirSync(path.join(out, "assets")).map((name) => [`assets/${name}`, path.join(out, "assets", name)]));
  return { files, assets, list: [], ms: 0 };
}

describe("npm run book 生成的书", () => {
  test("每一章都有一页，不多不少；页面标题就是课文的一级标题", () => {
    const lessonDirs = readdirSync(LESSONS).filter((name) => /^\d{2}-/.test(name) && existsSync(path.join(LESSONS, name, "lesson.md")));
    assert.deepEqual(
      [...pages.keys()].sort(),
      ["index.html", "404.html", ...lessonDirs.map((name) => `${name}.html`)].sort(),
    );
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const h1 = /^# (.+)$/m.exec(readFileSync(chapter.lessonPath, "utf8"))![1]!;
      assert.ok(decode(html).includes(`<h1>${h1.replace(/`([^`]+)`/g, "<code>$1</code>")}</h1>`), `${chapter.dirName} 的一级标题`);
    }
  });

  test("没有漏掉课文：每个二级、三级标题都在页面上，带锚点并列在本章目录里", () => {
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const toc = html.slice(html.indexOf('<nav class="toc"'));
      const headings = [...readFileSync(chapter.lessonPath, "utf8").replace(/```[\s\S]*?```/g, "").matchAll(/^#{2,3} (.+)$/gm)].map((m) => m[1]!);
      assert.ok(headings.length > 5, chapter.dirName);
      for (const heading of headings) {
        const text = decode(heading.replace(/`/g, ""));
        assert.ok(decode(html.replace(/<[^>]+>/g, "")).includes(text), `${chapter.dirName}：正文里缺少「${text}」`);
        assert.ok(decode(toc.replace(/<[^>]+>/g, "")).includes(text), `${chapter.dirName}：目录里缺少「${text}」`);
      }
    }
  });

  test("每个站内链接都指向存在的页面和锚点；脚本与样式都在书里，不连外网", () => {
    let checked = 0;
    for (const [name, html] of pages) {
      for (const match of html.matchAll(/\s(href|src)="([^"]*)"/g)) {
        const target = decode(match[2]!);
        if (/^https?:/.test(target)) {
          assert.ok(match[1] === "href" && !/<(script|link)[^>]*$/.test(html.slice(0, match.index)), `${name}：外链的脚本或样式 ${target}`);
          continue;
        }
        const [file = "", fragment] = target.split("#");
        const page = file === "" ? name : file;
        assert.ok(existsSync(path.join(out, page)), `${name}：链接 ${target} 指向不存在的文件`);
        if (fragment) {
          const ids = idsOf(pages.get(page) ?? "");
          assert.ok(ids.has(decodeURIComponent(fragment)), `${name}：链接 ${target} 的锚点不存在`);
        }
        checked++;
      }
    }
    assert.ok(checked > 200, `只检查了 ${checked} 个链接`);
    for (const asset of ["book.css", "book.js", "code-light.css", "code-dark.css", "mermaid.min.js"]) {
      assert.ok(existsSync(path.join(out, "assets", asset)), asset);
    }
    const own = readFileSync(path.join(out, "assets", "book.css"), "utf8") + readFileSync(path.join(out, "assets", "book.js"), "utf8");
    assert.doesNotMatch(own, /https?:\/\/|@import|url\(/);
  });

  test("每个代码块都在构建时高亮；Mermaid 图一个不少，交给随书的 mermaid", () => {
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const source = readFileSync(chapter.lessonPath, "utf8");
      const fences = [...source.matchAll(/^```(\S*)$/gm)].map((m) => m[1]!).filter((_, index) => index % 2 === 0);
      const diagrams = fences.filter((lang) => lang === "mermaid").length;
      const pres = [...html.matchAll(/<pre[^>]*>(<code[^>]*>)?/g)];
      const highlighted = pres.filter((m) => /^<code class="hljs language-(ts|js|json|bash|diff|text)">$/.test(m[1] ?? ""));
      const mermaid = pres.filter((m) => m[0] === '<pre class="mermaid">');
      assert.equal(highlighted.length + mermaid.length, pres.length, `${chapter.dirName}：有没高亮的 <pre>`);
      assert.equal(mermaid.length, diagrams, chapter.dirName);
      // 课文的代码块 + 卡片里的命令（每个实践一块、开始一块、查看改动一块）+ 每个实践的局部代码提示
      assert.equal(highlighted.length, fences.length - diagrams + chapter.labs.length + 2 + chapter.labs.length, chapter.dirName);
      // 真的上了色：带关键字的 TypeScript 块里有高亮的 span
      for (const block of html.matchAll(/<code class="hljs language-(?:ts|js)">([\s\S]*?)<\/code>/g)) {
        if (/\b(const|let|function|return|import|export|interface|type|class|await)\b/.test(block[1]!.replace(/<[^>]+>/g, ""))) {
          assert.match(block[1]!, /class="hljs-(keyword|attr|string|title)/, `${chapter.dirName}：TypeScript / JavaScript 块没有高亮`);
        }
      }
    }
  });

  test("章节卡片来自真实的课程历史与 chapter.json：起点、目标、聚焦测试、第一次红灯、实践的命令与预期", () => {
    for (const chapter of chapters) {
      const html = decode(pages.get(`${chapter.dirName}.html`)!.replace(/<(?!\/?code)[^>]+>/g, ""));
      const commits = history.chapters[chapter.id]!;
      for (const commit of [commits.parent, commits.target, ...Object.values(commits.steps)]) assert.ok(html.includes(shortHash(commit)), chapter.dirName);
      assert.ok(html.includes(`${chapter.focusedTest.path}</code>（${chapter.focusedTest.count} 项）`), chapter.dirName);
      assert.ok(html.includes(chapter.firstRed.summary), chapter.dirName);
      for (const lab of chapter.labs) {
        for (const run of lab.runs) {
          assert.ok(html.replace(/<\/?code>/g, "").includes(`${BUILD_COMMAND} && ${focusedTestCommand(chapter, run)}`), `${chapter.dirName} 实践 ${lab.id}`);
          assert.ok(html.includes(expectation(run)), chapter.dirName);
        }
      }
      assert.ok(html.includes(`npm run practice -- ${chapter.id}`), chapter.dirName);
    }
  });

  test("章节卡片是短的：开始这一章的命令在最前；第一次红灯每个实践只列第一条失败和项数，其余折叠；看答案的 git diff 带着“做完本章再看答案”", () => {
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const card = html.slice(html.indexOf('<section class="card"'), html.indexOf("</section>", html.indexOf('<section class="card"')));
      const start = card.indexOf(">开始这一章<");
      assert.ok(start > 0 && start < card.indexOf(">第一次红灯</h3>") && start < card.indexOf(">实践与预期</h3>"), `${chapter.dirName}：开始这一章在卡片前部`);
      assert.ok(decode(card.slice(start, card.indexOf("</figure>", start))).includes(`npm run practice -- ${chapter.id}`));
      const red = card.slice(card.indexOf(">第一次红灯</h3>"), card.indexOf(">实践与预期</h3>"));
      const visible = red.replace(/<details[\s\S]*?<\/details>/g, "");
      const shown = [...visible.matchAll(/<li>/g)].length;
      const folded = [...red.matchAll(/<li>/g)].length - shown;
      if (chapter.firstRed.kind === "test") {
        const labsWithFailures = new Set(chapter.firstRed.failures.map((failure) => /^(?:实践\s*)?(\d+\.\d+)/.exec(failure.test)?.[1] ?? ""));
        assert.equal(shown, labsWithFailures.size, `${chapter.dirName}：每个实践一行`);
        assert.equal(shown + folded, chapter.firstRed.failures.length, `${chapter.dirName}：一条失败也不丢`);
        const redText = decode(red.replace(/<[^>]+>/g, ""));
        for (const failure of chapter.firstRed.failures) assert.ok(redText.includes(failure.test.replace(/`/g, "")), `${chapter.dirName}：${failure.test}`);
        if (folded > 0) assert.match(red, new RegExp(`<summary>其余 ${folded} 项</summary>`));
      }
      const diff = decode(card.replace(/<[^>]+>/g, ""));
      const commits = history.chapters[chapter.id]!;
      const at = diff.indexOf(`git diff ${shortHash(commits.parent)} ${shortHash(commits.target)}`);
      assert.ok(at > 0, chapter.dirName);
      assert.ok(diff.slice(Math.max(0, at - 40), at).includes("# 做完本章再看答案"), `${chapter.dirName}：git diff 前面的提醒`);
    }
  });

  test("提示梯子：每个实践四级，嵌套折叠，下一级藏在上一级里面，所以一次只能打开一级", () => {
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const ladders = [...html.matchAll(/<section class="ladder"[\s\S]*?<\/section>/g)].map((m) => m[0]);
      assert.equal(ladders.length, chapter.labs.length, chapter.dirName);
      chapter.labs.forEach((lab, index) => {
        const ladder = ladders[index]!;
        assert.ok(ladder.includes(`实践 ${lab.id} 的提示梯子`));
        const order = [...ladder.matchAll(/<details class="hint" data-level="(\d)">|<\/details>/g)].map((m) => m[1] ?? "/");
        assert.deepEqual(order, ["1", "2", "3", "4", "/", "/", "/", "/"], `${chapter.dirName} 实践 ${lab.id}`);
        assert.doesNotMatch(ladder, /<details[^>]* open/);
        // 梯子放在这个实践的一节里：在它的标题之后、下一个二级标题之前
        const at = html.indexOf(ladder);
        const heading = html.lastIndexOf("<h2", at);
        assert.match(html.slice(heading, heading + 200), new RegExp(`实践 ${lab.id.replace(".", "\\.")} `));
      });
    }
  });

  test("提示梯子的第 2、3 级一行一条：签名和伪代码的每一行是一个列表项，不挤成一段，行首缩进留着", () => {
    for (const chapter of chapters) {
      const html = pages.get(`${chapter.dirName}.html`)!;
      const ladders = [...html.matchAll(/<section class="ladder"[\s\S]*?<\/section>/g)].map((m) => m[0]);
      chapter.labs.forEach((lab, index) => {
        const levels = ladders[index]!.split(/<details class="hint" data-level="\d">/).slice(1);
        for (const [level, key] of [[2, "signature"], [3, "pseudocode"]] as const) {
          const own = levels[level - 1]!.split("<details")[0]!;
          const lines = lab.hints[key].split("\n").filter((line) => line.trim() !== "");
          const items = [...own.matchAll(/<li(?: style="--indent: (\d+)ch")?>([\s\S]*?)<\/li>/g)].map((m) => " ".repeat(Number(m[1] ?? 0)) + decode(m[2]!));
          assert.equal(items.length, lines.length, `${chapter.dirName} 实践 ${lab.id} 第 ${level} 级`);
          // 照原样显示，不当 Markdown 解析；行首缩进留着
          assert.deepEqual(items, lines.map((line) => line.trimEnd()), `${chapter.dirName} 实践 ${lab.id} 第 ${level} 级`);
        }
      });
    }
  });

  test("二、三级标题末尾有指向自己的链接（#）；课文与 chapter.json 里的反引号都画成代码；node --test 的 test 不当成 shell 命令上色", () => {
    for (const [name, html] of pages) {
      for (const heading of html.matchAll(/<(h[23]) id="([^"]+)"[^>]*>([\s\S]*?)<\/\1>/g)) {
        if (heading[0].includes('class="ladder-title"')) continue;
        assert.ok(heading[3]!.includes(`<a class="permalink" href="#${encodeURIComponent(decode(heading[2]!))}"`), `${name}：${heading[2]} 没有链接`);
      }
      // 提示梯子的签名与伪代码是代码式的原文，反引号是模板字符串，不算
      const text = decode(html.replace(/<pre[\s\S]*?<\/pre>/g, "").replace(/<ul class="hint-lines">[\s\S]*?<\/ul>/g, "").replace(/<code[^>]*>[\s\S]*?<\/code>/g, "").replace(/<[^>]+>/g, ""));
      const stray = /[^\n]{0,20}`[^\n]{0,20}/.exec(text);
      assert.equal(stray, null, `${name}：没画成代码的反引号「${stray?.[0]}」`);
      assert.doesNotMatch(html, /--<span class="hljs-built_in">/, name);
    }
  });

  test("翻页：封面 → 第 00 章 → … → 最后一章，每一页的上一页 / 下一页首尾相接", () => {
    const order = ["index.html", ...chapters.map((chapter) => `${chapter.dirName}.html`)];
    order.forEach((name, index) => {
      const html = pages.get(name)!;
      const next = /<a class="next" rel="next" href="([^"]+)"/.exec(html)?.[1];
      const prev = /<a class="prev" rel="prev" href="([^"]+)"/.exec(html)?.[1];
      assert.equal(next, order[index + 1], `${name} 的下一页`);
      assert.equal(prev, order[index - 1], `${name} 的上一页`);
    });
  });

  test("发布版是干净的：不读进度、不点亮任何一章、不带本地预览的刷新脚本", () => {
    for (const [name, html] of pages) {
      assert.doesNotMatch(html, /class="lit|已点亮|data-live/, name);
      assert.match(html, /<html lang="zh-CN">/);
    }
  });
});

describe("全书搜索", () => {
  test("索引随书生成、离线可用：每一章的每个小节都在里面，锚点都存在；中文词和英文标识符都搜得到；提示梯子不进索引", () => {
    const source = readFileSync(path.join(out, "assets", "search-index.js"), "utf8");
    const holder: { bookSearchIndex?: string } = {};
    new Function("window", source)(holder);
    const index = MiniSearch.loadJSON<SearchSection>(holder.bookSearchIndex!, {
      fields: [...SEARCH_OPTIONS.fields],
      storeFields: [...SEARCH_OPTIONS.storeFields],
      tokenize: loadTokenizer(),
      processTerm: (term) => term,
    });
    const stored = Object.values((JSON.parse(holder.bookSearchIndex!) as { storedFields: Record<string, SearchSection> }).storedFields);
    for (const chapter of chapters) {
      const page = `${chapter.dirName}.html`;
      const mine = stored.filter((section) => section.page === page);
      assert.ok(mine.length > 5, `${page} 的小节`);
      const ids = idsOf(pages.get(page)!);
      for (const section of mine) if (section.anchor !== "") assert.ok(ids.has(section.anchor), `${page}#${section.anchor}`);
    }
    assert.ok(stored.every((section) => !section.text.includes("卡住了？提示一级一级地打开")), "提示梯子不应进索引");
    for (const query of ["上下文", "压缩", "SseDecoder", "transcript"]) {
      const hits = index.search(query, { prefix: true, boost: { title: 3 } });
      assert.ok(hits.length > 0, query);
      assert.ok(hits.slice(0, 5).some((hit) => `${hit.title} ${hit.text}`.toLowerCase().includes(query.toLowerCase())), `${query} 的前几条结果里应当有原词`);
    }
  });

  test("分词：中文按词切开并补上相邻两字，英文按词、不分大小写", () => {
    const tokenize = loadTokenizer();
    const tokens = tokenize("压缩上下文时保留 SseDecoder 的状态");
    assert.ok(tokens.includes("ssedecoder"), tokens.join(" "));
    assert.ok(tokens.includes("上下"), tokens.join(" "));
    assert.ok(tokens.every((token) => token.trim() !== "" && !/[，。 ]/.test(token)), tokens.join(" "));
  });
});

describe("课程地图按进度点亮（本地预览）", () => {
  test("verify 过的章节点亮，课程更新后的旧记录单独标出，下一章指向第一章没点亮的", () => {
    const targets = Object.fromEntries(Object.entries(history.chapters).map(([id, commits]) => [id, commits.target]));
    const progress = emptyProgress();
    progress.verified["00"] = { target: targets["00"]!, verifiedAt: "2026-11-30T10:00:00Z", dir: "/tmp/p00" };
    progress.verified["01"] = { target: "0".repeat(40), verifiedAt: "2026-11-30T11:00:00Z", dir: "/tmp/p01" };
    const map = courseMap(chapters, progress, targets);
    const sidebar = sidebarHtml({ map, personal: true });
    assert.match(sidebar, /已点亮 2\/\d+ 章/);
    assert.match(sidebar, /<li class="lit"><span class="mark" aria-hidden="true">●<\/span><a href="00-prologue.html">/);
    assert.match(sidebar, /<li class="lit-old"[^>]*>.*01-typescript-survival.html/);
    assert.match(sidebar, /<li class="open" data-next="">.*02-event-stream.html/);
    const cover = indexBody({ map, personal: true }, chapters[0]);
    assert.match(cover, /继续：第 02 章/);
    assert.match(cover, /已点亮 2\/\d+ 章/);

    const plain = sidebarHtml({ map, personal: false });
    assert.doesNotMatch(plain, /lit|已点亮|data-next/);
  });
});

/** 发一个 GET，Host 头由调用方写：浏览器在 DNS 重绑定之后送来的正是别人的域名。 */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("本地预览", () => {
  test("--serve 只回应 Host 是本机地址的请求：127.0.0.1、localhost、[::1] 加上端口；别的域名一律 403（防 DNS 重绑定）", { timeout: 10_000 }, async () => {
    const site = siteFromOut();
    const server = await serveBook(() => site, 0);
    try {
      const port = new URL(server.url).port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) {
        const page = await getWithHost(server.url, host);
        assert.equal(page.status, 200, host);
        assert.match(page.body, /<html/i, host);
      }
      for (const host of [`evil.example:${port}`, `127.0.0.1.evil.example:${port}`, `localhost.evil.example:${port}`, `localhost:${Number(port) + 1}`, "localhost", "127.0.0.1@evil.example"]) {
        const refused = await getWithHost(server.url, host);
        assert.equal(refused.status, 403, host);
        assert.match(refused.body, /只回应发往本机的请求/, host);
        assert.doesNotMatch(refused.body, /<html/i, host);
      }
      const events = await getWithHost(`${server.url}__book/events`, `evil.example:${port}`);
      assert.equal(events.status, 403, "刷新通知的事件流同样不回应别的域名");
    } finally {
      await server.close();
    }
  });
});

describe("发布版不带个人进度", () => {
  test("--serve 的带进度版本只在内存里：按进度点亮的页面从服务器送出，换一版只换内存里的书，磁盘上一个文件也不写", { timeout: 20_000 }, async () => {
    const targets = Object.fromEntries(Object.entries(history.chapters).map(([id, commits]) => [id, commits.target]));
    const progress = emptyProgress();
    progress.verified["00"] = { target: targets["00"]!, verifiedAt: "2026-11-30T10:00:00Z", dir: "/tmp/p00" };
    const before = readdirSync(work.dir).sort();
    const map = courseMap(chapters, progress, targets);
    // 带进度的一版只换封面：其余页面照旧，服务器从内存里按名字送出
    const cover = layout({ title: "封面与课程地图", body: indexBody({ map, personal: true }, chapters[0]), sidebar: sidebarHtml({ map, personal: true }), live: true });
    let site = siteFromOut({ "index.html": cover });
    const server = await serveBook(() => site, 0);
    try {
      const port = new URL(server.url).port;
      const cover = await getWithHost(server.url, `127.0.0.1:${port}`);
      assert.equal(cover.status, 200);
      assert.match(cover.body, /已点亮 1\/\d+ 章/);
      const css = await getWithHost(`${server.url}assets/book.css`, `127.0.0.1:${port}`);
      assert.equal(css.status, 200);
      assert.equal(css.body, readFileSync(path.join(out, "assets", "book.css"), "utf8"));
      // 重建只是换一份内存里的书：下一次请求就拿到新的
      site = siteFromOut();
      assert.doesNotMatch((await getWithHost(server.url, `127.0.0.1:${port}`)).body, /已点亮/);
    } finally {
      await server.close();
    }
    assert.deepEqual(readdirSync(work.dir).sort(), before, "预览不应写出任何文件");
    assert.equal(existsSync(path.join(KIT, ".book", "index.html")) && /已点亮/.test(readFileSync(path.join(KIT, ".book", "index.html"), "utf8")), false);
  });

  test("找不到的地址得到书自己的 404 页（状态码 404），页面上有回封面的链接；发布版里也有这一页", { timeout: 10_000 }, async () => {
    const site = siteFromOut();
    const server = await serveBook(() => site, 0);
    try {
      const port = new URL(server.url).port;
      for (const missing of ["no-such-page.html", "assets/nope.js", "..%2Fpackage.json"]) {
        const page = await getWithHost(`${server.url}${missing}`, `127.0.0.1:${port}`);
        assert.equal(page.status, 404, missing);
        assert.match(page.body, /没有这一页/, missing);
        assert.match(page.body, /<a href="index.html">封面与课程地图<\/a>/, missing);
      }
    } finally {
      await server.close();
    }
    assert.match(pages.get("404.html")!, /<a href="index.html">封面与课程地图<\/a>/);
  });

  test("--serve 不接受 --out：带进度的预览不写文件（退出码 2）", async () => {
    const result = await runScript("book", ["--serve", "--out", path.join(work.dir, "preview")]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--serve 不写文件/);
    assert.equal(existsSync(path.join(work.dir, "preview")), false);
  });
});

describe("课文渲染", () => {
  test("指向别章课文的相对链接改成书里的页面；未知语言的代码块给出指明课文的一句中文错误", () => {
    const md = createMarkdown();
        const rendered = renderLesson(md, "# 标题\n\n见[第 04 章](../04-scripted-model/lesson.md#小结)。\n", { where: "lessons/x/lesson.md" });
    assert.match(rendered.html, new RegExp(`href="04-scripted-model.html#${encodeURIComponent("小结")}"`));
    assert.equal(rendered.title, "标题");
    assert.throws(
      () => renderLesson(md, "# 标题\n\n```python\nprint(1)\n```\n", { where: "lessons/x/lesson.md" }),
      (error) => isCourseError(error) && /lessons\/x\/lesson\.md：代码块语言 python 没有高亮支持/.test(error.message),
    );
  });

  test("输出目录里有别的文件时拒绝重建，一个文件也不删", async () => {
    const busy = path.join(work.dir, "busy");
    mkdirSync(busy);
    writeFileSync(path.join(busy, "notes.txt"), "我的笔记");
    await assert.rejects(buildBook({ kitRoot: KIT, lessonsDir: LESSONS, outDir: busy }), (error) => isCourseError(error) && error.code === "BOOK_OUT_DIR");
    assert.equal(readFileSync(path.join(busy, "notes.txt"), "utf8"), "我的笔记");
    assert.deepEqual(readdirSync(busy), ["notes.txt"]);
  });

  test("--port 只和 --serve 一起用；多余的参数是用法错误（退出码 2）", async () => {
    const port = await runScript("book", ["--port", "4000"]);
    assert.equal(port.code, 2);
    assert.match(port.stderr, /--port 只和 --serve 一起使用/);
  });
});
