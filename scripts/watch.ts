import { findChapter, loadChapters } from "./engine/chapters.js";
import { chapterAndDir, paint, runCommandLine, type CommandLine } from "./engine/cli.js";
import { openPracticeSession } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import { LESSONS_DIR } from "./engine/paths.js";
import type { Painter } from "./engine/screen.js";
import { DEFAULT_POLL_INTERVAL_MS } from "./engine/watch/file-events.js";
import { WatchRun } from "./engine/watch/run.js";

const HELP = `用法：npm run watch -- <章节> [目录] [--poll] [--interval 毫秒]

边写边测：每次保存练习目录里的文件，就重新编译并运行本章的聚焦测试，
一屏显示当前实践、第一处偏差，以及还有没有提示可看。
编译器一直开着（tsc --watch），一次保存只重新检查受影响的文件；测试总是等这次保存的编译结束才跑，
删掉的源文件留下的旧输出会先清掉。编辑器的临时文件（vim 的 .swp、sed -i、JetBrains、emacs）不触发运行，
一串保存只运行一次。
有测试失败时不等整个文件跑完：第一处偏差一确定（它前面的实践都已通过）就先画出来，其余测试跑完再更新这一屏。
全部通过后用 npm run verify -- <章节> 连同更早章节一起验证并点亮本章。

[目录] 默认与 verify 相同（practice 为本章创建的目录）。

  --poll           定时比较文件，而不是等文件变更事件；
                   用于收不到变更事件的文件系统（WSL 的 /mnt/c、网络盘、某些容器挂载）；
                   这时每次保存都从头编译
  --interval 毫秒  --poll 的检查间隔（默认 ${DEFAULT_POLL_INTERVAL_MS}）
  --help           显示本说明

在终端里运行时的按键（每屏最后一行也会列出）：
  r 或回车 重跑 · h 展开当前实践的下一级提示（全部通过时会说不需要提示）
  x 把本章的一个教学文件还原到起点（先选文件，再按 y 确认；你的版本先移到 .pi-course/backup/，同 npm run reset）
  q 或 Ctrl-C 退出`;

const color: Painter = (style, text) => paint(style, text);

const WATCH_OPTIONS = { poll: { type: "boolean" }, interval: { type: "string" } } as const;

async function main({ values, positionals }: CommandLine<typeof WATCH_OPTIONS>): Promise<void> {
  const [chapterInput, dirInput] = chapterAndDir(positionals);
  const intervalMs = values.interval === undefined ? undefined : parseInterval(values.interval);
  if (intervalMs !== undefined && !values.poll) throw usageError("INTERVAL_WITHOUT_POLL", "--interval 只和 --poll 一起使用");
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, chapterInput);
  const { dir, file } = openPracticeSession(chapter, dirInput);

  const terminal = { stdout: process.stdout, stdin: process.stdin, paint: color, pipeRows: pipeRows() };
  await new WatchRun(chapter, chapters, dir, file, { poll: values.poll ?? false, intervalMs }, terminal).run();
}

function parseInterval(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < 50 || value > 60_000) {
    throw usageError("INTERVAL_INVALID", `--interval 应当是 50 到 60000 之间的毫秒数，收到了 “${text}”`);
  }
  return value;
}

await runCommandLine(HELP, WATCH_OPTIONS, main);

/** 管道里的屏高：只有 PI_COURSE_ROWS 给定时才按它收起（测试用它模拟 80×24）。 */
function pipeRows(): number | undefined {
  const rows = Number(process.env.PI_COURSE_ROWS);
  return Number.isInteger(rows) && rows > 0 ? rows : undefined;
}
