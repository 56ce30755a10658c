import * as util from "node:util";

import { CourseError, isCourseError, usageError } from "./errors.js";
import { fitText, terminalColumns } from "./terminal.js";

/**
 * 要不要上色（https://no-color.org 的约定）：NO_COLOR 设成非空值时一律不上色；
 * 否则 FORCE_COLOR 设成非 0 的值时即使输出进了管道也上色（FORCE_COLOR=0 关掉）；
 * 都没设时只在真正的终端里上色。
 */
export function wantsColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== "") return force !== "0" && force.toLowerCase() !== "false";
  return stream.isTTY === true;
}

/**
 * 按 wantsColor 的结论上色，否则保持纯文本。
 * styleText 从 Node 20.12 起才有：更早的 20.x 上退回纯文本，命令照常工作（doctor 会提醒升级）。
 * 要不要上色由上面自己决定，所以关掉 styleText 按 process.stdout 再判断一次的那一步。
 */
export function paint(style: Parameters<typeof util.styleText>[0], text: string, stream: { isTTY?: boolean } = process.stdout): string {
  if (!wantsColor(stream) || typeof util.styleText !== "function") return text;
  return util.styleText(style, text, { validateStream: false });
}

/**
 * 给人读的输出：在终端里按它的宽度折行（只在空格和中文字符之间折，不拆标识符和路径），
 * 接进管道时原样输出。JSON 之类给程序读的输出不经过这里，照旧用 console.log。
 */
export function print(...lines: string[]): void {
  const columns = terminalColumns(process.stdout);
  for (const line of lines.length === 0 ? [""] : lines) process.stdout.write(`${fitText(line, columns)}\n`);
}

/** 一句不打断命令的提醒（例如进度文件损坏、已备份）：以黄色的“注意：”开头写到 stderr；没有提醒时什么也不写。 */
export function warn(text: string | undefined): void {
  if (text) process.stderr.write(`${paint("yellow", "注意：", process.stderr)}${text}\n`);
}

/**
 * 每个命令的入口：课程错误打印成一行中文并按约定退出（2 用法、1 失败）；
 * 意料之外的错误保留堆栈，方便报告问题。
 */
export async function runCommand(main: () => Promise<void>): Promise<void> {
  process.stdout.on("error", quietOnClosedPipe);
  try {
    await main();
  } catch (error) {
    if (isCourseError(error)) {
      for (const line of error.details) process.stderr.write(`${line}\n`);
      process.stderr.write(`${paint("red", "错误：", process.stderr)}${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    throw error;
  }
}

/**
 * 每个命令都这样开头：解析参数，遇到 --help / -h 打印说明就结束，其余交给 body；错误按 runCommand 的约定打印。
 */
export async function runCommandLine<const T extends NonNullable<util.ParseArgsConfig["options"]>>(
  help: string,
  options: T,
  body: (args: CommandLine<T>) => Promise<void>,
): Promise<void> {
  await runCommand(async () => {
    const args = parseCommandLine(options);
    // T 还是泛型时 TypeScript 算不出 values 有哪些键；help 总是有的（HELP_OPTION）。
    if ((args.values as { help?: boolean }).help) {
      console.log(help);
      return;
    }
    await body(args);
  });
}

/**
 * 输出接进了提前退出的管道（npm run status | head）：读端关了，再写就是 EPIPE。
 * 读的人已经不要后面的输出了，按当前的退出码安静地结束，而不是打出一串堆栈。
 */
function quietOnClosedPipe(error: NodeJS.ErrnoException): void {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
}

/** 命令行相对路径按用户敲命令时所在的目录解析（npm 会把 cwd 换成包目录）。 */
export function userCwd(): string {
  return process.env.INIT_CWD ?? process.cwd();
}

/** 把 util.parseArgs 的英文报错换成一句中文用法错误（退出码 2）。 */
export function argumentError(error: unknown): CourseError {
  const { code, message = "" } = error as { code?: string; message?: string };
  // Node 把带取值的选项写成 '--level <value>'：英文占位符不进中文说明
  const option = (/'([^']+)'/.exec(message)?.[1] ?? "").replace(/ <value>$/, "");
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return usageError("BAD_ARGS", `不认识的选项 ${option}。用 --help 查看用法`);
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return usageError("BAD_ARGS", `选项 ${option} 的用法不对：${/argument missing/.test(message) ? "缺少取值" : "它不接受取值"}。用 --help 查看用法`);
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return usageError("BAD_ARGS", `多余的参数 ${option}。用 --help 查看用法`);
    default:
      return usageError("BAD_ARGS", "命令行参数有误。用 --help 查看用法");
  }
}

/** 「<章节> [目录]」两个位置参数：多了是用法错误，空字符串目录也是（多半是引号用错了）。 */
export function chapterAndDir(positionals: readonly string[]): [chapter: string | undefined, dir: string | undefined] {
  if (positionals.length > 2) throw usageError("TOO_MANY_ARGS", `最多两个参数（章节、目录），收到了：${positionals.join(" ")}`);
  const [chapter, dir] = positionals;
  if (dir !== undefined && dir.trim() === "") throw usageError("DIR_EMPTY", "练习目录参数是空字符串；省略它即可使用默认目录");
  return [chapter, dir];
}

const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;

/** parseCommandLine 的结果：命令自己的选项加上 --help。 */
export type CommandLine<T extends NonNullable<util.ParseArgsConfig["options"]>> = ReturnType<typeof parseCommandLine<T>>;

/**
 * 所有命令共用的参数解析：允许位置参数，自带 --help / -h，英文报错换成中文用法错误。
 * options 只写命令自己的选项。
 */
export function parseCommandLine<const T extends NonNullable<util.ParseArgsConfig["options"]>>(options: T) {
  const swallowed = optionsSwallowedByNpm(Object.keys(options));
  if (swallowed.length > 0) throw forgottenDashes(swallowed, options);
  try {
    return util.parseArgs({ allowPositionals: true, options: { ...options, ...HELP_OPTION } });
  } catch (error) {
    throw argumentError(error);
  }
}

/**
 * `npm run verify 03 --json` 少了 `--`：npm 把 --json 当成它自己的配置吃掉，只以 npm_config_json
 * 的形式传下来，命令本身看不到这个选项（--level 1 的 1 还会变成多余的位置参数）。
 * 只在 npm 启动的命令里（有 npm_lifecycle_event）才这样判断。
 */
export function optionsSwallowedByNpm(
  names: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = process.argv.slice(2),
): string[] {
  if (env.npm_lifecycle_event === undefined) return [];
  // 被吞掉的选项总带着取值（开关是 "true"）；npm 也会把 npmrc 里的配置（例如空的 yes=）照传下来，那不算。
  // npm 11 对 --yes 这类它也认识的开关，写在 -- 之后照样设 npm_config_yes：命令自己收到了，也不算被吞。
  const received = (name: string) => argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  return names.filter((name) => {
    const value = env[`npm_config_${name.replace(/-/g, "_")}`];
    return value !== undefined && value !== "" && !received(name);
  });
}

function forgottenDashes(swallowed: readonly string[], options: NonNullable<util.ParseArgsConfig["options"]>): CourseError {
  const flags = swallowed.map((name) => (options[name]?.type === "string" ? `--${name} <取值>` : `--${name}`)).join(" ");
  // 取值型选项的值已经混进了位置参数，原样照抄会把它放错位置，所以只照抄全是开关时的参数
  const given = swallowed.every((name) => options[name]?.type !== "string") ? process.argv.slice(2).join(" ") : "<参数>";
  const script = process.env.npm_lifecycle_event ?? "<命令>";
  return usageError(
    "FORGOT_DASHES",
    `忘了 \`--\`？npm 把 ${flags} 当成了它自己的选项，命令没有收到。选项要写在 -- 之后：npm run ${script} -- ${given} ${flags}`.replace(/ {2,}/g, " "),
  );
}
