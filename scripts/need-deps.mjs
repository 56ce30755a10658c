// 套件命令的第一步（scripts/launch.mjs 最先 import 它）：
// 依赖没装好时 tsx 与编译副本都起不来，学习者只会看到 “tsx: not found” 或一串 Node 堆栈。
// 这里只用 Node 自带的模块，先查一遍 package.json 里的每个依赖，缺了就用一句中文说该运行什么。
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const kitRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const manifest = JSON.parse(readFileSync(path.join(kitRoot, "package.json"), "utf8"));
const wanted = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies });
const missing = wanted.filter((name) => !existsSync(path.join(kitRoot, "node_modules", name, "package.json")));
if (missing.length > 0) {
  console.error(`错误：课程套件的依赖没有装好（缺 ${missing.slice(0, 3).join("、")}${missing.length > 3 ? " 等" : ""}）：在 ${kitRoot} 运行 npm ci，然后 npm run doctor -- --fix`);
  process.exit(1);
}
