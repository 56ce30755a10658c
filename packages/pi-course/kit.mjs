// 把 `npm run checkpoint -w @pi/course -- 03` 这类命令转交给课程套件。
// 在课程套件里，../../scripts/<命令>.ts 存在：用 tsx 运行它；INIT_CWD 原样传下去，相对路径仍按敲命令的目录解析。
// 在练习目录里没有套件脚本：说明该去哪里运行，退出码 2（用法错误）。
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [command = "", ...args] = process.argv.slice(2);
const kitRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const script = path.join(kitRoot, "scripts", `${command}.ts`);

if (!existsSync(script)) {
  console.error(`错误：这里是课程项目，不是课程套件。请回到课程套件的根目录运行 npm run ${command} -- ${args.join(" ")}`.trimEnd());
  process.exit(2);
}
const run = spawnSync(process.execPath, ["--import", "tsx", script, ...args], { cwd: kitRoot, stdio: "inherit" });
process.exit(run.status ?? 1);
