import { createReadStream } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import path from "node:path";

import { CourseError } from "../errors.js";
import { NOT_FOUND_PAGE, type BookSite } from "./site.js";

/** 本地预览服务器：只听 127.0.0.1，送出内存里的那一版书，并用 Server-Sent Events 通知页面刷新。 */
export const EVENTS_PATH = "/__book/events";

/** 浏览器发往本机时 Host 头里可能写的名字（比较时不分大小写）。 */
const LOOPBACK_NAMES = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * 只听 127.0.0.1 还不够：DNS 重绑定让 evil.example 先解析到攻击者的服务器、再解析到 127.0.0.1，
 * 浏览器便以为在和同一个站点说话，页面里的脚本就读得到预览里的进度。那时 Host 头仍是 evil.example，
 * 所以只回应 Host 是本机名字、端口是这台服务器的请求。
 */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  const match = /^(\[::1\]|[^:]+)(?::(\d+))?$/.exec(host ?? "");
  if (match === null || !LOOPBACK_NAMES.has(match[1]!.toLowerCase())) return false;
  // 浏览器只在默认端口 80 上省略端口。
  return match[2] === undefined ? port === 80 : Number(match[2]) === port;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json; charset=utf-8",
};

export interface BookServer {
  url: string;
  /** 让所有打开的页面刷新。 */
  reload(): void;
  close(): Promise<void>;
}

/**
 * 书从哪里来：给出当前这一版的 BookSite（本地预览在内存里重建，换一版只换这个函数的返回值）。
 * 页面和附带文件都按名字查；不在书里的名字一律 404，所以访问不到磁盘上的别的文件。
 */
export type SiteSource = () => BookSite;

export function serveBook(source: SiteSource, port: number, host = "127.0.0.1"): Promise<BookServer> {
  const listeners = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const address = server.address();
    const actual = typeof address === "object" && address ? address.port : port;
    if (!isLoopbackHost(request.headers.host, actual)) {
      response.writeHead(403, { "content-type": "text/plain; charset=utf-8" });
      response.end("预览只回应发往本机的请求：请用 127.0.0.1、localhost 或 [::1] 加端口打开，不要经别的域名。");
      return;
    }
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname === EVENTS_PATH) {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" });
      response.write(": 已连接\n\n");
      listeners.add(response);
      request.on("close", () => listeners.delete(response));
      return;
    }
    let relative: string;
    try {
      relative = decodeURIComponent(url.pathname);
    } catch {
      relative = "";
    }
    if (relative.endsWith("/")) relative += "index.html";
    const name = relative.replace(/^\/+/, "");
    const site = source();
    const page = site.files.get(name);
    const asset = site.assets.get(name);
    if (page !== undefined) {
      response.writeHead(200, { "content-type": TYPES[path.extname(name)] ?? "text/plain; charset=utf-8", "cache-control": "no-store" });
      response.end(page);
    } else if (asset !== undefined) {
      response.writeHead(200, { "content-type": TYPES[path.extname(name)] ?? "application/octet-stream", "cache-control": "no-store" });
      createReadStream(asset).pipe(response);
    } else {
      // 找不到的地址：书自己的 404 页，带回封面的链接
      response.writeHead(404, { "content-type": TYPES[".html"]!, "cache-control": "no-store" });
      response.end(site.files.get(NOT_FOUND_PAGE) ?? "没有这一页");
    }
  });

  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "EADDRINUSE"
          ? new CourseError("PORT_IN_USE", `端口 ${port} 已被占用：用 --port 换一个，例如 npm run book -- --serve --port ${port + 1}`)
          : new CourseError("SERVE_FAILED", `无法在 ${host}:${port} 上启动预览（${error.code ?? error.message}）`),
      );
    });
    server.listen(port, host, () => {
      const address = server.address();
      const actual = typeof address === "object" && address ? address.port : port;
      resolve({
        url: `http://${host}:${actual}/`,
        reload() {
          for (const listener of listeners) listener.write(`event: reload\ndata: ${Date.now()}\n\n`);
        },
        close() {
          for (const listener of listeners) listener.end();
          listeners.clear();
          return new Promise((done) => server.close(() => done()));
        },
      });
    });
  });
}
