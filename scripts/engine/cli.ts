import * as util from "node:util";

import { CourseError, isCourseError, usageError } from "./errors.js";

/**
 * 只在真正的终端里上色；NO_COLOR 或管道输出时保持纯文本。
 * styleText 从 Node 20.12 起才有：更早的 20.x 上退回纯文本，命令照常工作（doctor 会提醒升级）。
 */
export function paint(style: Parameters<typeof util.styleText>[0], text: string, stream: NodeJS.WriteStream = process.stdout): string {
  if (process.env.NO_COLOR !== undefined || !stream.isTTY || typeof util.styleText !== "function") return text;
  return util.styleText(style, text);
}

/**
 * 每个命令的入口：课程错误打印成一行中文并按约定退出（2 用法、1 失败）；
 * 意料之外的错误保留堆栈，方便报告问题。
 */
export async function runCommand(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    if (isCourseError(error)) {
      process.stderr.write(`${paint("red", "错误：", process.stderr)}${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    throw error;
  }
}

/** 命令行相对路径按用户敲命令时所在的目录解析（npm 会把 cwd 换成包目录）。 */
export function userCwd(): string {
  return process.env.INIT_CWD ?? process.cwd();
}

/** 把 util.parseArgs 的英文报错换成一句中文用法错误（退出码 2）。 */
export function argumentError(error: unknown): CourseError {
  const { code, message = "" } = error as { code?: string; message?: string };
  const option = /'([^']+)'/.exec(message)?.[1] ?? "";
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
