import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { chromium, type BrowserContext, type Page } from "playwright-core";

import { loadChapters, type Chapter } from "../scripts/engine/chapters.ts";
import { ensureHistory, locateGitDir } from "../scripts/engine/history.ts";
import { COURSE_BRANCH } from "../scripts/engine/paths.ts";
import { emptyProgress } from "../scripts/engine/progress.ts";
import { cloneKit, git, KIT, TSX, tempDir } from "./helpers.ts";

/**
 * 在真正的浏览器里读书：Debian 的 Chromium（无头）+ playwright-core。
 * 服务器是一份新克隆里的 npm run book -- --serve，和学习者第一次用时一样。
 */
const CHROMIUM = "/usr/bin/chromium";
const SKIP = existsSync(CHROMIUM) ? false : `没有找到 ${CHROMIUM}，跳过浏览器测试（Debian / Ubuntu 上可以用 sudo apt-get install chromium 安装）`;
/** 截图给人看：放在套件根目录的 .book-screenshots/（不进 git），从不放进发布用的 .book/。 */
const SCREENSHOTS = process.env.PI_COURSE_SCREENSHOTS ?? path.join(KIT, ".book-screenshots");

const work = tempDir("book-browser");
let kit: string;
let chapters: Chapter[];
let server: ChildProcess | undefined;
let url: string;
let context: BrowserContext | undefined;
const problems: string[] = [];
const progressFile = path.join(work.dir, "progress.json");
const progress = emptyProgress();
let targets: Record<string, string> = {};

/** 启动预览，等它在输出里报出地址。 */
function startServer(env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, ["--import", TSX, path.join(kit, "scripts", "book.ts"), "--serve", "--port", "0"], {
    cwd: kit,
    env: { ...process.env, NO_COLOR: "1", INIT_CWD: kit, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server = child;
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => reject(new Error(`预览没有在 30 秒内启动：${output}`)), 30_000);
    const collect = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /本地预览：(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", collect);
    child.stderr!.on("data", collect);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`预览提前退出（${code}）：${output}`));
    });
  });
}

/**
 * 新克隆里还没有课程分支：从套件取来同样的提交和缓存（哈希是确定的），
 * 省掉预览启动时重建整段历史的几秒。课文若与缓存对不上，预览照常重建。
 */
async function primeHistory(clone: string): Promise<void> {
  await git(clone, "fetch", "--quiet", KIT, `+refs/heads/${COURSE_BRANCH}:refs/heads/${COURSE_BRANCH}`);
  const cache = path.join(await locateGitDir(KIT), "pi-course", "history.json");
  mkdirSync(path.join(clone, ".git", "pi-course"), { recursive: true });
  copyFileSync(cache, path.join(clone, ".git", "pi-course", "history.json"));
}

function watchProblems(page: Page): void {
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`控制台错误：${message.text()}（${page.url()}）`);
  });
  page.on("pageerror", (error) => problems.push(`页面异常：${error.message}（${page.url()}）`));
  page.on("requestfailed", (request) => {
    // 翻页时还没下载完的请求（刷新通知的长连接、正在加载的 mermaid）被浏览器中止，不算失败
    const reason = request.failure()?.errorText ?? "";
    if (reason !== "net::ERR_ABORTED") problems.push(`请求失败：${request.url()}（${reason}）`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}：${response.url()}`);
  });
}

/**
 * 表格里的 code 在哪些地方折了行：逐字量出每个字所在的行，换行两边都是字母、数字或下划线就是把一个词切开了。
 * 在空格、汉字、标点（/ . - 等）处换行不算。
 */
async function midWordBreaks(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const broken: string[] = [];
    const word = /[A-Za-z0-9_]/;
    for (const code of document.querySelectorAll("table code")) {
      const text = code.textContent ?? "";
      if (code.getClientRects().length < 2) continue;
      const node = code.firstChild;
      if (!(node instanceof Text)) continue;
      const range = document.createRange();
      let lastTop: number | undefined;
      for (let index = 0; index < text.length; index++) {
        range.setStart(node, index);
        range.setEnd(node, index + 1);
        const rect = range.getClientRects()[0];
        if (!rect || rect.width === 0) continue;
        if (lastTop !== undefined && rect.top > lastTop + 2 && word.test(text[index - 1] ?? "") && word.test(text[index]!)) {
          broken.push(`${text.slice(0, index)}⏎${text.slice(index)}`);
        }
        lastTop = rect.top;
      }
    }
    return broken;
  });
}

async function brokenImages(page: Page): Promise<string[]> {
  return page.evaluate(() => [...document.images].filter((image) => !image.complete || image.naturalWidth === 0).map((image) => image.src));
}

before(async () => {
  if (SKIP) return;
  kit = await cloneKit(work.dir);
  chapters = loadChapters(path.join(kit, "lessons"));
  const history = await ensureHistory(KIT, chapters);
  // 学习者已经点亮了第 00 章：地图应当据此点亮，下一章是 01
  targets = Object.fromEntries(Object.entries(history.chapters).map(([id, commits]) => [id, commits.target]));
  progress.verified["00"] = { target: targets["00"]!, verifiedAt: "2026-11-30T10:00:00Z", dir: work.dir };
  writeFileSync(progressFile, JSON.stringify(progress));
  await primeHistory(kit);
  url = await startServer({ PI_COURSE_PROGRESS: progressFile });
  context = await chromium.launchPersistentContext(path.join(work.dir, "chromium-profile"), {
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1400, height: 1000 },
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(url).origin });
});

after(async () => {
  await context?.close();
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  work.remove();
});

test("在 Chromium 里读书：地图按进度点亮，逐章翻到底再翻回来，打开一级提示，复制一条命令，课文或进度一改页面就刷新", { skip: SKIP, timeout: 300_000 }, async () => {
  const page = context!.pages()[0] ?? (await context!.newPage());
  watchProblems(page);

  await page.goto(url);
  assert.equal(await page.locator("h1").textContent(), "build-your-own-pi");
  assert.equal(await page.locator('.sidebar li.lit a[href="00-prologue.html"]').count(), 1, "第 00 章应当点亮");
  assert.match((await page.locator("a.start").textContent()) ?? "", /继续：第 01 章/);

  // 从封面一路「下一页」到最后一章
  await page.locator('.pager a[rel="next"]').click();
  for (const [index, chapter] of chapters.entries()) {
    await page.waitForURL(new RegExp(`${chapter.dirName}\\.html$`), { waitUntil: "domcontentloaded" });
    assert.match((await page.locator("article h1").textContent()) ?? "", new RegExp(`^第 ${chapter.id} 章`));
    assert.equal(await page.locator(`.sidebar a[aria-current="page"]`).getAttribute("href"), `${chapter.dirName}.html`);
    assert.deepEqual(await brokenImages(page), [], chapter.dirName);
    // 章节卡片是短的：开始这一章在第一屏里，整张卡片不超过两屏
    const card = await page.evaluate(() => ({
      start: document.getElementById("开始这一章")!.getBoundingClientRect().top + window.scrollY,
      height: document.querySelector("section.card")!.getBoundingClientRect().height,
    }));
    assert.ok(card.start < 1000, `${chapter.dirName}：「开始这一章」在 ${Math.round(card.start)} px 处`);
    assert.ok(card.height < 2000, `${chapter.dirName}：章节卡片高 ${Math.round(card.height)} px`);
    // 表格里的标识符不在词中间断开：桌面上、390 px 的手机上都一样
    assert.deepEqual(await midWordBreaks(page), [], `${chapter.dirName}（1400 px）`);
    if (await page.locator("table code").count() > 0) {
      await page.setViewportSize({ width: 390, height: 844 });
      assert.deepEqual(await midWordBreaks(page), [], `${chapter.dirName}（390 px）`);
      await page.setViewportSize({ width: 1400, height: 1000 });
    }
    if (index < chapters.length - 1) await page.locator('.pager a[rel="next"]').click();
  }
  assert.equal(await page.locator('.pager a[rel="next"]').count(), 0, "最后一章没有下一页");

  // 再一路「上一页」回到第 00 章，最后一步用键盘 ←
  for (const chapter of [...chapters].reverse().slice(1)) {
    await page.locator('.pager a[rel="prev"]').click();
    await page.waitForURL(new RegExp(`${chapter.dirName}\\.html$`), { waitUntil: "domcontentloaded" });
  }
  await page.locator("main").focus();
  await page.keyboard.press("ArrowLeft");
  await page.waitForURL(/index\.html$/);

  // 第 03 章：提示梯子一次只开一级
  await page.goto(`${url}03-message-ir.html`);
  const ladder = page.locator("section.ladder").first();
  const level = (n: number) => ladder.locator(`details.hint[data-level="${n}"] > summary`);
  assert.equal(await level(1).isVisible(), true);
  assert.equal(await level(2).isVisible(), false, "没打开第 1 级时看不到第 2 级");
  await level(1).click();
  assert.equal(await level(2).isVisible(), true);
  assert.equal(await level(3).isVisible(), false, "第 3 级要等第 2 级打开");

  // 每条命令都有复制按钮；点一下，剪贴板里就是这条命令
  const commandLines = await page.locator(".line.command").count();
  assert.ok(commandLines > 5);
  assert.equal(await page.locator(".line.command button.copy").count(), commandLines);
  const button = page.locator("button.copy").first();
  const command = await button.getAttribute("data-command");
  assert.equal(command, "npm run checkpoint -- 03", "卡片最前面是开始这一章的命令");
  await button.click();
  await page.waitForFunction(() => document.querySelector("button.copy")?.textContent === "已复制");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), command);

  // 截图给人看：浅色的第 00 章、第 03 章，深色的第 03 章
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(SCREENSHOTS, "03-message-ir.png") });
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto(`${url}03-message-ir.html#${encodeURIComponent("实践-3.1")}`);
  await page.screenshot({ path: path.join(SCREENSHOTS, "03-message-ir-dark.png") });
  await page.emulateMedia({ colorScheme: "light" });
  await page.goto(`${url}00-prologue.html`);
  // Mermaid 图快滚到眼前时才加载并画成 SVG
  await page.locator("pre.mermaid").first().scrollIntoViewIfNeeded();
  await page.waitForFunction(() => [...document.querySelectorAll("pre.mermaid")].every((pre) => pre.querySelector("svg")));
  await page.screenshot({ path: path.join(SCREENSHOTS, "00-prologue.png") });

  // 课文一改，打开着的页面自己刷新
  const marker = "这一句是浏览器测试临时加上的。";
  const reloaded = page.waitForEvent("load", { timeout: 20_000 });
  appendFileSync(path.join(kit, "lessons", "00-prologue", "lesson.md"), `\n${marker}\n`);
  await reloaded;
  assert.ok(((await page.locator("article").textContent()) ?? "").includes(marker));

  // verify 点亮了第 01 章（进度文件变了）：地图跟着刷新
  const relit = page.waitForEvent("load", { timeout: 20_000 });
  progress.verified["01"] = { target: targets["01"]!, verifiedAt: "2026-11-30T11:00:00Z", dir: work.dir };
  writeFileSync(progressFile, JSON.stringify(progress));
  await relit;
  assert.equal(await page.locator('.sidebar li.lit a[href="01-typescript-survival.html"]').count(), 1, "第 01 章应当点亮");

  assert.deepEqual(problems, []);
});

test("提示梯子的第 2、3 级一行一条；第 4 级的局部代码和每个代码块都有复制按钮", { skip: SKIP, timeout: 60_000 }, async () => {
  const page = await context!.newPage();
  watchProblems(page);
  const chapter = chapters.find((candidate) => candidate.id === "03")!;
  const lab = chapter.labs[0]!;
  await page.goto(`${url}${chapter.dirName}.html`);
  const ladder = page.locator("section.ladder").first();
  for (const n of [1, 2, 3, 4]) await ladder.locator(`details.hint[data-level="${n}"] > summary`).click();
  const lines = (key: "signature" | "pseudocode") => lab.hints[key].split("\n").filter((line) => line.trim() !== "").length;
  const own = (n: number) => ladder.locator(`details.hint[data-level="${n}"] > .hint-body > ul.hint-lines > li`);
  assert.equal(await own(2).count(), lines("signature"));
  assert.equal(await own(3).count(), lines("pseudocode"));
  // 一行一条：每一项各占一行，上下排开
  const tops = await own(2).evaluateAll((items) => items.map((item) => item.getBoundingClientRect().top));
  assert.ok(tops.every((top, index) => index === 0 || top > tops[index - 1]!), `第 2 级的各行应当上下排开：${tops.join(", ")}`);

  // 每个代码块至少一个复制按钮：命令逐条，其余整块
  const bare = await page.evaluate(() => [...document.querySelectorAll("figure.code")].filter((figure) => !figure.querySelector("button.copy")).length);
  assert.equal(bare, 0, "有代码块没有复制按钮");
  const code = ladder.locator('details.hint[data-level="4"] figure.code');
  await code.locator("button.copy").click();
  await page.waitForFunction(() => document.querySelector('details.hint[data-level="4"] figure.code button.copy')?.textContent === "已复制");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), lab.hints.code.replace(/\n$/, ""));
  await page.close();
  assert.deepEqual(problems, []);
});

test("发布的书不带个人进度：--serve 不往 .book/ 写任何东西；截图存在 .book/ 之外（1400 px 与 390 px，浅色与深色）；找不到的地址是带回封面链接的 404 页", { skip: SKIP, timeout: 60_000 }, async () => {
  assert.equal(existsSync(path.join(kit, ".book")), false, "预览不应生成 .book/");
  assert.ok(!path.resolve(SCREENSHOTS).startsWith(path.resolve(KIT, ".book") + path.sep));
  const page = await context!.newPage();
  watchProblems(page);
  mkdirSync(SCREENSHOTS, { recursive: true });
  for (const [width, height] of [[1400, 1000], [390, 844]] as const) {
    await page.setViewportSize({ width, height });
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const file of ["index", "05-provider-adapter"]) {
        await page.goto(`${url}${file}.html`);
        await page.screenshot({ path: path.join(SCREENSHOTS, `${file}-${width}-${scheme}.png`) });
      }
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.close();
  assert.deepEqual(problems, []);

  // 404：单独一页，不算进上面的问题清单
  const lost = await context!.newPage();
  const response = await lost.goto(`${url}no-such-chapter.html`);
  assert.equal(response?.status(), 404);
  assert.equal(await lost.locator("article h1").textContent(), "没有这一页");
  await lost.locator('main a[href="index.html"]').click();
  await lost.waitForURL(/index\.html$/);
  assert.equal(await lost.locator("h1").textContent(), "build-your-own-pi");
  await lost.close();
});

/** 看得见的点按目标里，高或宽不到 24 px 的（正文里的行内链接不算）。 */
async function smallTargets(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll(".topbar a, .sidebar a, .sidebar button, .toc a, .toc summary, .pager a, button, details.hint > summary")]
      .filter((element) => element.checkVisibility())
      .map((element) => ({ element, box: element.getBoundingClientRect() }))
      .filter(({ box }) => box.width > 0 && (box.height < 24 || box.width < 24))
      .map(({ element, box }) => `${element.className || element.tagName}「${(element.textContent ?? "").trim().slice(0, 20)}」${Math.round(box.width)}×${Math.round(box.height)}`),
  );
}

test("手机上（390 px）：顶上的「章节」按钮拉出课程地图，Esc 收起，点一章就去那一章；点按目标都不小于 24 px；桌面上没有这个按钮", { skip: SKIP, timeout: 60_000 }, async () => {
  const page = await context!.newPage();
  watchProblems(page);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${url}05-provider-adapter.html`);
  const menu = page.locator(".menu-button");
  const box = await menu.boundingBox();
  assert.ok(box && box.y < 80, "「章节」按钮在页面顶上");
  const inView = () => page.locator('#chapters a[aria-current="page"]').evaluate((a) => {
    const rect = a.getBoundingClientRect();
    return rect.top >= 0 && rect.bottom <= window.innerHeight && a.checkVisibility();
  });
  assert.equal(await inView(), false, "没打开时地图在页末");
  await menu.click();
  assert.equal(await menu.getAttribute("aria-expanded"), "true");
  assert.equal(await inView(), true, "打开后本章就在眼前");
  assert.deepEqual(await smallTargets(page), []);
  await page.keyboard.press("Escape");
  assert.equal(await menu.getAttribute("aria-expanded"), "false");
  assert.equal(await inView(), false);
  await menu.click();
  await page.locator('#chapters a[href="06-tool-contract.html"]').click();
  await page.waitForURL(/06-tool-contract\.html$/);

  // 章节页上其余的点按目标：目录、提示梯子、复制按钮、翻页
  await page.locator(".toc summary").click();
  for (const summary of await page.locator("section.ladder").first().locator("summary").all()) await summary.click();
  assert.deepEqual(await smallTargets(page), []);

  await page.setViewportSize({ width: 1400, height: 1000 });
  assert.equal(await page.locator(".menu-button").isVisible(), false, "桌面上地图一直在左栏");
  assert.deepEqual(await smallTargets(page), []);
  await page.close();
  assert.deepEqual(problems, []);
});

test("全书搜索：按 / 或 s 跳到搜索框；搜中文词和英文标识符都有结果，点结果就到那一章的那一节", { skip: SKIP, timeout: 60_000 }, async () => {
  const page = await context!.newPage();
  watchProblems(page);
  await page.goto(`${url}03-message-ir.html`);
  const input = page.locator("#search");
  await page.locator("main").focus();
  await page.keyboard.press("/");
  assert.equal(await input.evaluate((element) => element === document.activeElement), true, "/ 聚焦搜索框");
  await input.fill("上下文");
  const first = page.locator("#search-results a").first();
  await first.waitFor();
  assert.match((await first.textContent()) ?? "", /上下文/);
  const href = (await first.getAttribute("href"))!;
  await first.click();
  await page.waitForURL((target) => target.href.endsWith(href));
  const [file, anchor] = href.split("#");
  assert.match(page.url(), new RegExp(`${file}`));
  if (anchor) assert.equal(await page.locator(`[id="${decodeURIComponent(anchor)}"]`).count(), 1);

  // 另一页上用 s，搜一个英文标识符
  await page.goto(`${url}index.html`);
  await page.locator("body").press("s");
  assert.equal(await input.evaluate((element) => element === document.activeElement), true, "s 聚焦搜索框");
  await page.keyboard.type("SseDecoder");
  await page.locator("#search-results a").first().waitFor();
  assert.match((await page.locator("#search-results a").first().getAttribute("href")) ?? "", /^05-provider-adapter\.html/);
  await page.keyboard.press("Escape");
  assert.equal(await page.locator("#search-results").isVisible(), false);
  await page.close();
  assert.deepEqual(problems, []);
});

test("读得舒服：正文不小于 16 px，中英混排只用一种字体；图不缩到 0.6 倍以下（放不下就横向滚动）；未点亮不用完成的颜色；刷新后本章目录仍高亮眼前的一节，滚到底是最后一节", { skip: SKIP, timeout: 90_000 }, async () => {
  const page = await context!.newPage();
  watchProblems(page);
  for (const name of ["00-prologue", "11-context-compaction"]) {
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.goto(`${url}${name}.html`);
    for (const diagram of await page.locator("pre.mermaid").all()) {
      await diagram.scrollIntoViewIfNeeded();
      await diagram.locator("svg").waitFor();
    }
    // 同一页先桌面、再换成手机的宽度：图随窗口重新量过
    for (const [width, height] of [[1400, 1000], [390, 844]] as const) {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      const small = await page.evaluate(() =>
        [...document.querySelectorAll(".lesson > p, .lesson > ul > li, .lesson > ol > li, .lesson td, .card .lead")]
          .map((element) => ({ text: (element.textContent ?? "").slice(0, 20), size: parseFloat(getComputedStyle(element).fontSize) }))
          .filter((item) => item.size < 16),
      );
      assert.deepEqual(small, [], `${name}（${width} px）的正文字号`);
      const diagrams = await page.evaluate(() =>
        [...document.querySelectorAll(".diagram")].map((figure) => {
          const svg = figure.querySelector("svg")!;
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          const fits = svg.getBoundingClientRect().width <= figure.clientWidth + 1;
          return { scale, reachable: fits || figure.scrollWidth > figure.clientWidth };
        }),
      );
      assert.ok(diagrams.length > 0, name);
      if (name === "11-context-compaction" && width === 1400) {
        // 第 11 章的第一张图：先画路径、再画上下文（与源码的顺序一致），一屏看得下，不是又细又长的一条
        const first = await page.evaluate(() => {
          const svg = document.querySelector(".diagram svg")!;
          const boxes: Record<string, DOMRect> = {};
          for (const group of svg.querySelectorAll("g.cluster")) boxes[(group.textContent ?? "").trim()] = group.getBoundingClientRect();
          const path = boxes["路径"];
          const context = boxes["上下文"];
          return { height: svg.getBoundingClientRect().height, ordered: path !== undefined && context !== undefined && (path.left < context.left || path.top < context.top) };
        });
        assert.ok(first.ordered, "第 11 章第一张图：路径排在上下文之前");
        assert.ok(first.height <= 900, `第 11 章第一张图高 ${Math.round(first.height)} px`);
      }
      for (const diagram of diagrams) {
        assert.ok(diagram.scale >= 0.6, `${name}（${width} px）：图缩到了 ${diagram.scale.toFixed(2)} 倍`);
        assert.ok(diagram.reachable, `${name}（${width} px）：图的右边看不到也滚不到`);
      }
    }
  }
  await page.setViewportSize({ width: 1400, height: 1000 });

  // 中英混排的段落里，拉丁字母和汉字用同一种（非等宽）字体：排在前面的中文字体自带拉丁字母
  await page.goto(`${url}05-provider-adapter.html`);
  const cdp = await context!.newCDPSession(page);
  await cdp.send("DOM.enable");
  await cdp.send("CSS.enable");
  const { root } = await cdp.send("DOM.getDocument");
  const { nodeIds } = await cdp.send("DOM.querySelectorAll", { nodeId: root.nodeId, selector: ".lesson > p" });
  const CJK_FONTS = ["PingFang SC", "Hiragino Sans GB", "Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "Microsoft YaHei"];
  for (const nodeId of nodeIds.slice(0, 8)) {
    const { fonts } = await cdp.send("CSS.getPlatformFontsForNode", { nodeId });
    const families = new Set(fonts.map((font) => font.familyName).filter((family) => !/mono/i.test(family)));
    // 机器上没有这几种中文字体时无从比较（CI 用 apt 装上 Noto CJK）
    if (![...families].some((family) => CJK_FONTS.includes(family))) continue;
    assert.equal(families.size, 1, `正文用了几种字体：${[...families].join("、")}`);
  }
  await cdp.detach();

  // 封面：00 章点亮、其余未点亮；未点亮的状态字不是“完成”的绿色
  await page.goto(url);
  const colours = await page.evaluate(() => ({
    lit: getComputedStyle(document.querySelector(".chapters li.lit .status")!).color,
    open: getComputedStyle(document.querySelector(".chapters li.open .status")!).color,
  }));
  assert.notEqual(colours.open, colours.lit);

  // 跳到中间一节、刷新：目录仍高亮这一节；滚到页底：最后一节
  await page.goto(`${url}05-provider-adapter.html`);
  const target = await page.evaluate(() => {
    const ids = [...document.querySelectorAll(".toc a")].map((a) => decodeURIComponent((a as HTMLAnchorElement).hash.slice(1)));
    const tops = ids.map((id) => document.getElementById(id)!.getBoundingClientRect().top + window.scrollY);
    // 一节至少 600 px 长：跳过去之后下一节还在视口四分之一线以下
    const index = ids.findIndex((_, i) => i > ids.length / 3 && tops[i + 1] !== undefined && tops[i + 1]! - tops[i]! > 600);
    return ids[index]!;
  });
  await page.goto(`${url}05-provider-adapter.html#${encodeURIComponent(target)}`);
  const active = () => page.evaluate(() => decodeURIComponent((document.querySelector(".toc a.active") as HTMLAnchorElement | null)?.hash.slice(1) ?? ""));
  await page.waitForFunction(() => document.querySelector(".toc a.active") !== null);
  assert.equal(await active(), target);
  await page.reload();
  await page.waitForFunction((id) => decodeURIComponent((document.querySelector(".toc a.active") as HTMLAnchorElement | null)?.hash.slice(1) ?? "") === id, target, { timeout: 5_000 });
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const last = await page.evaluate(() => decodeURIComponent([...document.querySelectorAll<HTMLAnchorElement>(".toc a")].at(-1)!.hash.slice(1)));
  await page.waitForFunction((id) => decodeURIComponent((document.querySelector(".toc a.active") as HTMLAnchorElement | null)?.hash.slice(1) ?? "") === id, last, { timeout: 5_000 });
  await page.close();
  assert.deepEqual(problems, []);
});
