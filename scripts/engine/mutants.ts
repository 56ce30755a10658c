import ts from "typescript-5.9";

import type { EquivalentMutant, Mutation } from "./chapters.js";
import { findRegions } from "./regions.js";

/**
 * 生成的变异：作者工具 `course mutants NN` 在本章实践区域里的代码上做一处小破坏
 * （比较与逻辑运算符互换、边界差一、条件取反、布尔值翻转、删掉一条调用语句），
 * 看聚焦测试能不能抓住。活下来的变异要么补一条测试守住课文说的规则，要么在 chapter.json 的
 * `equivalentMutants` 里写明它为什么与原代码等价。chapter.json 的 `mutations` 是作者挑出的、每条规则一条；
 * 这里是机器穷举的，用来找出课文说了、测试却没守住的规则。
 */
export interface GeneratedMutant extends Mutation {
  /** 变异所在的行（从 1 数）。 */
  line: number;
  /** 哪一类变异，例如 `===→!==`、`删掉语句`。 */
  operator: string;
  /** 行内被换掉的原文与换上的文字。 */
  original: string;
  replacement: string;
}

const SWAPS: Readonly<Partial<Record<ts.SyntaxKind, string>>> = {
  [ts.SyntaxKind.EqualsEqualsEqualsToken]: "!==",
  [ts.SyntaxKind.ExclamationEqualsEqualsToken]: "===",
  [ts.SyntaxKind.EqualsEqualsToken]: "!=",
  [ts.SyntaxKind.ExclamationEqualsToken]: "==",
  [ts.SyntaxKind.LessThanToken]: "<=",
  [ts.SyntaxKind.LessThanEqualsToken]: "<",
  [ts.SyntaxKind.GreaterThanToken]: ">=",
  [ts.SyntaxKind.GreaterThanEqualsToken]: ">",
  [ts.SyntaxKind.AmpersandAmpersandToken]: "||",
  [ts.SyntaxKind.BarBarToken]: "&&",
  [ts.SyntaxKind.MinusToken]: "+",
  [ts.SyntaxKind.AsteriskToken]: "/",
};

/**
 * 一个文件里本章教学代码中的全部变异，按位置排列。教学代码是本章实践的区域；
 * 文件里没有本章的区域时（早几章还没有标区域），是本章补丁新加的行（addedLines，从 1 数）。
 */
export function generateMutants(source: string, file: string, labs: ReadonlySet<string>, addedLines: ReadonlySet<number> = new Set()): GeneratedMutant[] {
  const lines = source.split("\n");
  const regions = findRegions(source, file).filter((region) => labs.has(region.lab));
  const ranges =
    regions.length > 0
      ? regions.map((region) => [offsetOfLine(lines, region.start + 1), offsetOfLine(lines, region.end)] as const)
      : [...addedLines].map((line) => [offsetOfLine(lines, line - 1), offsetOfLine(lines, line)] as const);
  const inRegion = (node: ts.Node) => ranges.some(([start, end]) => node.getStart() >= start && node.getEnd() <= end);
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const edits: Array<{ start: number; end: number; text: string; operator: string }> = [];

  const visit = (node: ts.Node): void => {
    if (inRegion(node)) {
      if (ts.isBinaryExpression(node)) {
        const swap = SWAPS[node.operatorToken.kind];
        if (swap !== undefined) {
          edits.push({ start: node.operatorToken.getStart(), end: node.operatorToken.getEnd(), text: swap, operator: `${node.operatorToken.getText()}→${swap}` });
        }
      }
      if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.ExclamationToken) {
        edits.push({ start: node.getStart(), end: node.operand.getStart(), text: "", operator: "去掉 !" });
      }
      if (node.kind === ts.SyntaxKind.TrueKeyword || node.kind === ts.SyntaxKind.FalseKeyword) {
        const flipped = node.kind === ts.SyntaxKind.TrueKeyword ? "false" : "true";
        edits.push({ start: node.getStart(), end: node.getEnd(), text: flipped, operator: `${node.getText()}→${flipped}` });
      }
      if (ts.isNumericLiteral(node) && /^\d+$/.test(node.text)) {
        const bumped = String(Number(node.text) + 1);
        edits.push({ start: node.getStart(), end: node.getEnd(), text: bumped, operator: "边界 +1" });
      }
      if ((ts.isIfStatement(node) || ts.isWhileStatement(node)) && !ts.isPrefixUnaryExpression(node.expression)) {
        const condition = node.expression;
        edits.push({ start: condition.getStart(), end: condition.getEnd(), text: `!(${condition.getText()})`, operator: "条件取反" });
      }
      // 删掉的语句换成空语句 `;`：`if (x) f(); else …` 删掉 f() 之后仍是合法的代码
      if (ts.isExpressionStatement(node) && isCallStatement(node.expression)) {
        edits.push({ start: node.getStart(), end: node.getEnd(), text: ";", operator: "删掉语句" });
      }
      if (ts.isBreakStatement(node) || ts.isContinueStatement(node)) {
        edits.push({ start: node.getStart(), end: node.getEnd(), text: ";", operator: "删掉语句" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);

  return edits
    .sort((a, b) => a.start - b.start)
    .map((edit) => {
      const { find, replace } = uniqueReplacement(source, edit.start, edit.end, edit.text);
      return {
        file,
        find,
        replace,
        line: sourceFile.getLineAndCharacterOfPosition(edit.start).line + 1,
        operator: edit.operator,
        original: source.slice(edit.start, edit.end),
        replacement: edit.text,
      };
    });
}

/** `await x.y(…)` 或 `x.y(…)` 这样单独成句的调用：删掉它是“漏做了一步”。 */
function isCallStatement(expression: ts.Expression): boolean {
  const inner = ts.isAwaitExpression(expression) ? expression.expression : expression;
  return ts.isCallExpression(inner);
}

function offsetOfLine(lines: readonly string[], line: number): number {
  let offset = 0;
  for (let i = 0; i < line; i++) offset += (lines[i]?.length ?? 0) + 1;
  return offset;
}

/**
 * 把位置上的一处改动写成 chapter.json 的 `{ find, replace }`：从所在的整行起，不够唯一就往前后各多带一行，
 * 直到 find 在文件里恰好出现一次（与手写的 mutations 同一种格式，同一个检验器能跑它）。
 */
export function uniqueReplacement(source: string, start: number, end: number, text: string): { find: string; replace: string } {
  let from = source.lastIndexOf("\n", start - 1) + 1;
  let to = source.indexOf("\n", end);
  if (to < 0) to = source.length;
  for (;;) {
    const find = source.slice(from, to);
    if (source.split(find).length - 1 === 1 || (from === 0 && to === source.length)) {
      return { find, replace: source.slice(from, start) + text + source.slice(end, to) };
    }
    if (from > 0) from = source.lastIndexOf("\n", from - 2) + 1;
    if (to < source.length) {
      const next = source.indexOf("\n", to + 1);
      to = next < 0 ? source.length : next;
    }
  }
}

/** 作者判定为等价的变异：按文件、find、replace 认出来（行号会随编辑移动，原文不会）。 */
export function isEquivalent(mutant: Mutation, equivalents: readonly EquivalentMutant[]): EquivalentMutant | undefined {
  return equivalents.find((known) => known.file === mutant.file && known.find === mutant.find && known.replace === mutant.replace);
}

/** 统一差异里某个文件新加的行在新文件里的行号（从 1 数）。 */
export function addedLinesOf(patch: string, file: string): Set<number> {
  const added = new Set<number>();
  let inFile = false;
  let line = 0;
  for (const text of patch.split("\n")) {
    if (text.startsWith("diff --git ")) {
      inFile = text.endsWith(` b/${file}`);
      continue;
    }
    if (!inFile) continue;
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
    if (hunk) {
      line = Number(hunk[1]);
      continue;
    }
    if (text.startsWith("+++") || text.startsWith("---")) continue;
    if (text.startsWith("+")) added.add(line++);
    else if (text.startsWith(" ")) line++;
  }
  return added;
}
