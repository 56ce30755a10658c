import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import {
  benchChapter,
  benchWorkRoot,
  freshClone,
  learnerLoop,
  median,
  meets,
  runKitScript,
  solvedPractice,
  spawnChecked,
  TARGETS,
  timed,
  type Target,
} from "./engine/bench.js";
import { findChapter, loadChapters } from "./engine/chapters.js";
import { paint, runCommand, userCwd, parseCommandLine } from "./engine/cli.js";
import { CourseError, usageError } from "./engine/errors.js";
import { ensureHistory } from "./engine/history.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { pad } from "./engine/screen.js";

const DEFAULT_RUNS = 5;
const DEFAULT_OUT = path.join(KIT_ROOT, ".bench", "results.json");
const TS59 = path.join(KIT_ROOT, "node_modules", "typescript-5.9", "bin", "tsc");

const HELP = `用法：npm run bench [-- --runs N] [--full] [--chapter 章节] [--out 文件]

测量课程套件的性能目标，每项取多次运行的中位数：
  学习循环（练习目录里编译 + 聚焦测试）≤ 1 s，并且比同样的循环在 TypeScript 5.9 上快 ≥ 3 倍
  （同一次运行里两个版本交替测量，比例并排列出）
  practice（课程历史已缓存）≤ 1 s
  第一次构建全部章节的课程历史 ≤ 3 s（在只含主分支的新克隆里测）
  完整的 npm test ≤ 3 分钟（要一分钟以上，只在加 --full 时测，只跑一次）
打印一张表，并把全部样本写成 JSON（默认 .bench/results.json）。不属于 npm test。

  --runs N        每项测几次（默认 ${DEFAULT_RUNS}，1–50）
  --full          也测完整的 npm test
  --chapter 章节  学习循环用哪一章（默认最后一个重建章）
  --out 文件      JSON 写到哪里（默认 .bench/results.json）
  --help          显示本说明`;

interface Row {
  id: string;
  label: string;
  samples: number[];
  /** 毫秒，或比例行的倍数。 */
  value: number;
  unit: "ms" | "x";
  target?: Target;
  pass?: boolean;
  note?: string;
}

await runCommand(async () => {
  const { values, positionals } = parseCommandLine({
    runs: { type: "string" },
    full: { type: "boolean" },
    chapter: { type: "string" },
    out: { type: "string" },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (positionals.length > 0) throw usageError("TOO_MANY_ARGS", `bench 不接受位置参数，收到了：${positionals.join(" ")}`);
  const runs = parseRuns(values.runs);
  const out = values.out === undefined ? DEFAULT_OUT : path.resolve(userCwd(), values.out);
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = values.chapter === undefined ? benchChapter(chapters) : findChapter(chapters, values.chapter);
  if (chapter.mode !== "重建") throw usageError("BENCH_CHAPTER_MODE", `第 ${chapter.id} 章是观察章；学习循环请选一个重建章`);
  if (!existsSync(TS59)) {
    throw new CourseError("TS59_MISSING", "没有安装对照用的 TypeScript 5.9（devDependency typescript-5.9）：请在套件根目录运行 npm ci");
  }
  const history = await ensureHistory(KIT_ROOT, chapters);
  const work = benchWorkRoot();
  const progress = path.join(work.dir, "progress.json");
  const rows: Row[] = [];
  const say = (text: string) => process.stderr.write(`${paint("dim", text, process.stderr)}\n`);

  try {
    say(`准备：做完的第 ${chapter.id} 章练习目录（学习循环），每项测 ${runs} 次…`);
    const dir = path.join(work.dir, "loop");
    await solvedPractice(KIT_ROOT, chapter, history, dir);
    await learnerLoop(dir, chapter);
    await learnerLoop(dir, chapter, TS59); // 预热：让两边都读过一次磁盘缓存
    const ts7 = { total: [] as number[], build: [] as number[] };
    const ts59 = { total: [] as number[], build: [] as number[] };
    for (let run = 1; run <= runs; run++) {
      say(`学习循环 ${run}/${runs}`);
      const a = await learnerLoop(dir, chapter);
      const b = await learnerLoop(dir, chapter, TS59);
      ts7.total.push(a.totalMs);
      ts7.build.push(a.buildMs);
      ts59.total.push(b.totalMs);
      ts59.build.push(b.buildMs);
    }
    const loop7 = median(ts7.total);
    const loop59 = median(ts59.total);
    rows.push(row("loop-ts7", `学习循环 · TS 7（第 ${chapter.id} 章：编译 + 聚焦测试）`, ts7.total, TARGETS.loop));
    rows.push(row("loop-ts7-build", "  其中编译 · TS 7", ts7.build));
    rows.push(row("loop-ts59", "学习循环 · TS 5.9（同一目录、同一测试）", ts59.total));
    rows.push(row("loop-ts59-build", "  其中编译 · TS 5.9", ts59.build));
    const ratios = ts59.total.map((value, index) => value / (ts7.total[index] ?? Number.NaN));
    rows.push({
      id: "loop-ratio",
      label: "TS 5.9 ÷ TS 7（学习循环）",
      samples: ratios,
      value: loop59 / loop7,
      unit: "x",
      target: TARGETS.ratio,
      pass: meets(TARGETS.ratio, loop59 / loop7),
    });

    const practiceSamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`practice ${run}/${runs}`);
      const target = path.join(work.dir, `practice-${run}`);
      practiceSamples.push(await timed(() => runKitScript(KIT_ROOT, "practice", [chapter.id, target], { PI_COURSE_PROGRESS: progress })));
    }
    rows.push(row("practice", `practice（历史已缓存，第 ${chapter.id} 章）`, practiceSamples, TARGETS.practice));

    const historySamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`首次构建课程历史 ${run}/${runs}（克隆不计时）`);
      const clone = await freshClone(KIT_ROOT, work.dir);
      historySamples.push(await timed(() => runKitScript(clone, "course", ["history"], { PI_COURSE_PROGRESS: progress })));
    }
    rows.push(row("history", `首次构建课程历史（全部 ${chapters.length} 章）`, historySamples, TARGETS.history));

    if (values.full) {
      say("完整的 npm test（只跑一次）…");
      let ok = true;
      const ms = await timed(() =>
        spawnChecked("npm", ["test"], KIT_ROOT, { PI_COURSE_PROGRESS: progress }).catch(() => {
          ok = false;
        }),
      );
      const full = row("npm-test", "npm test（全部，含每章自检）", [ms], TARGETS.npmTest);
      if (!ok) {
        full.pass = false;
        full.note = "npm test 失败了";
      }
      rows.push(full);
    } else {
      rows.push({ id: "npm-test", label: "npm test（全部，含每章自检）", samples: [], value: Number.NaN, unit: "ms", target: TARGETS.npmTest, note: "未测：加 --full" });
    }
  } finally {
    work.remove();
  }

  const result = {
    date: new Date().toISOString(),
    runs,
    chapter: chapter.id,
    machine: { node: process.versions.node, platform: `${os.platform()} ${os.release()}`, arch: os.arch(), cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? "" },
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
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);

  console.log(paint("bold", `性能目标 · 中位数，每项 ${runs} 次 · ${os.cpus().length} 核 · Node ${process.versions.node}`));
  console.log("");
  console.log(paint("dim", `${pad("项目", 46)}${pad("中位数", 10)}${pad("目标", 10)}结果`));
  for (const entry of rows) {
    const value = Number.isNaN(entry.value) ? "—" : entry.unit === "x" ? `${entry.value.toFixed(1)}×` : formatMs(entry.value);
    const verdict =
      (entry.pass === undefined ? (entry.target ? paint("dim", "·") : "") : entry.pass ? paint("green", "✓") : paint("red", "✗")) +
      (entry.note ? paint("dim", ` ${entry.note}`) : "");
    const text = `${pad(entry.label, 46)}${pad(value, 10)}${pad(entry.target?.text ?? "", 10)}${verdict}`;
    console.log(entry.label.startsWith("  ") ? paint("dim", text) : text);
  }
  console.log("");
  console.log(`样本与机器信息已写入 ${path.relative(userCwd(), out) || out}`);
  const missed = rows.filter((entry) => entry.pass === false);
  if (missed.length > 0) {
    throw new CourseError("BENCH_TARGET_MISSED", `${missed.length} 项没有达到目标：${missed.map((entry) => entry.label.trim()).join("、")}`);
  }
});

function row(id: string, label: string, samples: number[], target?: Target): Row {
  const value = median(samples);
  return { id, label, samples, value, unit: "ms", ...(target ? { target, pass: meets(target, value) } : {}) };
}

function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 1000).toFixed(2)} s`;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

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
