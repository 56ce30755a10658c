// 套件命令的编译副本。每条套件命令经 tsx 启动要多花约 0.3–0.5 秒（加载器线程、逐个模块转译）；
// 所以 scripts/ 用项目自己的 tsc 编译一次，放在 node_modules/.cache/pi-course-kit/<指纹>/ 里，
// launch.mjs 与测试直接用 node 运行编译出的 JS。
//
// 指纹是套件根目录加上每个输入文件内容的哈希：源文件改了一个字节，指纹就变，旧副本不会再被用到，
// 绝不会运行旧代码。副本只增不改：编译写进临时目录，写完才改名到位，同时启动的两条命令
// 不会读到写了一半的副本，也不会删掉对方正在用的副本。
// 只用 Node 自带的模块：它在 tsx 之前运行。
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** 副本根目录里的标记文件：写着套件根目录（scripts/engine/paths.ts 从这里读 KIT_ROOT）。 */
export const COMPILED_KIT_MARKER = "compiled-kit.json";
const CONFIG = "scripts/ci/tsconfig.kit.json";
/** 同一套件的旧副本留多久再清理：正在运行的旧命令可能还要按需加载里面的模块。 */
const STALE_AFTER_MS = 60 * 60 * 1000;

export function compiledKitCache(kitRoot) {
  return path.join(kitRoot, "node_modules", ".cache", "pi-course-kit");
}

/**
 * root 下 relative 目录（"." 是 root 本身）里的全部文件（递归），路径相对 root、用 / 分隔；目录不存在时是空的。
 * 只列普通文件（符号链接不算，也不顺着它走）；skipDirs 里的目录名在任何一层都跳过，例如 node_modules；
 * skip(相对路径) 为真的文件和目录也跳过。遍历途中被删掉的目录当作空的（watch 在学习者保存的同时遍历）。
 * 套件里所有“把一棵目录的文件列出来”的地方都用它（要连符号链接一起列时用 entriesUnder）。
 */
export function filesUnder(root, relative, options = {}) {
  return entriesUnder(root, relative, options).files;
}

/** 同 filesUnder，另外列出符号链接本身（links，同样是相对 root 的路径；不顺着它走）。 */
export function entriesUnder(root, relative, { skipDirs = [], skip = () => false } = {}) {
  const files = [];
  const links = [];
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(path.join(root, dir), { withFileTypes: true });
    } catch (error) {
      if (error.code === "ENOENT" || error.code === "ENOTDIR") return;
      throw error;
    }
    for (const entry of entries) {
      const child = dir === "." ? entry.name : `${dir}/${entry.name}`;
      if (skip(child)) continue;
      if (entry.isDirectory()) {
        if (!skipDirs.includes(entry.name)) walk(child);
      } else if (entry.isFile()) files.push(child);
      else if (entry.isSymbolicLink()) links.push(child);
    }
  };
  walk(relative);
  return { files, links };
}

/** 副本的输入：scripts/ 下的全部文件（.ts 编译，其余原样复制）、demo 引用的课程源码，以及两份 tsconfig。 */
function inputFiles(kitRoot) {
  return ["tsconfig.json", CONFIG, "package.json", ...filesUnder(kitRoot, "scripts"), ...filesUnder(kitRoot, "packages/pi-course/src")].sort();
}

/** 这份源码应有的副本目录（不论它存不存在）。 */
export function compiledKitDir(kitRoot) {
  const fingerprint = createHash("sha1").update(kitRoot);
  for (const file of inputFiles(kitRoot)) {
    fingerprint.update(`\0${file}\0`).update(readFileSync(path.join(kitRoot, file)));
  }
  return path.join(compiledKitCache(kitRoot), fingerprint.digest("hex").slice(0, 16));
}

/** 与磁盘上的源码一致的副本目录；还没编译过就是 undefined。 */
export function freshCompiledKit(kitRoot) {
  const dir = compiledKitDir(kitRoot);
  return existsSync(path.join(dir, COMPILED_KIT_MARKER)) ? dir : undefined;
}

/** 某个目录（它的 node_modules/typescript）的 tsc：平台包里的原生可执行文件；找不到就经 node 运行 typescript 的启动器。 */
export async function tscCommand(dir) {
  const typescript = path.join(dir, "node_modules", "typescript");
  const locator = path.join(typescript, "lib", "getExePath.js");
  if (existsSync(locator)) {
    try {
      const { default: exePath } = await import(pathToFileURL(locator).href);
      const exe = exePath();
      if (existsSync(exe)) return { file: exe, args: [] };
    } catch {
      // 平台包缺失：退回启动器，由它给出原本的错误
    }
  }
  return { file: process.execPath, args: [path.join(typescript, "bin", "tsc")] };
}

/**
 * 编译出与现在的源码一致的副本，交回它的目录；已经有了就直接交回。
 * 编译失败时抛出，信息里带着 tsc 的输出。
 */
export async function compileKit(kitRoot) {
  const dir = compiledKitDir(kitRoot); // 编译前取指纹：编译途中有人改了文件，下一次启动自然换一个指纹
  if (existsSync(path.join(dir, COMPILED_KIT_MARKER))) return dir;
  const cache = compiledKitCache(kitRoot);
  const temporary = `${dir}.tmp-${process.pid}-${Date.now()}`;
  try {
    const tsc = await tscCommand(kitRoot);
    const result = spawnSync(tsc.file, [...tsc.args, "-p", CONFIG, "--pretty", "false", "--outDir", temporary], { cwd: kitRoot, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`编译套件脚本失败：\n${result.stdout ?? ""}${result.stderr ?? result.error?.message ?? ""}`);
    for (const file of inputFiles(kitRoot)) {
      if (!file.startsWith("scripts/") || file.endsWith(".ts") || file.endsWith(".json")) continue;
      mkdirSync(path.dirname(path.join(temporary, file)), { recursive: true });
      cpSync(path.join(kitRoot, file), path.join(temporary, file));
    }
    // node_modules 之下找不到套件的 package.json：声明这里的 .js 是 ES 模块
    writeFileSync(path.join(temporary, "package.json"), `${JSON.stringify({ type: "module", private: true })}\n`);
    writeFileSync(path.join(temporary, COMPILED_KIT_MARKER), `${JSON.stringify({ kitRoot })}\n`);
    try {
      renameSync(temporary, dir);
    } catch (error) {
      // 另一条命令抢先放好了同一份副本：用它的
      if (!existsSync(path.join(dir, COMPILED_KIT_MARKER))) throw error;
    }
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
  pruneStale(cache, kitRoot, dir);
  return dir;
}

/**
 * 清理用不到的副本：套件目录已经不在了的（例如测试里的临时克隆），同一套件较早源码的（一小时之前编译的：
 * 正在运行的旧命令可能还要按需加载里面的模块），以及被中断的编译留下的临时目录。
 */
function pruneStale(cache, kitRoot, keep) {
  for (const entry of readdirSync(cache, { withFileTypes: true })) {
    const full = path.join(cache, entry.name);
    if (!entry.isDirectory() || full === keep) continue;
    try {
      const old = Date.now() - statSync(full).mtimeMs > STALE_AFTER_MS;
      const owner = entry.name.includes(".tmp-") ? undefined : markerOf(full)?.kitRoot;
      const unused = owner === undefined ? old : !existsSync(owner) || (owner === kitRoot && old);
      if (unused) rmSync(full, { recursive: true, force: true });
    } catch {
      // 同时有别的命令在清理
    }
  }
}

function markerOf(dir) {
  try {
    return JSON.parse(readFileSync(path.join(dir, COMPILED_KIT_MARKER), "utf8"));
  } catch {
    return undefined;
  }
}
