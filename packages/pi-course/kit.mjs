// 课程项目里的 checkpoint、practice、verify、hint、watch、reset、status、doctor、eval 都经这里转交给课程套件。
// - 在课程套件里（../../scripts/<命令>.ts 存在）：原样转给套件脚本。
// - 在练习目录里：.pi-course-practice.json 记着套件的位置和章节，替学习者补上章节号和练习目录，
//   所以在练习目录里（包括 packages/pi-course、src 这些子目录）直接 `npm run verify` 就行。
// - 练习目录记下的套件不在了（被移动或改名）、或套件的依赖没装好：一句中文说明怎么修，退出码 1。
// - 两者都不是：说明该去哪里运行，退出码 2（用法错误）。
// - relink：练习目录里 npm install 之后（postinstall）重新链接套件的依赖。
// INIT_CWD 原样传下去：命令里的相对路径仍按学习者敲命令的目录解析。
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const MARKER = ".pi-course-practice.json";
const [command = "", ...args] = process.argv.slice(2);
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

const kitScript = (kitRoot, name) => path.join(kitRoot, "scripts", `${name}.ts`);

if (existsSync(kitScript(projectRoot, "doctor"))) {
  // 在套件里：relink 无事可做（套件的依赖由 npm ci 装好，不是链接）
  if (command !== "relink") forward(projectRoot, command, args);
} else {
  const marker = readMarker();
  if (!marker) {
    console.error(`错误：这里不是课程套件，也不是练习目录。请回到课程套件的根目录运行 npm run ${command} -- ${args.join(" ")}`.trimEnd());
    process.exit(2);
  }
  if (!existsSync(kitScript(marker.kitRoot, "doctor"))) {
    console.error(
      `错误：这是第 ${marker.chapter} 章的练习目录，但它记下的课程套件 ${marker.kitRoot} 不在了（被移动或改名了？）。` +
        `到课程套件现在的位置运行 npm run doctor -- ${projectRoot} --fix`,
    );
    process.exit(1);
  }
  if (command === "relink") forward(marker.kitRoot, "doctor", [marker.chapter, projectRoot, "--fix"]);
  else forward(marker.kitRoot, command, withPracticeDefaults(args, marker.chapter));
}

function readMarker() {
  try {
    const marker = JSON.parse(readFileSync(path.join(projectRoot, MARKER), "utf8"));
    return typeof marker.kitRoot === "string" && typeof marker.chapter === "string" ? marker : undefined;
  } catch {
    return undefined;
  }
}

/** 练习目录里省略的章节号与目录，由标记文件补上；学习者写了的一律照用。 */
function withPracticeDefaults(given, chapter) {
  const positionals = given.filter((arg) => !arg.startsWith("-"));
  switch (command) {
    case "verify":
    case "watch":
    case "doctor":
      return positionals.length === 0 ? [chapter, projectRoot, ...given] : given;
    case "hint": {
      // `npm run hint -- 3.2` 在练习目录里的意思是“本章的实践 3.2”。
      const rest = positionals.length > 0 && !/^\d+\.\d+$/.test(positionals[0]) ? given : [chapter, ...given];
      return rest.includes("--dir") ? rest : [...rest, "--dir", projectRoot];
    }
    case "checkpoint":
      return positionals.length === 0 ? [chapter, ...given] : given;
    case "eval":
      // eval 跑的是这个目录自己的代码，不是套件里的答案。
      return positionals.length === 0 ? [projectRoot, ...given] : given;
    case "reset": {
      // `npm run reset -- types.ts` 在练习目录里的意思是“本章、这个目录里的 types.ts”。
      const withChapter = positionals.length > 0 && /^\d{1,2}$/.test(positionals[0]) ? given : [chapter, ...given];
      const named = withChapter.filter((arg) => !arg.startsWith("-")).length;
      return named === 2 ? [...withChapter, projectRoot] : withChapter;
    }
    default:
      return given;
  }
}

function forward(kitRoot, name, forwarded) {
  // 套件自己的入口 launch.mjs：查依赖、运行编译好的套件命令（依赖没装好时由它用中文说明怎么修）
  const child = spawn(process.execPath, [path.join(kitRoot, "scripts", "launch.mjs"), name, ...forwarded], {
    cwd: kitRoot,
    stdio: "inherit",
  });
  // 终端的 Ctrl-C 会同时送到子进程，由它自己收尾；这里只转发 SIGTERM。
  process.on("SIGINT", () => {});
  process.on("SIGTERM", () => child.kill("SIGTERM"));
  child.on("close", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 1)));
}
