// npm test 里的套件命令（practice、verify、checkpoint…）要启动几百次；每次经 tsx 启动要多花约 0.5 秒 CPU
// （加载器的线程与逐个模块的转译）。所以 npm test 先把 scripts/ 用项目自己的 tsc 编译一次，放在
// node_modules/.cache/pi-course-kit/ 里（目录结构与套件相同），测试直接用 node 运行编译出的 JS。
//
//   node --import tsx scripts/ci/compiled-kit.ts      编译（npm test 的一步）
//
// 编译出的副本只在与源文件逐字一致时才被使用：副本旁记着编译时每个输入文件的哈希，
// 测试（test/helpers.ts）启动时重新算一遍，有一个文件变了、多了或少了，就退回 tsx 运行源文件，
// 绝不会测到旧代码。套件自己的根目录由 scripts/engine/paths.ts 从副本的标记文件里读出。
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { COMPILED_KIT_MARKER } from "../engine/paths.js";
import { tscCommand } from "../engine/runner.js";

const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const CONFIG = "scripts/ci/tsconfig.kit.json";

/** 编译出的副本所在的目录（与 tsconfig.kit.json 的 outDir 一致）。 */
export function compiledKitDir(kitRoot: string): string {
  return path.join(kitRoot, "node_modules", ".cache", "pi-course-kit");
}

/** 副本的输入：scripts/ 下的全部文件（.ts 编译，其余原样复制）、demo 引用的课程源码，以及两份 tsconfig。 */
function inputFiles(kitRoot: string): string[] {
  const files: string[] = ["tsconfig.json", CONFIG, "package.json"];
  const walk = (relative: string) => {
    const full = path.join(kitRoot, relative);
    if (!existsSync(full)) return;
    for (const entry of readdirSync(full, { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files.push(child);
    }
  };
  walk("scripts");
  walk("packages/pi-course/src");
  return files.sort();
}

/** 每个输入文件的内容哈希：副本是不是从磁盘上现在的源文件编译出来的，就比这个。 */
export function sourceHashes(kitRoot: string): Record<string, string> {
  const hashes: Record<string, string> = {};
  for (const file of inputFiles(kitRoot)) {
    hashes[file] = createHash("sha1").update(readFileSync(path.join(kitRoot, file))).digest("hex");
  }
  return hashes;
}

interface Marker {
  kitRoot: string;
  sources: Record<string, string>;
}

/**
 * 与源文件一致的副本的目录；没有编译过、或者任何一个输入文件变过，返回 undefined（调用方用 tsx 运行源文件）。
 */
export function freshCompiledKit(kitRoot: string): string | undefined {
  const dir = compiledKitDir(kitRoot);
  let marker: Marker;
  try {
    marker = JSON.parse(readFileSync(path.join(dir, COMPILED_KIT_MARKER), "utf8")) as Marker;
  } catch {
    return undefined;
  }
  if (marker.kitRoot !== kitRoot) return undefined;
  const now = sourceHashes(kitRoot);
  const before = marker.sources;
  const same = Object.keys(now).length === Object.keys(before).length && Object.entries(now).every(([file, hash]) => before[file] === hash);
  return same ? dir : undefined;
}

/** 编译 scripts/ 到副本目录，复制非 TS 文件，最后写标记（标记在，副本才算数）。 */
export async function compileKit(kitRoot: string): Promise<string> {
  const dir = compiledKitDir(kitRoot);
  const sources = sourceHashes(kitRoot); // 编译前取哈希：编译途中有人改了文件，副本就会被认作过期
  rmSync(dir, { recursive: true, force: true });
  const tsc = await tscCommand(kitRoot);
  const result = spawnSync(tsc.file, [...tsc.args, "-p", CONFIG, "--pretty", "false"], { cwd: kitRoot, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`编译套件脚本失败：\n${result.stdout}${result.stderr}`);
  for (const file of Object.keys(sources)) {
    if (!file.startsWith("scripts/") || file.endsWith(".ts") || file.endsWith(".json")) continue;
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    cpSync(path.join(kitRoot, file), path.join(dir, file));
  }
  // node_modules 之下找不到套件的 package.json：声明这里的 .js 是 ES 模块
  writeFileSync(path.join(dir, "package.json"), `${JSON.stringify({ type: "module", private: true })}\n`);
  const marker: Marker = { kitRoot, sources };
  writeFileSync(path.join(dir, COMPILED_KIT_MARKER), `${JSON.stringify(marker)}\n`);
  return dir;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = await compileKit(KIT);
  console.log(`套件脚本已编译到 ${path.relative(KIT, dir)}（测试用它省掉 tsx 的启动）`);
}
