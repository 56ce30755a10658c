// 书页上可选的几样东西：没有脚本时页面照样能读，只是少了这些便利。
(() => {
  "use strict";
  const status = document.createElement("p");
  status.className = "visually-hidden";
  status.setAttribute("aria-live", "polite");
  document.body.append(status);

  // 每条命令一个复制按钮
  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // 不是安全上下文或没有剪贴板权限：退回到选中文字再复制
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.append(area);
      area.select();
      let ok = false;
      try {
        ok = document.execCommand("copy");
      } catch {
        ok = false;
      }
      area.remove();
      return ok;
    }
  }
  function copyButton(text, label) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "复制";
    button.setAttribute("aria-label", label);
    button.addEventListener("click", async () => {
      const ok = await copyText(text);
      button.textContent = ok ? "已复制" : "请手动复制";
      button.classList.toggle("done", ok);
      status.textContent = ok ? "已复制" : "浏览器不允许复制，请手动选中代码";
      setTimeout(() => {
        button.textContent = "复制";
        button.classList.remove("done");
      }, 1600);
    });
    return button;
  }
  for (const line of document.querySelectorAll(".line.command")) {
    const text = (line.querySelector(".cmd") ?? line).textContent.trim();
    const button = copyButton(text, `复制命令：${text}`);
    button.dataset.command = text;
    line.append(button);
  }
  // 其余的代码块（TypeScript、JSON、局部代码提示……）整块复制
  for (const figure of document.querySelectorAll("figure.code")) {
    if (figure.querySelector(".line.command")) continue;
    const code = figure.querySelector("pre code");
    if (!code) continue;
    const button = copyButton(code.textContent, "复制这段代码");
    button.classList.add("block");
    figure.append(button);
  }

  // 手机上的「章节」按钮：把课程地图从侧边拉出来，Esc、关闭按钮或点一章都会收起
  const menu = document.querySelector(".menu-button");
  const sidebar = document.getElementById("chapters");
  if (menu && sidebar) {
    const close = document.createElement("button");
    close.type = "button";
    close.className = "sidebar-close";
    close.setAttribute("aria-label", "收起章节列表");
    close.textContent = "✕";
    sidebar.prepend(close);
    const setOpen = (open) => {
      document.body.classList.toggle("menu-open", open);
      menu.setAttribute("aria-expanded", String(open));
      if (open) (sidebar.querySelector('a[aria-current="page"]') ?? sidebar.querySelector("a"))?.focus();
    };
    menu.addEventListener("click", (event) => {
      event.preventDefault();
      setOpen(!document.body.classList.contains("menu-open"));
    });
    close.addEventListener("click", () => {
      setOpen(false);
      menu.focus();
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && document.body.classList.contains("menu-open")) {
        setOpen(false);
        menu.focus();
      }
    });
  }

  // 全书搜索：第一次用时才加载 MiniSearch 和构建时生成的索引（普通脚本，file:// 打开也能用）
  const searchForm = document.querySelector("form.search");
  const searchInput = document.getElementById("search");
  const searchResults = document.getElementById("search-results");
  let searchIndex;
  let searchLoading;
  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.addEventListener("load", resolve);
      script.addEventListener("error", () => reject(new Error(`没能加载 ${src}`)));
      document.head.append(script);
    });
  }
  function loadSearch() {
    searchLoading ??= Promise.all(["assets/minisearch.js", "assets/search-tokenize.js", "assets/search-index.js"].map(loadScript)).then(() => {
      searchIndex = window.MiniSearch.loadJSON(window.bookSearchIndex, {
        fields: ["title", "text"],
        storeFields: ["page", "anchor", "chapter", "title", "text"],
        tokenize: window.tokenizeForSearch,
        processTerm: (term) => term,
      });
    });
    return searchLoading;
  }
  function escapeText(text) {
    return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
  }
  // 结果里的一小段原文：从第一次出现查询词的地方前后各取一些字，查询词加上 mark
  function snippet(text, query) {
    const at = text.toLowerCase().indexOf(query.toLowerCase());
    const start = Math.max(0, (at < 0 ? 0 : at) - 30);
    const piece = (start > 0 ? "…" : "") + text.slice(start, start + 110) + (start + 110 < text.length ? "…" : "");
    if (at < 0) return escapeText(piece);
    const inner = piece.toLowerCase().indexOf(query.toLowerCase());
    return escapeText(piece.slice(0, inner)) + `<mark>${escapeText(piece.slice(inner, inner + query.length))}</mark>` + escapeText(piece.slice(inner + query.length));
  }
  function showResults() {
    const query = searchInput.value.trim();
    if (query === "" || !searchIndex) {
      searchResults.hidden = true;
      searchResults.innerHTML = "";
      return;
    }
    // 分词命中之外，原文里一字不差地出现查询词的小节排在前面
    const lower = query.toLowerCase();
    const exact = (hit) => (hit.title.toLowerCase().includes(lower) ? 2 : 0) + (hit.text.toLowerCase().includes(lower) ? 1 : 0);
    const hits = searchIndex
      .search(query, { prefix: true, boost: { title: 3 } })
      .map((hit, rank) => ({ hit, rank, exact: exact(hit) }))
      .sort((a, b) => b.exact - a.exact || a.rank - b.rank)
      .slice(0, 12)
      .map(({ hit }) => hit);
    searchResults.hidden = false;
    searchResults.innerHTML =
      hits.length === 0
        ? `<li class="empty">没有找到「${escapeText(query)}」</li>`
        : hits
            .map((hit) => {
              const href = hit.anchor ? `${hit.page}#${encodeURIComponent(hit.anchor)}` : hit.page;
              return `<li><a href="${href}"><span class="where">${escapeText(hit.chapter)}</span><span class="heading">${escapeText(hit.title)}</span><span class="snippet">${snippet(hit.text, query)}</span></a></li>`;
            })
            .join("");
  }
  if (searchForm && searchInput && searchResults) {
    searchForm.hidden = false;
    searchForm.addEventListener("submit", (event) => {
      event.preventDefault();
      searchResults.querySelector("a")?.click();
    });
    searchInput.addEventListener("focus", () => void loadSearch().then(showResults, (error) => (status.textContent = error.message)));
    searchInput.addEventListener("input", () => void loadSearch().then(showResults));
    searchInput.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown") {
        event.preventDefault();
        searchResults.querySelector("a")?.focus();
      }
    });
    searchResults.addEventListener("keydown", (event) => {
      const links = [...searchResults.querySelectorAll("a")];
      const at = links.indexOf(document.activeElement);
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const next = at + (event.key === "ArrowDown" ? 1 : -1);
        (next < 0 ? searchInput : links[Math.min(next, links.length - 1)]).focus();
      }
    });
    searchForm.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        searchInput.value = "";
        showResults();
        searchInput.blur();
      }
    });
    document.addEventListener("click", (event) => {
      if (!searchForm.contains(event.target)) searchResults.hidden = true;
    });
    // 和 mdBook 一样：按 / 或 s 跳到搜索框
    document.addEventListener("keydown", (event) => {
      if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return;
      if (event.key !== "/" && event.key !== "s") return;
      const target = event.target;
      if (target instanceof Element && target.closest("input, textarea, select, [contenteditable]")) return;
      event.preventDefault();
      searchInput.focus();
      searchInput.select();
    });
  }

  // ← / → 翻页（焦点在输入框、代码块里或按着修饰键时不抢按键）
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.defaultPrevented) return;
    const target = event.target;
    if (target instanceof Element && target.closest("input, textarea, select, pre, [contenteditable]")) return;
    const rel = event.key === "ArrowLeft" ? "prev" : event.key === "ArrowRight" ? "next" : undefined;
    const link = rel && document.querySelector(`.pager a[rel="${rel}"]`);
    if (link) {
      event.preventDefault();
      location.href = link.href;
    }
  });

  // 窄屏上先收起本章目录，正文不被长列表推下去
  const toc = document.querySelector(".toc details");
  if (toc && window.matchMedia("(max-width: 1180px)").matches) toc.open = false;

  // 本章目录跟着阅读位置高亮：取最后一个已经滚过视口上方四分之一处的标题；
  // 滚到页底时是最后一节。载入（包括刷新后浏览器恢复滚动位置）时也算一次，不等第一次滚动。
  const links = new Map([...document.querySelectorAll(".toc a")].map((a) => [decodeURIComponent(a.hash.slice(1)), a]));
  const headings = [...links.keys()].map((id) => document.getElementById(id)).filter(Boolean);
  let tocFrame = 0;
  function markSection() {
    tocFrame = 0;
    if (headings.length === 0) return;
    const line = window.innerHeight * 0.25;
    const atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
    let current = headings[0];
    for (const heading of headings) {
      if (heading.getBoundingClientRect().top <= line) current = heading;
    }
    if (atBottom) current = headings[headings.length - 1];
    for (const [id, a] of links) {
      const active = id === current.id;
      a.classList.toggle("active", active);
      if (active) a.setAttribute("aria-current", "location");
      else a.removeAttribute("aria-current");
    }
  }
  if (headings.length > 0) {
    const schedule = () => {
      if (tocFrame === 0) tocFrame = requestAnimationFrame(markSection);
    };
    window.addEventListener("scroll", schedule, { passive: true });
    window.addEventListener("resize", schedule);
    window.addEventListener("hashchange", schedule);
    // 浏览器在 load 之后才恢复刷新前的滚动位置
    window.addEventListener("load", () => setTimeout(markSection, 0));
    markSection();
  }

  // Mermaid 图：图快要滚进视野时才加载随书附带的 mermaid（3 MB），画成 SVG，配色跟随系统主题
  const diagrams = document.querySelectorAll("pre.mermaid");
  let mermaidLoading = false;
  // 图不缩到看不清：放不下时最多缩到原来的 0.75，再宽就让图框横向滚动（手机上左右滑动看）
  const MIN_SCALE = 0.75;
  function keepReadable() {
    for (const svg of document.querySelectorAll(".diagram svg")) {
      const natural = svg.viewBox.baseVal?.width || svg.getBBox().width;
      if (!natural) continue;
      svg.style.maxWidth = "none";
      svg.style.width = `${Math.min(natural, Math.max(natural * MIN_SCALE, svg.parentElement.clientWidth))}px`;
      svg.style.height = "auto";
    }
  }
  window.addEventListener("resize", () => {
    if (document.querySelector(".diagram svg")) keepReadable();
  });
  function drawDiagrams() {
    if (mermaidLoading) return;
    mermaidLoading = true;
    const script = document.createElement("script");
    script.src = "assets/mermaid.min.js";
    script.addEventListener("load", () => {
      const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: dark ? "dark" : "default", fontFamily: getComputedStyle(document.body).fontFamily });
      window.mermaid.run({ nodes: diagrams }).then(keepReadable, (error) => {
        status.textContent = `图没能画出来，显示的是它的源文字：${error.message}`;
      });
    });
    document.head.append(script);
  }
  if (diagrams.length > 0) {
    if ("IntersectionObserver" in window) {
      const watcher = new IntersectionObserver(
        (entries) => {
          if (!entries.some((entry) => entry.isIntersecting)) return;
          watcher.disconnect();
          drawDiagrams();
        },
        { rootMargin: "600px 0px" },
      );
      for (const diagram of diagrams) watcher.observe(diagram);
    } else {
      drawDiagrams();
    }
  }

  // 本地预览：课文或进度一变，服务器通知页面刷新
  if (document.documentElement.hasAttribute("data-live") && "EventSource" in window) {
    const events = new EventSource("/__book/events");
    events.addEventListener("reload", () => location.reload());
  }
})();
