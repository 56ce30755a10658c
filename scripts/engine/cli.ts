import * as util from "node:util";

import { isCourseError } from "./errors.js";

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
