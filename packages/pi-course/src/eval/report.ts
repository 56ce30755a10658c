/**
 * 报告：同一份 EvalReport[]，给人看的是一张表，给脚本看的是 JSON。两者的数字一个不差。
 */

import type { EvalReport } from "./types.js";

export interface EvalSummary {
  passed: number;
  total: number;
  tasks: EvalReport[];
}

// ── 纯帮手 ──────────────────────────────────────────────────────

/** 终端里占几列：汉字与全角符号占两列，对齐才不会被中文挤歪。 */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/u.test(char) ? 2 : 1;
  return width;
}

function padEnd(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - displayWidth(text)));
}

function padStart(text: string, width: number): string {
  return " ".repeat(Math.max(0, width - displayWidth(text))) + text;
}

// ── 两种输出 ────────────────────────────────────────────────────

/** 给脚本的 JSON：通过数、总数，和每个任务的完整报告。 */
export function evalSummary(reports: readonly EvalReport[]): EvalSummary {
  // #region lab 14.3
  return { passed: reports.filter((report) => report.ok).length, total: reports.length, tasks: [...reports] };
  // #endregion
}

const HEADER = ["任务", "结果", "检查", "步数", "工具错误", "token", "用时"];

/** 表里的结论：跑完了却一项检查也没有的任务是“未检查”，和“失败”分开，但同样不算通过。 */
function verdictOf(report: EvalReport): string {
  // #region lab 14.3
  if (report.ok) return "通过";
  return report.error === undefined && report.checks.length === 0 ? "未检查" : "失败";
  // #endregion
}

/**
 * 给人的表：每个任务一行（结果、通过的检查数、步数、工具错误、token 估算、用时），
 * 一行总计；表下逐条列出没通过的检查与没跑完的任务，带着原因。
 */
export function formatEvalTable(reports: readonly EvalReport[]): string {
  // #region lab 14.3
  const rows = reports.map((report) => [
    report.id,
    verdictOf(report),
    `${report.checks.filter((check) => check.ok).length}/${report.checks.length}`,
    String(report.steps),
    String(report.toolErrors),
    String(report.tokens),
    `${report.wallMs}ms`,
  ]);
  const widths = HEADER.map((title, column) => Math.max(displayWidth(title), ...rows.map((row) => displayWidth(row[column] ?? ""))));
  // 第一列是名字，左对齐；其余是数字与结论，右对齐，个位对个位。
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === 0 ? padEnd(cell, widths[column] ?? 0) : padStart(cell, widths[column] ?? 0))).join("  ");
  const { passed, total } = evalSummary(reports);
  const problems = reports.flatMap((report) => [
    ...(report.error === undefined ? [] : [`✗ ${report.id}：没有跑完：${report.error}`]),
    ...(verdictOf(report) === "未检查" ? [`✗ ${report.id}：没有检查：一项检查也没有跑，无从判断对错`] : []),
    ...report.checks.filter((check) => !check.ok).map((check) => `✗ ${report.id} · ${check.name}：${check.reason}`),
  ]);
  return [line(HEADER), ...rows.map(line), "", `通过 ${passed}/${total} 个任务`, ...(problems.length > 0 ? ["", ...problems] : [])].join("\n");
  // #endregion
}
