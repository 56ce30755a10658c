import path from "node:path";
import { inspect, type styleText } from "node:util";

import type { Chapter, Lab } from "./chapters.js";
import { LADDER_HEIGHT, levelName } from "./hints.js";
import type { Deviation } from "./deviation.js";
import type { LabResult, RunResult } from "./labs.js";
import type { SourceLocation } from "./runner.js";
import { shortHash } from "./history.js";
import { displayWidth, fitText } from "./terminal.js";
import type { PracticeCheck } from "./verify.js";

/**
 * verify、watch、hint 共用的几段文字：每个实践一行、第一处偏差、提示是否可用。
 * 只返回文字行；颜色由调用方传入的 paint 决定（终端外自动是纯文本）。
 */
export type Style = Parameters<typeof styleText>[0];
export type Painter = (style: Style, text: string) => string;

const LABEL_WIDTH = 10;

export function pad(text: string, width: number): string {
  return text + " ".repeat(Math.max(1, width - displayWidth(text)));
}

function label(text: string): string {
  return pad(text, LABEL_WIDTH);
}

export function mark(ok: boolean, paint: Painter): string {
  return ok ? paint("green", "✓") : paint("red", "✗");
}

function runText(result: RunResult): string {
  // 选中的数量和声明不同（测试被改名、增删）时标出来；一项都没跑（文件没能加载）时不添乱
  const selected = result.tests.length === result.run.expect.total || result.tests.length === 0 ? "" : `（选中 ${result.tests.length}）`;
  const text = `${result.passed}/${result.run.expect.total}${selected}`;
  return result.run.pattern === undefined ? `全部 ${text}` : text;
}

export function buildLine(check: Pick<PracticeCheck, "build" | "buildMs">, paint: Painter): string {
  if (check.build.ok) return `${label("编译")}${mark(true, paint)} ${seconds(check.buildMs)}`;
  const count = check.build.errors.length;
  return `${label("编译")}${mark(false, paint)} ${count > 0 ? `${count} 条 tsc 错误` : "tsc 以非零状态退出"}`;
}

export function labLines(labs: readonly LabResult[], paint: Painter): string[] {
  const counts = labs.map((result) => result.runs.map(runText).join(" · "));
  // 计数一栏按最宽的一格对齐：计数长了（“· 全部 0/23”）标题也不会错位
  const width = Math.max(14, ...counts.map((text) => displayWidth(text) + 1));
  return labs.map((result, index) => `${label(`实践 ${result.lab.id}`)}${mark(result.ok, paint)} ${pad(counts[index] ?? "", width)}${paint("dim", result.lab.title)}`);
}

/** 课文里的行内代码（`name`）：终端里上色，管道里（不上色时）去掉反引号，只留文字。 */
export function inlineMarkdown(text: string, paint: Painter): string {
  return text.replace(/`([^`\n]+)`/g, (_, code: string) => paint("cyan", code));
}

/** 屏幕矮的时候，各实践缩成一行：通过的、当前的、还没到的。 */
export function labSummary(labs: readonly LabResult[], paint: Painter): string {
  const current = labs.find((result) => !result.ok);
  const parts = labs.map((result) => (result.ok ? paint("green", `✓${result.lab.id}`) : result === current ? paint("red", `✗${result.lab.id}`) : paint("dim", `○${result.lab.id}`)));
  return `${label("实践")}${parts.join(" ")}（通过 ${labs.filter((result) => result.ok).length}/${labs.length}）`;
}

/** watch 一屏的几段：上面的标题与编译行、实践列表、当前实践与偏差、底下的时间与按键。 */
export interface WatchScreen {
  top: string[];
  labs: readonly LabResult[];
  body: string[];
  bottom: string[];
}

/**
 * 把 watch 的一屏放进 columns × rows：先按宽度折行；放不下时实践列表缩成一行，
 * 再去掉正文里的空行，最后截掉偏差的末尾。标题、编译行、当前实践、第一处偏差的开头和底行总在屏幕上。
 */
export function fitWatchScreen(screen: WatchScreen, paint: Painter, columns?: number, rows?: number): string[] {
  const fit = (lines: readonly string[]) => lines.flatMap((line) => fitText(line, columns).split("\n"));
  const top = fit(screen.top);
  const bottom = fit(screen.bottom);
  let labs = fit(labLines(screen.labs, paint));
  let body = fit(screen.body);
  const total = () => top.length + labs.length + body.length + bottom.length;
  if (rows === undefined || total() <= rows) return [...top, ...labs, ...body, ...bottom];
  if (screen.labs.length > 1) labs = fit([labSummary(screen.labs, paint)]);
  if (total() > rows) body = body.filter((line) => line.trim() !== "");
  if (total() > rows) body = [...body.slice(0, Math.max(1, rows - top.length - labs.length - bottom.length - 1)), paint("dim", "  …（屏幕放不下；npm run verify 看完整报告）")];
  return [...top, ...labs, ...body, ...bottom];
}

/** verify 的完整报告：编译、各实践、更早章节、测试文件。 */
export function checkLines(check: PracticeCheck, paint: Painter): string[] {
  const lines = [buildLine(check, paint), ...labLines(check.labs, paint)];
  if (check.earlier.length > 0) {
    const ok = check.earlier.every((result) => result.ok);
    const parts = check.earlier.map((result) => {
      const text = `${result.chapter.id} ${result.passed}/${Math.max(result.tests.length, result.chapter.focusedTest.count)}`;
      return result.ok ? text : paint("red", text);
    });
    lines.push(`${label("更早章节")}${mark(ok, paint)} ${parts.join(" · ")}${ok ? "" : paint("red", "  ← 回归")}`);
  }
  if (check.missing.length > 0 || check.modified.length > 0) {
    const names = (changes: readonly { file: string }[]) => changes.map((change) => path.posix.basename(change.file)).join("、");
    const parts = [
      ...(check.missing.length > 0 ? [`缺少 ${names(check.missing)}`] : []),
      ...(check.modified.length > 0 ? [`${names(check.modified)} 与课程版本不同`] : []),
    ];
    lines.push(`${label("测试文件")}${mark(false, paint)} ${parts.join("；")}`);
  }
  return lines;
}

export interface DeviationContext {
  kitRoot: string;
  dir: string;
}

/** 第一处偏差：第一条失败断言的期望与实际，或第一条 tsc 错误的文件与行号。 */
export function deviationLines(deviation: Deviation, context: DeviationContext, paint: Painter): string[] {
  switch (deviation.kind) {
    case "tsc": {
      const { error, count } = deviation;
      return [
        `${paint("bold", `${error.file}:${error.line}:${error.column}`)} ${paint("red", error.code)} ${error.message}`,
        paint("dim", count > 1 ? `（共 ${count} 条 tsc 错误；先修第一条，后面的常常随之消失）` : "（只有这一条 tsc 错误）"),
      ];
    }
    case "build":
      return [
        "tsc 失败，但没有给出可解析的错误：",
        ...firstLines(deviation.output, 5).map((line) => `  ${line}`),
        paint("dim", "可能是练习目录的依赖链接坏了：运行 npm run doctor 检查"),
      ];
    case "load":
      return [
        `${paint("bold", path.basename(deviation.test.file))} 没能运行${deviation.chapter ? `（第 ${deviation.chapter.id} 章的测试）` : ""}：`,
        `  ${paint("red", deviation.test.message ?? "测试文件没能加载")}`,
        ...(explain(deviation.test.message) ? [`  ${paint("dim", explain(deviation.test.message) ?? "")}`] : []),
      ];
    case "test": {
      const where = deviation.lab ? `实践 ${deviation.lab.id}` : `第 ${deviation.chapter.id} 章`;
      return [`${paint("red", "✗")} 「${deviation.test.name}」${paint("dim", `（${where}）`)}`, ...failureLines(deviation.test, paint, deviation.location)];
    }
    case "count": {
      const { run } = deviation.result;
      const selector = run.pattern === undefined ? "整个聚焦测试" : `--test-name-pattern="${run.pattern}"`;
      return [
        `实践 ${deviation.lab.id}：${selector} 应当 ${run.expect.pass}/${run.expect.total}，实际选中 ${deviation.result.tests.length} 项、通过 ${deviation.result.passed} 项`,
        paint("dim", "测试名称或数量和课程声明的不一样：测试文件是否被改过？"),
      ];
    }
    case "missing":
    case "modified": {
      const what = deviation.kind === "missing" ? "缺少测试文件" : "测试文件被改动过";
      const lines = [`${paint("red", what)}：测试是这一章的规格，让它变绿的唯一办法是让代码满足它。恢复原样：`];
      for (const change of deviation.files) {
        lines.push(`  git -C ${context.kitRoot} show ${shortHash(change.commit)}:${change.file} > ${path.join(context.dir, change.file)}`);
      }
      return lines;
    }
  }
}

function failureLines(test: { message?: string; actual?: unknown; expected?: unknown }, paint: Painter, location?: SourceLocation): string[] {
  const lines: string[] = [];
  const hasValues = test.expected !== undefined || test.actual !== undefined;
  const message = test.message ?? "";
  // 断言自带的 diff 很长；有 expected / actual 时只保留第一行说明
  lines.push(...firstLines(message, hasValues ? 1 : 6).map((line) => `  ${line}`));
  const why = explain(message);
  if (why) lines.push(`  ${paint("dim", why)}`);
  if (location) lines.push(`  位置：${locationText(location, paint)}`);
  if (hasValues) {
    lines.push(`  ${paint("green", "期望")}：${indentTail(show(test.expected))}`);
    lines.push(`  ${paint("red", "实际")}：${indentTail(show(test.actual))}`);
  }
  return lines;
}

/** 位置一行：有源码映射时就是 .ts 的行列；只有编译后的 .js 时照实说，并指出对应的源码文件。 */
export function locationText(location: SourceLocation, paint: Painter): string {
  const where = paint("bold", `${location.file}:${location.line}:${location.column}`);
  if (!location.compiled) return where;
  const source = location.file.replace("/dist/", "/").replace(/\.js$/, ".ts");
  return `${where}${paint("dim", `（这是编译后的文件，行号按它算；源码是 ${source}）`)}`;
}

/** node:test 常见的英文失败说明，配一句中文解释它通常意味着什么。 */
const EXPLANATIONS: Array<[RegExp, string]> = [
  [/Promise resolution is still pending but the event loop has already resolved/, "测试在等一个永远不会兑现的 Promise：通常是流没有结束，或者没人调用 resolve。"],
  [/test timed out after \d+ms/, "测试超时：某个 await 一直没有等到结果。"],
  [/test did not finish before its parent and was cancelled/, "测试被取消：同一文件里更早的测试挂住了。"],
  [/ERR_MODULE_NOT_FOUND|Cannot find module/, "找不到模块：检查文件是否存在、import 路径是否以 .js 结尾。"],
  [/is not a function|is not a constructor/, "调用的东西不存在或不是函数：检查导出名与签名。"],
];

export function explain(message: string | undefined): string | undefined {
  if (!message) return undefined;
  return EXPLANATIONS.find(([pattern]) => pattern.test(message))?.[1];
}

function show(value: unknown): string {
  const text = inspect(value, { depth: 6, breakLength: 90, maxArrayLength: 20, maxStringLength: 600 });
  const lines = text.split("\n");
  return lines.length > 14 ? [...lines.slice(0, 14), "…"].join("\n") : text;
}

function indentTail(text: string): string {
  return text.split("\n").join("\n        ");
}

function firstLines(text: string, count: number): string[] {
  return text
    .split("\n")
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== "")
    .slice(0, count);
}

/** 某个实践的提示还剩几级，下一条命令是什么。 */
export function hintLine(chapter: Chapter, lab: Lab, shown: number, paint: Painter, key?: string): string {
  if (shown >= LADDER_HEIGHT) {
    return `提示：实践 ${lab.id} 的四级提示都看过了；回看用 ${paint("cyan", `npm run hint -- ${chapter.id} ${lab.id} --level N`)}`;
  }
  const next = shown + 1;
  // 按键写进同一对括号里：两对括号挨着读起来像排版错误
  const orKey = key ? `；或按 ${key}` : "";
  return `提示：实践 ${lab.id} 还有 ${LADDER_HEIGHT - shown} 级可看 → ${paint("cyan", `npm run hint -- ${chapter.id} ${lab.id}`)}（第 ${next} 级 · ${levelName(next)}${orKey}）`;
}

/**
 * watch 每屏的最后一行。在终端里能按键，就把按键列出来；
 * 管道和测试里不读键盘，只说保存即重跑、Ctrl-C 退出。
 */
export function watchFooter(mode: "events" | "poll", interactive: boolean): string {
  const how = mode === "events" ? "文件事件" : "轮询";
  return interactive
    ? `监视中（${how}）：保存文件即重跑 · 按键：r 重跑、h 下一级提示、x 还原文件、q 退出`
    : `监视中（${how}）：保存文件即重跑，Ctrl-C 退出`;
}

export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}
