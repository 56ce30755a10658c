import { execFile } from "node:child_process";
import { setMaxListeners } from "node:events";

import { simpleGit, type SimpleGit } from "simple-git";

import { CourseError } from "./errors.js";

/**
 * 构建课程历史时强制使用的 git 配置。学习者自己的 autocrlf、签名、
 * 提交编码或 diff 习惯都不能改变我们写出的对象，否则哈希就不再处处相同。
 */
const NEUTRAL_CONFIG = [
  "core.autocrlf=false",
  "core.safecrlf=false",
  "core.eol=lf",
  "commit.gpgSign=false",
  "i18n.commitEncoding=UTF-8",
  "apply.whitespace=nowarn",
  "diff.noprefix=false",
  "diff.mnemonicPrefix=false",
  "diff.relative=false",
  "color.ui=false",
  "gc.auto=0",
];

/** 允许传给 git 子进程的 GIT_* 变量；其余 GIT_* 一律不继承。 */
const ALLOWED_GIT_ENV = [
  "GIT_INDEX_FILE",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_COMMITTER_DATE",
];

export interface GitOptions {
  /** 额外的环境变量，例如临时索引文件或固定的提交身份。 */
  env?: Record<string, string>;
}

/**
 * 所有 git 子进程共用的中止信号：命令被 Ctrl-C 打断时先结束正在运行的 git（simple-git 在子进程
 * 真正退出后才让那一步失败），收尾代码再删临时目录，就不会有 git 在删完之后又写进文件。
 */
const stopGit = new AbortController();
// 每个 simple-git 客户端都在这个信号上挂一个监听器：practice --continue 一次要开几十个客户端，
// 超过 Node 默认的 10 个就会打出 MaxListenersExceededWarning。这里挂很多个是设计如此，不是泄漏。
setMaxListeners(0, stopGit.signal);

export function abortGitProcesses(): void {
  stopGit.abort();
}

/** 一个只带最小环境的 simple-git 客户端。 */
export function gitAt(cwd: string, options: GitOptions = {}): SimpleGit {
  return simpleGit({ baseDir: cwd, config: NEUTRAL_CONFIG, allowEnvironment: ALLOWED_GIT_ENV, abort: stopGit.signal }).env(minimalEnv(options));
}

function minimalEnv(options: GitOptions): Record<string, string> {
  const env: Record<string, string> = { LANG: "C", LC_ALL: "C" };
  for (const key of ["PATH", "HOME", "SystemRoot", "TMPDIR", "TEMP", "TMP"]) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return Object.assign(env, options.env);
}

/**
 * 运行一条什么也不输出的 git 管道命令（read-tree、apply --cached、checkout-index、update-ref、cat-file -e）。
 * 子进程一个字节也没有输出时，simple-git 要在它退出后再等 50 毫秒才算这一步完成；第一次构建课程历史
 * 有三十多条这样的命令，光这段等待就超过一秒。所以它们直接用 execFile 运行：环境、强制的配置和中止信号
 * 与 gitAt 相同；失败时抛出的错误信息是 git 的 stderr，与 simple-git 一样交给 explainGitFailure 翻译。
 */
export function gitQuiet(cwd: string, args: readonly string[], options: GitOptions = {}): Promise<void> {
  const config = NEUTRAL_CONFIG.flatMap((setting) => ["-c", setting]);
  return new Promise((resolve, reject) => {
    execFile("git", [...config, ...args], { cwd, env: minimalEnv(options), signal: stopGit.signal }, (error, _stdout, stderr) => {
      if (!error) resolve();
      else if ((error as NodeJS.ErrnoException).code === "ENOENT" || stderr.trim() === "") reject(error);
      else reject(new Error(stderr.trim()));
    });
  });
}

/** 把 simple-git 的错误翻译成课程错误；git 不存在时给出可操作的说明。 */
export function explainGitFailure(error: unknown, doing: string): CourseError {
  const message = error instanceof Error ? error.message : String(error);
  if (/ENOENT|spawn git/i.test(message)) {
    return new CourseError("GIT_MISSING", "找不到 git 命令：请先安装 git（≥ 2.30）并确认它在 PATH 中");
  }
  const firstLine = message.split("\n").find((line) => line.trim() !== "") ?? message;
  return new CourseError("GIT_FAILED", `${doing}失败：${firstLine.trim()}`);
}
