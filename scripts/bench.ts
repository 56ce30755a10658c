import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { benchChapter } from "./engine/bench.js";
import { failOnMissed, printTable, readHistory, round } from "./engine/bench-rows.js";
import { measureTargets, typescript59Installed } from "./engine/bench-suite.js";
import { findChapter, loadChapters } from "./engine/chapters.js";
import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { CourseError, usageError } from "./engine/errors.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";

const DEFAULT_RUNS = 5;
const DEFAULT_OUT = path.join(KIT_ROOT, ".bench", "results.json");

const HELP = `用法：npm run bench [-- --runs N] [--full] [--chapter 章节] [--out 文件]

测量课程套件的性能目标，每项取多次运行的中位数：
  watch：保存故障实验的改动 → 屏幕上出现当前实践与第一处偏差，每一章 ≤ 0.3 s
    （默认测第 03、08 章、代码最多的第 12、13 章和第 15 章起的每一章）
  verify：第 08 章（连同更早章节）≤ 1.2 s，最后一章 ≤ 2.5 s
  practice（课程历史已缓存）≤ 0.5 s
  第一次构建全部章节的课程历史 ≤ 2 s（在只含主分支的新克隆里测）
  npm run course -- lint（全部章节的静态检查，不编译）≤ 10 s
  完整的 npm test：不用自检缓存 ≤ 2 分钟，紧接着第二次（自检取自缓存）≤ 45 s（只在加 --full 时测，各一次）
只报告、不设目标的：练习目录里原样运行课文的命令（npm run build -w @pi/course && node --test 聚焦测试）
  的用时，和它的下限（tsc 本身 + 各项测试自己的用时 + 启动一次 node）；同一个循环换成 TypeScript 5.9 慢几倍。
打印一张表（与上一次的中位数并列，回退一眼可见）并列出没达到的目标；
结果追加到 --out（默认 .bench/results.json，一个数组，之前的结果都留着）。有目标没达到时退出码为 1。
不属于 npm test：测量需要一台空闲的机器。

  --runs N        每项运行几次（默认 5）
  --full          也测完整的 npm test（冷、热各一次），并给每个重建章测一次学习循环与下限
  --chapter 章节  只测这一章的学习循环、watch 与 verify（默认第 08 章的学习循环，watch 与 verify 见上）
  --out 文件      结果写到哪里
  --help          显示本说明`;

await runCommandLine(HELP, {
    runs: { type: "string" },
    full: { type: "boolean" },
    chapter: { type: "string" },
    out: { type: "string" },
  }, async ({ values, positionals }) => {
  if (positionals.length > 0) throw usageError("TOO_MANY_ARGS", `bench 不接受位置参数，收到了：${positionals.join(" ")}`);
  const runs = parseRuns(values.runs);
  const out = values.out === undefined ? DEFAULT_OUT : path.resolve(userCwd(), values.out);
  const chapters = loadChapters(LESSONS_DIR);
  const explicitChapter = values.chapter !== undefined;
  const chapter = values.chapter === undefined ? benchChapter(chapters) : findChapter(chapters, values.chapter);
  if (chapter.mode !== "重建") throw usageError("BENCH_CHAPTER_MODE", `第 ${chapter.id} 章是观察章；学习循环请选一个重建章`);
  if (!typescript59Installed()) {
    throw new CourseError("TS59_MISSING", "没有安装对照用的 TypeScript 5.9（devDependency typescript-5.9）：请在套件根目录运行 npm ci");
  }
  const previous = readHistory(out);
  const say = (text: string) => process.stderr.write(`${paint("dim", text, process.stderr)}\n`);

  const rows = await measureTargets({ chapters, chapter, explicitChapter, runs, full: values.full === true, say });

  const result = {
    date: new Date().toISOString(),
    runs,
    chapter: chapter.id,
    machine: {
      node: process.versions.node,
      platform: `${os.platform()} ${os.release()}`,
      arch: os.arch(),
      cpus: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? "",
      // 机器忙不忙：bench 开始时的一分钟平均负载（Windows 上是 0）
      load: Number(os.loadavg()[0]?.toFixed(2) ?? 0),
    },
    typescript: { current: packageVersion("typescript"), baseline: packageVersion("typescript-5.9") },
    rows: rows.map(({ id, label, samples, value, unit, target, pass, note }) => ({
      id,
      label: label.trim(),
      unit,
      median: Number.isNaN(value) ? null : round(value),
      samples: samples.map(round),
      target: target ? { text: target.text, limit: target.limit, kind: target.kind } : null,
      pass: pass ?? null,
      ...(note ? { note } : {}),
    })),
  };
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify([...previous, result], null, 2)}\n`);

  printTable(rows, previous, `性能目标 · 中位数，每项 ${runs} 次 · ${os.cpus().length} 核 · Node ${process.versions.node} · 负载 ${result.machine.load}`);
  console.log("");
  console.log(`样本与机器信息已追加到 ${path.relative(userCwd(), out) || out}（第 ${previous.length + 1} 次）`);
  failOnMissed(rows);
});

function packageVersion(name: string): string | null {
  try {
    return (JSON.parse(readFileSync(path.join(KIT_ROOT, "node_modules", name, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return null;
  }
}
function parseRuns(text: string | undefined): number {
  if (text === undefined) return DEFAULT_RUNS;
  const runs = Number(text);
  if (!/^\d+$/.test(text.trim()) || runs < 1 || runs > 50) throw usageError("RUNS_INVALID", `--runs 应当是 1 到 50 之间的整数，收到了 “${text}”`);
  return runs;
}
