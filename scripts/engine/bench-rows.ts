import { existsSync, readFileSync } from "node:fs";

import { median, meets, type Target } from "./bench.js";
import { paint } from "./cli.js";
import { CourseError } from "./errors.js";
import { pad } from "./screen.js";

/** bench 表里的一行：一项测量的样本、中位数与目标。 */
export interface Row {
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

/** 之前一次 bench 写下的结果（只用到每行的中位数）。 */
export interface SavedRun {
  date: string;
  rows: Array<{ id: string; median: number | null }>;
}

/** 之前的 bench 结果（数组）；旧版本写的是单个对象，当作一项。 */
export function readHistory(file: string): SavedRun[] {
  if (!existsSync(file)) return [];
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as SavedRun | SavedRun[];
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    throw new CourseError("BENCH_HISTORY_BROKEN", `${file} 不是有效的 JSON：挪走它（bench 不会覆盖之前的结果）再运行`);
  }
}

export function format(value: number, unit: "ms" | "x"): string {
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

export function row(id: string, label: string, samples: number[], target?: Target): Row {
  const value = median(samples);
  return { id, label, samples, value, unit: "ms", ...(target ? { target, pass: meets(target, value) } : {}) };
}

/** 下限：同一轮里分别测的三段相加（tsc 本身、各项测试自己的用时、启动一次 node），取各轮的中位数。 */
export function floorRow(id: string, label: string, tsc: number[], own: number[], start: number[]): Row {
  return row(id, label, tsc.map((ms, index) => ms + (own[index] ?? Number.NaN) + (start[index] ?? Number.NaN)));
}

function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 1000).toFixed(2)} s`;
}

export function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** 打印表格：每行的中位数与上一次的并列，有目标的标出 ✓ / ✗。 */
export function printTable(rows: readonly Row[], previous: readonly SavedRun[], heading: string): void {
  const last = previous.at(-1);
  const before = new Map((last?.rows ?? []).map((entry) => [entry.id, entry.median]));
  console.log(paint("bold", heading));
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
}

/** 没达到的目标：列出来，并以 BENCH_TARGET_MISSED 结束（退出码 1）。 */
export function failOnMissed(rows: readonly Row[]): void {
  const missed = rows.filter((entry) => entry.pass === false);
  if (missed.length === 0) return;
  console.log(paint("red", "没达到的目标："));
  for (const entry of missed) console.log(`  ${entry.label.trim()}：${format(entry.value, entry.unit)}，目标 ${entry.target?.text ?? ""}${gap(entry)}`);
  throw new CourseError("BENCH_TARGET_MISSED", `${missed.length} 项没有达到目标：${missed.map((entry) => entry.label.trim()).join("、")}`);
}
