// 套件命令的编译副本（做法见 scripts/kit-cache.mjs）。npm test 的一步先把它备好，测试里几百次套件命令
// 都直接用 node 运行编译出的 JS；学习者的 npm run <命令> 经 scripts/launch.mjs 用同一份副本。
//
//   node --import tsx scripts/ci/compiled-kit.ts      编译（npm test 的一步）
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { compileKit } from "../kit-cache.mjs";

export { compiledKitDir, freshCompiledKit } from "../kit-cache.mjs";

const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = await compileKit(KIT);
  console.log(`套件脚本已编译到 ${path.relative(KIT, dir)}`);
}
