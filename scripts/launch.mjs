// 套件命令的入口：npm run <命令> -- … 就是 node scripts/launch.mjs <命令> …
// 1. 先查依赖装没装好（need-deps.mjs），缺了就一句中文说该运行什么；
// 2. 有与源码一致的编译副本就直接运行它（见 kit-cache.mjs）；没有就先编译一次（约半秒，npm ci 或改过套件之后的第一条命令）；
// 3. 编译不了（例如正在改套件、类型还没对上），经 tsx 运行源码：命令照样能用，只是启动慢一些。
import "./need-deps.mjs";

import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { compileKit, freshCompiledKit } from "./kit-cache.mjs";
import { startProgress } from "./progress-line.mjs";

const kitRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const [command = "", ...args] = process.argv.slice(2);
const source = path.join(kitRoot, "scripts", `${command}.ts`);
if (!/^[a-z][a-z-]*$/.test(command) || !existsSync(source)) {
  console.error(`错误：没有叫“${command}”的套件命令（scripts/${command}.ts 不存在）`);
  process.exit(2);
}

const compiled = freshCompiledKit(kitRoot) ?? (await compileQuietly());
// 命令自己按 process.argv 解析参数：让它看到的就像是被直接运行的那样
const script = compiled ? path.join(compiled, "scripts", `${command}.js`) : source;
process.argv = [process.argv[0] ?? process.execPath, script, ...args];
if (!compiled) {
  const { register } = await import("tsx/esm/api");
  register();
}
await import(pathToFileURL(script).href);

async function compileQuietly() {
  // 要好几秒：在终端里先说一句，免得人以为命令卡住了
  const done = startProgress("正在编译套件脚本（npm ci 或改过套件之后只有第一次）");
  try {
    return await compileKit(kitRoot);
  } catch {
    return undefined;
  } finally {
    done();
  }
}
