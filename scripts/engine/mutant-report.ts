import type { Chapter } from "./chapters.js";
import type { MutantReport } from "./mutant-sweep.js";

/** `course mutants` 的文字报告：得分一行，然后逐个列出活下来的变异（可以直接抄进 chapter.json 的等价条目）。 */
export function describeMutantReport(report: MutantReport, chapter: Chapter): string[] {
  const total = report.outcomes.length;
  const percent = (report.score * 100).toFixed(1);
  const lines = [
    `第 ${chapter.id} 章 · ${chapter.title}：生成 ${total} 个变异，抓住 ${report.killed}，活下来 ${report.survived}，等价 ${report.equivalent}；变异得分 ${percent}%`,
  ];
  for (const outcome of report.outcomes) {
    if (outcome.fate === "killed" || outcome.fate === "equivalent") continue;
    const { mutant } = outcome;
    const shown = mutant.operator === "删掉语句" ? `删掉「${mutant.original}」` : `「${mutant.original}」→「${mutant.replacement}」`;
    lines.push(`  ${outcome.fate === "survived" ? "活下来" : "检验出错"} ${mutant.file}:${mutant.line} ${mutant.operator}：${shown}`);
    if (outcome.note) lines.push(`      ${outcome.note}`);
    lines.push(`      ${JSON.stringify({ file: mutant.file, find: mutant.find, replace: mutant.replace, reason: "…" })}`);
  }
  for (const index of report.staleEquivalents) {
    lines.push(`  过时的等价条目 equivalentMutants[${index}]：它不再对应任何生成的变异（代码改了），删掉或更新它`);
  }
  if (report.survived === 0 && report.staleEquivalents.length === 0) lines.push("  每个不等价的变异都被聚焦测试抓住了。");
  return lines;
}
