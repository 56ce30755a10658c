import { unwatchFile, watchFile } from "node:fs";
import path from "node:path";

import { serveBook } from "./engine/book/serve.js";
import { buildBook, renderBook, type BookOptions } from "./engine/book/site.js";
import { paint, runCommandLine, userCwd, warn } from "./engine/cli.js";
import { usageError } from "./engine/errors.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { loadProgress, progressPath } from "./engine/progress.js";
import { watchTree } from "./engine/watch/file-events.js";

const DEFAULT_PORT = 4173;
const DEFAULT_OUT = path.join(KIT_ROOT, ".book");

const HELP = `用法：npm run book [-- --serve [--port 端口]] [--out 目录]

把 lessons/ 里的课文做成一本静态网站，放在 .book/（不进 git）：
每章一页，带章节卡片、本章目录、提示梯子、翻页和命令的复制按钮。
所有脚本与样式都来自已安装的 npm 包，离线可用。

  （无选项）  生成发布版：不含任何个人进度，打开 .book/index.html 即可阅读
  --serve     在 http://127.0.0.1:${DEFAULT_PORT}/ 上预览：课程地图按你的进度文件点亮（只读），
              课文或进度一变页面就自动刷新；页面只在内存里，不写进 .book/；Ctrl-C 退出
  --port 端口 预览用的端口（默认 ${DEFAULT_PORT}；0 表示随便找一个空闲端口）
  --out 目录  发布版的输出目录（默认 .book/）；重建时整个清空，所以不能是放着别的东西的目录
  --help      显示本说明`;

await runCommandLine(HELP, { serve: { type: "boolean" }, port: { type: "string" }, out: { type: "string" } }, async ({ values, positionals }) => {
  if (positionals.length > 0) throw usageError("TOO_MANY_ARGS", `book 不接受参数，收到了：${positionals.join(" ")}`);
  if (values.port !== undefined && !values.serve) throw usageError("PORT_WITHOUT_SERVE", "--port 只和 --serve 一起使用");
  if (values.out !== undefined && values.out.trim() === "") throw usageError("BAD_OUT", "--out 不能是空字符串");
  const outDir = values.out === undefined ? DEFAULT_OUT : path.resolve(userCwd(), values.out);
  const base: BookOptions = { kitRoot: KIT_ROOT, lessonsDir: LESSONS_DIR, outDir };

  if (!values.serve) {
    const book = await buildBook(base);
    console.log(`书已生成：${path.relative(userCwd(), path.join(outDir, "index.html")) || outDir}（${book.pages.length} 页，${(book.ms / 1000).toFixed(2)} s）`);
    return;
  }

  if (values.out !== undefined) throw usageError("OUT_WITH_SERVE", "--serve 不写文件（带进度的预览只在内存里），--out 只用于生成发布版");
  const port = values.port === undefined ? DEFAULT_PORT : parsePort(values.port);
  const file = progressPath();
  const build = async () => {
    const { progress, warning } = loadProgress(file);
    warn(warning);
    return renderBook({ kitRoot: KIT_ROOT, lessonsDir: LESSONS_DIR, progress, live: true });
  };
  let site = await build();
  const server = await serveBook(() => site, port);
  console.log(`本地预览：${paint("cyan", server.url)}（${site.list.length} 页）`);
  console.log(paint("dim", `课程地图按 ${file} 点亮（只读，页面只在内存里，不写进 .book/）；课文或进度一变就重建并刷新页面。Ctrl-C 退出`));

  // 串行重建：重建途中又有改动，结束后再来一次
  let running = false;
  let again = false;
  const rebuild = async (why: string) => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      const rebuilt = await build();
      site = rebuilt;
      console.log(`${paint("green", "已重建")}（${why}，${(rebuilt.ms / 1000).toFixed(2)} s）`);
      server.reload();
    } catch (error) {
      // 课文写到一半出错：保留上一次的页面，说明原因，等下一次保存
      process.stderr.write(`${paint("red", "重建失败：", process.stderr)}${(error as Error).message}\n`);
    } finally {
      running = false;
      if (again) {
        again = false;
        void rebuild("又有改动");
      }
    }
  };
  const watcher = watchTree({
    root: LESSONS_DIR,
    onChange: (files) => void rebuild(files.slice(0, 3).join("、")),
    onFallback: (reason) => console.log(paint("dim", reason)),
  });
  watchFile(file, { interval: 1000 }, () => void rebuild("进度文件"));

  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  watcher.close();
  unwatchFile(file);
  await server.close();
});

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw usageError("BAD_PORT", `--port 应当是 0–65535 之间的整数，收到了 ${text}`);
  return port;
}
