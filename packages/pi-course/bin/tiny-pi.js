#!/usr/bin/env node
// tiny-pi 的可执行入口：找到编译好的 dist/src/cli/main.js，把真实的 process 交给 main()。
// - 还没编译、或 src 比编译结果新：先用 TypeScript 编译这个包（第一次要一两秒），所以 npm ci 之后、
//   练习目录里改完代码之后，直接 npx tiny-pi 跑的都是此刻的源码。
// - 编译不过：把 tsc 的报错原样给出，再用一句中文说怎么办，退出码 1。
// 这个文件是手写的 JavaScript，不经过编译：它必须在 dist 还不存在的时候就能运行。
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const entry = path.join(packageDir, "dist", "src", "cli", "main.js");

/** src 里最新的 .ts 的修改时间。 */
function newestSource(dir) {
  let newest = 0;
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, item.name);
    if (item.isDirectory()) newest = Math.max(newest, newestSource(file));
    else if (item.name.endsWith(".ts")) newest = Math.max(newest, statSync(file).mtimeMs);
  }
  return newest;
}

function needsBuild() {
  if (!existsSync(entry)) return true;
  return newestSource(path.join(packageDir, "src")) > statSync(entry).mtimeMs;
}

function build() {
  let tsc;
  try {
    const require = createRequire(path.join(packageDir, "package.json"));
    const manifest = require.resolve("typescript/package.json");
    tsc = path.join(path.dirname(manifest), "bin", "tsc");
  } catch {
    console.error("tiny-pi：找不到 TypeScript 编译器。请先在课程套件里运行 npm ci（练习目录里运行 npm run doctor）。");
    process.exit(1);
  }
  process.stderr.write("tiny-pi：dist 不存在或比 src 旧，先编译 @pi/course……\n");
  const result = spawnSync(process.execPath, [tsc, "-p", packageDir], { stdio: ["ignore", "inherit", "inherit"] });
  if (result.status !== 0) {
    console.error("tiny-pi：编译没有通过（错误见上）。改好之后再运行，或者先运行 npm run build -w @pi/course 看完整的报错。");
    process.exit(1);
  }
}

if (needsBuild()) build();
const { main, processIo } = await import(pathToFileURL(entry).href);
let code;
try {
  code = await main(process.argv.slice(2), processIo());
} catch (error) {
  // 练习目录里还没写完的实践：一句话说清楚，不必看堆栈。别的异常是 bug，带着堆栈出去。
  if (!(error instanceof Error) || !error.message.includes("尚未实现")) throw error;
  console.error(`tiny-pi：${error.message}。这是本章还没写完的部分：先让聚焦测试变绿，再来运行 tiny-pi。`);
  code = 1;
}
// 等 stdout 写完再退出；stdout 已经被下游关掉（EPIPE）时回调带着错误，照样退出。
process.stdout.write("", () => process.exit(code));
