import ts from "typescript-5.9";
import { escapeRegExp } from "./regexp.js";

/**
 * 课文说过的话，测试才能要求：聚焦测试拿来比对消息文字的字符串与正则，其中的措辞必须在本章课文里出现。
 * 否则学习者第一次红灯卡在“该怎么说”，而不是规则本身。
 *
 * 做法：用 TypeScript 的语法树找出比对消息文字的断言（assert.match、assert.throws / rejects 的第二个参数、
 * 对 .message / stderr / stdout / text 的 assert.equal、assert.deepEqual 期望对象里的 reason / errorMessage 等属性），把模式拆成字面片段；含两个以上汉字或三个以上
 * 英文单词的片段才算措辞。测试自己在别处写出的数据（夹具里的文件内容、名字、整段的命令）不算：那是数据，不是措辞。
 */
export interface Wording {
  /** 测试文件里的行号（从 1 起）。 */
  line: number;
  /** 断言里的模式原文。 */
  pattern: string;
  /** 课文里找不到的措辞片段。 */
  fragment: string;
}

const MESSAGE_TEXT = /message|error|stderr|stdout|text|warning|diagnostic|reason|answer|screen|output/i;
/** 期望对象里装着说明文字的属性；`text` 不在其中：内容块的 text 多半是夹具写出的数据。 */
const MESSAGE_PROPERTY = /^(reason|message|errorMessage|error|warning|diagnostic)$/;

export function unstatedWording(lesson: string, testSource: string, testPath = "test.ts"): Wording[] {
  const haystack = normalise(lesson);
  const patterns = messagePatterns(testSource, testPath);
  const literals = dataLiterals(testSource, testPath, patterns.map((pattern) => pattern.span[0]));
  const dataSource = literals.join("\n");
  const phrases = dataPhrases(literals);
  const unstated: Wording[] = [];
  for (const pattern of patterns) {
    for (const fragment of pattern.fragments) {
      if (dataSource.includes(fragment)) continue; // 整段都是测试自己写出的数据
      const parts = splitData(normalise(fragment), dataSource, phrases);
      if (!isWording(parts.filter((part) => !part.data).map((part) => part.text).join(""))) continue;
      if (statedIn(haystack, parts)) continue;
      unstated.push({ line: pattern.line, pattern: pattern.text, fragment });
    }
  }
  return unstated;
}

interface Pattern {
  line: number;
  text: string;
  fragments: string[];
  span: [number, number];
}

function messagePatterns(source: string, fileName: string): Pattern[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Pattern[] = [];
  const add = (node: ts.Node) => {
    const fragments = literalFragments(node);
    if (fragments === undefined) return;
    const line = file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
    found.push({ line, text: node.getText(file), fragments: fragments.filter(isWording), span: [node.getStart(file), node.getEnd()] });
  };
  const helpers = wordingHelpers(file);
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression.getText(file);
      const [first, second] = node.arguments;
      const helper = helpers.get(callee);
      if (helper !== undefined) {
        for (const index of helper) {
          const argument = node.arguments[index];
          if (argument && ts.isArrayLiteralExpression(argument)) argument.elements.forEach(add);
          else if (argument) add(argument);
        }
      }
      if (/^assert\.(match)$/.test(callee) && second) add(second);
      if (/^assert\.(throws|rejects)$/.test(callee) && second) {
        if (ts.isObjectLiteralExpression(second)) {
          for (const property of second.properties) {
            if (ts.isPropertyAssignment(property) && property.name.getText(file) === "message") add(property.initializer);
          }
        } else add(second);
      }
      if (/^assert\.(equal|strictEqual)$/.test(callee) && first && second && MESSAGE_TEXT.test(first.getText(file))) add(second);
      if (/^assert\.(deepEqual|deepStrictEqual)$/.test(callee) && second) messageProperties(second, file).forEach(add);
      if (/\.(includes)$/.test(callee) && first && MESSAGE_TEXT.test(callee)) add(first);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found.filter((pattern) => pattern.fragments.length > 0);
}

/**
 * 整体比较的期望值里比对消息文字的属性：`{ ok: false, reason: "…" }` 的 reason、`{ errorMessage: "…" }`。
 * 数组与嵌套的对象也看；别的属性（id、路径、内容块的 text）是形状与数据，不是措辞。
 */
function messageProperties(node: ts.Node, file: ts.SourceFile): ts.Expression[] {
  if (ts.isArrayLiteralExpression(node)) return node.elements.flatMap((element) => messageProperties(element, file));
  if (!ts.isObjectLiteralExpression(node)) return [];
  return node.properties.flatMap((property) => {
    if (!ts.isPropertyAssignment(property)) return [];
    if (MESSAGE_PROPERTY.test(property.name.getText(file))) return [property.initializer];
    return messageProperties(property.initializer, file);
  });
}

/**
 * 测试文件里自己写的断言辅助函数（`expectEntryError(run, expected, says)`）：哪几个参数被拿去比对消息文字。
 * 参数本身、或 for…of 遍历它得到的变量出现在 `.includes(…)` 或 `assert.match(_, …)` 里，就算。
 */
function wordingHelpers(file: ts.SourceFile): Map<string, number[]> {
  const helpers = new Map<string, number[]>();
  const consider = (name: string | undefined, parameters: readonly ts.ParameterDeclaration[], body: ts.Node | undefined) => {
    if (name === undefined || body === undefined) return;
    const names = parameters.map((parameter) => parameter.name.getText(file));
    const aliases = new Map<string, string>(names.map((parameter) => [parameter, parameter]));
    const used = new Set<string>();
    const walk = (node: ts.Node): void => {
      if (ts.isForOfStatement(node) && ts.isIdentifier(node.expression) && aliases.has(node.expression.text)) {
        const declaration = ts.isVariableDeclarationList(node.initializer) ? node.initializer.declarations[0] : undefined;
        if (declaration) aliases.set(declaration.name.getText(file), aliases.get(node.expression.text)!);
      }
      if (ts.isCallExpression(node)) {
        const callee = node.expression.getText(file);
        const [first, second] = node.arguments;
        const compared = callee.endsWith(".includes") ? first : /^assert\.match$/.test(callee) ? second : undefined;
        if (compared && ts.isIdentifier(compared) && aliases.has(compared.text)) used.add(aliases.get(compared.text)!);
      }
      ts.forEachChild(node, walk);
    };
    walk(body);
    const indexes = names.flatMap((parameter, index) => (used.has(parameter) ? [index] : []));
    if (indexes.length > 0) helpers.set(name, indexes);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionDeclaration(node)) consider(node.name?.text, node.parameters, node.body);
    if (ts.isVariableDeclaration(node) && node.initializer && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))) {
      consider(node.name.getText(file), node.initializer.parameters, node.initializer.body);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return helpers;
}

/** 字符串或正则字面量里能逐字比对的片段；不是字面量时返回 undefined。 */
function literalFragments(node: ts.Node): string[] | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return [node.text];
  if (ts.isTemplateExpression(node)) return [node.head.text, ...node.templateSpans.map((span) => span.literal.text)];
  if (ts.isRegularExpressionLiteral(node)) {
    const body = node.text.slice(1, node.text.lastIndexOf("/"));
    return regexFragments(body);
  }
  if (ts.isNewExpression(node) && node.expression.getText() === "RegExp") {
    const [first] = node.arguments ?? [];
    if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) return regexFragments(first.text);
  }
  return undefined;
}

/** 把正则拆成字面片段：元字符、字符类、分组的分支处断开，转义的字符还原成它本身。 */
export function regexFragments(body: string): string[] {
  const fragments: string[] = [];
  let current = "";
  const cut = () => {
    if (current !== "") fragments.push(current);
    current = "";
  };
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char === "\\") {
      const next = body[i + 1] ?? "";
      i++;
      if (/[dDwWsSbBnrtfv0-9]/.test(next)) cut();
      else if (next === "u" || next === "x") {
        cut();
        i += next === "u" ? (body[i + 1] === "{" ? body.indexOf("}", i) - i : 4) : 2;
      } else current += next;
      continue;
    }
    if (char === "[") {
      cut();
      while (i < body.length && body[i] !== "]") i += body[i] === "\\" ? 2 : 1;
      continue;
    }
    if ("?*+{".includes(char)) {
      // 量词作用于前一个字符：它不一定出现，从片段里拿掉
      current = current.slice(0, -1);
      cut();
      if (char === "{") i = Math.max(i, body.indexOf("}", i));
      continue;
    }
    if ("^$.()|".includes(char)) {
      cut();
      if (char === "(" && body[i + 1] === "?") i += body[i + 2] === "<" && body[i + 3] !== "=" && body[i + 3] !== "!" ? body.indexOf(">", i) - i : 2;
      continue;
    }
    current += char;
  }
  cut();
  return fragments;
}

function isWording(fragment: string): boolean {
  const han = fragment.match(/\p{Script=Han}/gu)?.length ?? 0;
  const words = fragment.match(/[A-Za-z]{2,}/g)?.length ?? 0;
  return han >= 2 || words >= 3;
}

interface Part {
  text: string;
  /** 例子里的数据：数字，或测试自己在别处写出的名字（文件名、工具名）。 */
  data: boolean;
}

/**
 * 测试自己写出的数据：文件里除了测试名、断言的说明、比对用的模式之外的字符串字面量
 * （夹具的文件内容、脚本模型的回答、工具参数）。
 */
function dataLiterals(source: string, fileName: string, patternStarts: readonly number[]): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const skipped = new Set(patternStarts);
  const explanation = new Set<ts.Node>();
  const literals: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression.getText(file);
      if (/^(test|it|describe|t\.test)$/.test(callee) && node.arguments[0]) explanation.add(node.arguments[0]);
      const messageIndex = /^assert\.(ok)$/.test(callee) ? 1 : /^assert\.(equal|strictEqual|deepEqual|deepStrictEqual|notEqual|match|doesNotMatch|throws|rejects)$/.test(callee) ? 2 : -1;
      const message = messageIndex >= 0 ? node.arguments[messageIndex] : undefined;
      if (message) explanation.add(message);
    }
    if (explanation.has(node) || skipped.has(node.getStart(file))) return;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) literals.push(node.text);
    if (ts.isTemplateExpression(node)) literals.push(node.head.text, ...node.templateSpans.map((span) => span.literal.text));
    ts.forEachChild(node, visit);
  };
  visit(file);
  return literals;
}

/**
 * 测试自己写出的、不止一个词的数据（`"rm -rf ../outside && echo gone"`、`"<html><p>"`）：它们整段嵌在模式里时，
 * 中间的空格和符号也是数据，不能逐词切开后把 `&&` 当成措辞。长的先认。
 */
function dataPhrases(literals: readonly string[]): string[] {
  const phrases = literals
    .map(normalise)
    .filter((literal) => literal.trim().length >= 3 && !/^([A-Za-z0-9_./\-[\]]+|\p{Script=Han}+)$/u.test(literal));
  return [...new Set(phrases)].sort((a, b) => b.length - a.length);
}

/**
 * 把片段切成措辞与数据：数字、测试在别处当数据写出的词（文件名、夹具里的句子）和整段短语是数据，其余是措辞。
 * 片段两端的词可以只是数据的一截：`/会话文件 .*_broken1\.jsonl 打不开/` 从文件名的中间开始比对。
 */
function splitData(fragment: string, dataSource: string, phrases: readonly string[] = []): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const [start, end] of phraseSpans(fragment, phrases)) {
    tokenParts(fragment, last, start, dataSource, parts);
    parts.push({ text: fragment.slice(start, end), data: true });
    last = end;
  }
  tokenParts(fragment, last, fragment.length, dataSource, parts);
  return parts;
}

/** 片段里整段出现的数据短语的位置，彼此不重叠；短语的两端不能切在一个词的中间。 */
function phraseSpans(fragment: string, phrases: readonly string[]): [number, number][] {
  const spans: [number, number][] = [];
  for (const phrase of phrases) {
    for (let at = fragment.indexOf(phrase); at >= 0; at = fragment.indexOf(phrase, at + 1)) {
      const end = at + phrase.length;
      if (at === 0 && end === fragment.length) continue;
      if (/\w/.test(phrase[0]!) && /\w/.test(fragment[at - 1] ?? "")) continue;
      if (/\w/.test(phrase.at(-1)!) && /\w/.test(fragment[end] ?? "")) continue;
      if (spans.some(([from, to]) => at < to && end > from)) continue;
      spans.push([at, end]);
    }
  }
  return spans.sort((a, b) => a[0] - b[0]);
}

/** fragment[from, to) 逐词切开，追加到 parts；两端的英文词是数据的一截也算数据。 */
function tokenParts(fragment: string, from: number, to: number, dataSource: string, parts: Part[]): void {
  const segment = fragment.slice(from, to);
  let last = 0;
  for (const match of segment.matchAll(/[A-Za-z0-9_./\-[\]]+|\p{Script=Han}+/gu)) {
    const token = match[0];
    const atEdge = from + match.index === 0 || from + match.index + token.length === fragment.length;
    const isData =
      /^\d+(\.\d+)?$/.test(token) ||
      (/[A-Za-z]/.test(token) && (wholeWordIn(dataSource, token) || (atEdge && dataSource.includes(token)))) ||
      (/\p{Script=Han}/u.test(token) && dataSource.includes(token));
    if (!isData) continue;
    if (match.index > last) parts.push({ text: segment.slice(last, match.index), data: false });
    parts.push({ text: token, data: true });
    last = match.index + token.length;
  }
  if (last < segment.length) parts.push({ text: segment.slice(last), data: false });
}

function wholeWordIn(source: string, token: string): boolean {
  const escaped = escapeRegExp(token);
  return new RegExp(`(?<![A-Za-z0-9_])${escaped}(?![A-Za-z0-9_])`).test(source);
}

/**
 * 课文写出了这句话：措辞逐字出现，数据的位置可以是别的例子或占位（“第 N 行”、“文件 \`<路径>\` 不存在”）。
 */
function statedIn(lesson: string, parts: readonly Part[]): boolean {
  // 开头和结尾的数据（“a.txt 在检查之后…”里的 a.txt）课文不必写出：只看措辞本身
  const inner = [...parts];
  while (inner.length > 0 && (inner[0]!.data || inner[0]!.text.trim() === "")) inner.shift();
  while (inner.length > 0 && (inner.at(-1)!.data || inner.at(-1)!.text.trim() === "")) inner.pop();
  if (inner.length === 0) return true;
  inner[0] = { ...inner[0]!, text: inner[0]!.text.trimStart() };
  inner[inner.length - 1] = { ...inner.at(-1)!, text: inner.at(-1)!.text.trimEnd() };
  const source = inner
    .map((part) => (part.data ? `(?:${escapeRegExp(part.text)}|[^\\s，。；：、（）“”]{1,40}?)` : escapeRegExp(part.text)))
    .join("");
  return new RegExp(source).test(lesson);
}


/** 比对时忽略 Markdown 的反引号转义与空白差异。 */
function normalise(text: string): string {
  return text.replace(/\\`/g, "`").replace(/\s+/g, " ");
}
