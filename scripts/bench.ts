import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import { watchLatency } from "./engine/bench-watch.js";
import {
  benchChapter,
  benchWorkRoot,
  compileOnce,
  documentedLoop,
  focusedTestOnce,
  freshClone,
  median,
  meets,
  runKitScript,
  solvedPractice,
  spawnChecked,
  nodeStartOnce,
  TARGETS,
  timed,
  typescript59Modules,
  useModules,
  type Target,
} from "./engine/bench.js";
import { findChapter, loadChapters, type Chapter } from "./engine/chapters.js";
import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { CourseError, usageError } from "./engine/errors.js";
import { ensureHistory } from "./engine/history.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { pad } from "./engine/screen.js";

const DEFAULT_RUNS = 5;
const DEFAULT_OUT = path.join(KIT_ROOT, ".bench", "results.json");
const TS59 = path.join(KIT_ROOT, "node_modules", "typescript-5.9", "bin", "tsc");

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

interface SavedRun {
  date: string;
  rows: Array<{ id: string; median: number | null }>;
}

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
  if (!existsSync(TS59)) {
    throw new CourseError("TS59_MISSING", "没有安装对照用的 TypeScript 5.9（devDependency typescript-5.9）：请在套件根目录运行 npm ci");
  }
  const previous = readHistory(out);
  const history = await ensureHistory(KIT_ROOT, chapters);
  const work = benchWorkRoot();
  const progress = path.join(work.dir, "progress.json");
  const env = { PI_COURSE_PROGRESS: progress };
  const rows: Row[] = [];
  const say = (text: string) => process.stderr.write(`${paint("dim", text, process.stderr)}\n`);
  // 做完的练习目录，每章每种用途一个（watch 会改动并还原文件，不与 verify 共用）
  const solved = async (of: Chapter, use = "done"): Promise<string> => {
    const solvedDir = path.join(work.dir, `${use}-${of.id}`);
    if (!existsSync(solvedDir)) await solvedPractice(KIT_ROOT, of, history, solvedDir);
    return solvedDir;
  };

  try {
    say(`准备：做完的第 ${chapter.id} 章练习目录（TS 7 与 TS 5.9 各一个），每项测 ${runs} 次…`);
    const dir = path.join(work.dir, "loop");
    const dir59 = path.join(work.dir, "loop-ts59");
    await solvedPractice(KIT_ROOT, chapter, history, dir);
    await solvedPractice(KIT_ROOT, chapter, history, dir59);
    useModules(dir59, typescript59Modules(KIT_ROOT, work.dir));
    await documentedLoop(dir, chapter); // 预热：让两边都读过一次磁盘缓存
    await documentedLoop(dir59, chapter);
    const ts7 = { total: [] as number[], build: [] as number[], test: [] as number[] };
    const ts59 = { total: [] as number[], build: [] as number[], test: [] as number[] };
    const tsc7: number[] = [];
    const tsc59: number[] = [];
    const testOnly: number[] = [];
    const testOwn: number[] = [];
    const nodeStart: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`学习循环 ${run}/${runs}`);
      const a = await documentedLoop(dir, chapter);
      const b = await documentedLoop(dir59, chapter);
      for (const [into, from] of [[ts7, a], [ts59, b]] as const) {
        into.total.push(from.totalMs);
        into.build.push(from.buildMs);
        into.test.push(from.testMs);
      }
      tsc7.push(await compileOnce(dir));
      tsc59.push(await compileOnce(dir, TS59));
      const once = await focusedTestOnce(dir, chapter);
      testOnly.push(once.wallMs);
      testOwn.push(once.ownMs);
      nodeStart.push(await nodeStartOnce());
    }
    rows.push(row("loop-ts7", `学习循环 · TS 7（第 ${chapter.id} 章，课文的命令）`, ts7.total));
    rows.push(row("loop-ts7-build", "  其中 npm run build -w @pi/course", ts7.build));
    rows.push(row("loop-ts7-tsc", "    其中 tsc 本身（直接运行原生编译器）", tsc7));
    rows.push(row("loop-ts7-test", "  其中 node --test 聚焦测试", ts7.test));
    rows.push(floorRow("loop-floor", "  下限：tsc + 测试自己的用时 + 启动一次 node", tsc7, testOwn, nodeStart));
    rows.push(row("loop-ts59", "学习循环 · TS 5.9（同一命令、同一测试）", ts59.total));
    rows.push(row("loop-ts59-build", "  其中 npm run build -w @pi/course", ts59.build));
    rows.push(row("loop-ts59-tsc", "    其中 tsc 本身", tsc59));
    rows.push(row("test-runner", "聚焦测试单独直接运行（verify 与 watch 的方式）", testOnly));
    rows.push(row("test-own", "  其中各项测试自己的用时（node:test 报告的之和）", testOwn));
    const ratios = ts59.total.map((value, index) => value / (ts7.total[index] ?? Number.NaN));
    rows.push({ id: "loop-ratio", label: "TS 5.9 ÷ TS 7（学习循环，只报告）", samples: ratios, value: median(ts59.total) / median(ts7.total), unit: "x" });

    if (values.full) {
      // 每个重建章的学习循环与它的下限（只用 TS 7）：看哪一章的循环离下限最远
      for (const other of chapters.filter((candidate) => candidate.mode === "重建" && candidate.id !== chapter.id)) {
        say(`学习循环（第 ${other.id} 章）…`);
        const otherDir = await solved(other);
        await documentedLoop(otherDir, other); // 预热
        const total: number[] = [];
        const tsc: number[] = [];
        const own: number[] = [];
        const start: number[] = [];
        for (let run = 1; run <= runs; run++) {
          total.push((await documentedLoop(otherDir, other)).totalMs);
          tsc.push(await compileOnce(otherDir));
          own.push((await focusedTestOnce(otherDir, other)).ownMs);
          start.push(await nodeStartOnce());
        }
        rows.push(row(`loop-${other.id}`, `学习循环（第 ${other.id} 章）`, total));
        rows.push(floorRow(`loop-${other.id}-floor`, "  下限", tsc, own, start));
      }
    }

    for (const watched of explicitChapter ? [chapter] : watchChapters(chapters, chapter)) {
      say(`watch 保存 → 结果（第 ${watched.id} 章）…`);
      const samples = await watchLatency(KIT_ROOT, watched, await solved(watched, "watch"), runs, env);
      rows.push(row(`watch-${watched.id}`, `watch 保存 → 偏差（第 ${watched.id} 章）`, samples.failing, TARGETS.watch));
      rows.push(row(`watch-${watched.id}-pass`, "  改回去 → 全部通过", samples.passing));
    }

    const last = chapters.filter((candidate) => candidate.mode === "重建").at(-1);
    const verified = explicitChapter || !last || last.id === chapter.id ? [chapter] : [chapter, last];
    for (const checked of verified) {
      const checkedDir = checked.id === chapter.id ? dir : await solved(checked);
      const samples: number[] = [];
      let failure = "";
      for (let run = 1; run <= runs; run++) {
        say(`verify（第 ${checked.id} 章）${run}/${runs}`);
        samples.push(
          await timed(() =>
            runKitScript(KIT_ROOT, "verify", [checked.id, checkedDir], env).catch((error: Error) => {
              failure = error.message; // 做完的目录没通过：多半是机器忙到章节测试超时；照实记下
            }),
          ),
        );
      }
      // ≤ 1.2 s 是对第 08 章定的，≤ 2.5 s 对最后一章；其余的章只报告
      const target = checked.id === "08" ? TARGETS.verify : checked.id === last?.id ? TARGETS.verifyLast : undefined;
      const verifyRow = row(checked.id === chapter.id ? "verify" : `verify-${checked.id}`, `verify（第 ${checked.id} 章，连同更早章节）`, samples, target);
      if (failure) {
        verifyRow.pass = false;
        verifyRow.note = `有一次没有通过：${failure.slice(0, 120)}`;
      }
      rows.push(verifyRow);
    }

    const practiceSamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`practice ${run}/${runs}`);
      const target = path.join(work.dir, `practice-${run}`);
      practiceSamples.push(await timed(() => runKitScript(KIT_ROOT, "practice", [chapter.id, target], env)));
    }
    rows.push(row("practice", `practice（历史已缓存，第 ${chapter.id} 章）`, practiceSamples, TARGETS.practice));

    const historySamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`首次构建课程历史 ${run}/${runs}（克隆不计时）`);
      const clone = await freshClone(KIT_ROOT, work.dir);
      historySamples.push(await timed(() => runKitScript(clone, "course", ["history"], env)));
    }
    rows.push(row("history", `首次构建课程历史（全部 ${chapters.length} 章）`, historySamples, TARGETS.history));

    const lintSamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`course lint ${run}/${runs}`);
      lintSamples.push(await timed(() => runKitScript(KIT_ROOT, "course", ["lint"], env)));
    }
    rows.push(row("lint", `course lint（全部 ${chapters.length} 章的静态检查）`, lintSamples, TARGETS.lint));

    if (values.full) {
      // 冷：不用自检缓存（与 CI 相同）；热：紧接着再跑一次，输入没变的自检项取自缓存
      for (const [id, label, extra, target] of [
        ["npm-test", "npm test（全部，含每章自检，不用缓存）", { PI_COURSE_SELFCHECK_CACHE: "off" }, TARGETS.npmTest],
        ["npm-test-warm", "npm test 第二次（自检取自缓存）", {}, TARGETS.npmTestWarm],
      ] as const) {
        say(`${label}（只跑一次）…`);
        let ok = true;
        const ms = await timed(() =>
          spawnChecked("npm", ["test"], KIT_ROOT, { ...env, ...extra }).catch(() => {
            ok = false;
          }),
        );
        const full = row(id, label, [ms], target);
        if (!ok) {
          full.pass = false;
          full.note = "npm test 失败了";
        }
        rows.push(full);
      }
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

  const last = previous.at(-1);
  const before = new Map((last?.rows ?? []).map((entry) => [entry.id, entry.median]));
  console.log(paint("bold", `性能目标 · 中位数，每项 ${runs} 次 · ${os.cpus().length} 核 · Node ${process.versions.node} · 负载 ${result.machine.load}`));
  console.log("");
  console.log(paint("dim", `${pad("项目", 50)}${pad("中位数", 10)}${pad("上次", 10)}${pad("目标", 10)}结果`));
  for (const entry of rows) {
    const value = format(entry.value, entry.unit);
    const earlier = before.get(entry.id);
    const verdict =
      (entry.pass === undefined ? (entry.target ? paint("dim", "·") : "") : entry.pass ? paint("green", "✓") : paint("red", "✗")) +
      (entry.note ? paint("dim", ` ${entry.note}`) : "");
    const text = `${pad(entry.label, 50)}${pad(value, 10)}${pad(earlier === undefined || earlier === null ? "—" : format(earlier, entry.unit), 10)}${pad(entry.target?.text ?? "", 10)}${verdict}`;
    console.log(entry.label.startsWith("  ") ? paint("dim", text) : text);
  }
  console.log("");
  console.log(`样本与机器信息已追加到 ${path.relative(userCwd(), out) || out}（第 ${previous.length + 1} 次）`);
  const missed = rows.filter((entry) => entry.pass === false);
  if (missed.length > 0) {
    console.log(paint("red", "没达到的目标："));
    for (const entry of missed) console.log(`  ${entry.label.trim()}：${format(entry.value, entry.unit)}，目标 ${entry.target?.text ?? ""}${gap(entry)}`);
    throw new CourseError("BENCH_TARGET_MISSED", `${missed.length} 项没有达到目标：${missed.map((entry) => entry.label.trim()).join("、")}`);
  }
});

/** watch 测哪几章：第 03 章、学习循环那一章、代码最多的第 12、13 章，以及第 15 章起的每一章。 */
function watchChapters(chapters: readonly Chapter[], chapter: Chapter): Chapter[] {
  const wanted = (id: string) => id === "03" || id === chapter.id || id === "12" || id === "13" || id >= "15";
  return chapters.filter((candidate) => candidate.mode === "重建" && wanted(candidate.id));
}

/** 之前的 bench 结果（数组）；旧版本写的是单个对象，当作一项。 */
function readHistory(file: string): SavedRun[] {
  if (!existsSync(file)) return [];
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as SavedRun | SavedRun[];
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    throw new CourseError("BENCH_HISTORY_BROKEN", `${file} 不是有效的 JSON：挪走它（bench 不会覆盖之前的结果）再运行`);
  }
}

function format(value: number, unit: "ms" | "x"): string {
  if (Number.isNaN(value)) return "—";
  return unit === "x" ? `${value.toFixed(1)}×` : formatMs(value);
}

/** 差多少：时间超出多少，倍数差多少。 */
function gap(entry: Row): string {
  if (!entry.target || Number.isNaN(entry.value)) return "";
  return entry.target.kind === "max-ms"
    ? `（超出 ${formatMs(entry.value - entry.target.limit)}）`
    : `（差 ${(entry.target.limit - entry.value).toFixed(1)}×）`;
}

function row(id: string, label: string, samples: number[], target?: Target): Row {
  const value = median(samples);
  return { id, label, samples, value, unit: "ms", ...(target ? { target, pass: meets(target, value) } : {}) };
}

/** 下限：同一轮里分别测的三段相加（tsc 本身、各项测试自己的用时、启动一次 node），取各轮的中位数。 */
function floorRow(id: string, label: string, tsc: number[], own: number[], start: number[]): Row {
  return row(id, label, tsc.map((ms, index) => ms + (own[index] ?? Number.NaN) + (start[index] ?? Number.NaN)));
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
