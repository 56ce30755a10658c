import path from "node:path";

import { METADATA_FILE, type Chapter, type Mutation } from "./chapters.js";
import { listCommittedFiles, readCommittedFile, type CourseHistory } from "./history.js";
import { mapInPool } from "./pool.js";
import { anchorProblem, applyAnchored, findRegions, placeholderRegions, type AnchorProblem, type Region } from "./regions.js";
import { checkLesson } from "./selfcheck.js";
import { escapeRegExp } from "./regexp.js";

/**
 * 课程的静态检查（npm run course -- lint）：不编译、不运行测试，只读课程历史里每章目标的文件（git）和 lessons/。
 * 自检要先编译整个目标才会发现的“锚点”问题，这里几秒钟就指出来，并且指到 chapter.json 里的那个字段：
 * - 每条 mutations、fault.mutations、compileFails 的 find 在目标文件里（或它点名的实践区域里）恰好出现一次；
 * - 每个 placeholders 恰好对应一个区域；重建章的每个实践在目标里都有区域；
 * - chapter.json 里点名的测试（fault.test、firstRed.failures[].test）在聚焦测试里都有，测试项数与各条运行的计数相符；
 * - 课文里的每条命令都被套件接受（与自检承诺 7 相同）。
 */
export async function lintCourse(
  kitRoot: string,
  chapters: readonly Chapter[],
  history: CourseHistory,
  selected: readonly Chapter[] = chapters,
): Promise<string[]> {
  // 几章同时读：每章的读取都在等 git，但同时开太多 git 进程也只是排队
  const reports = await mapInPool(selected, CHAPTERS_AT_ONCE, (chapter) => lintChapter(kitRoot, chapters, history, chapter));
  return reports.flat();
}

const CHAPTERS_AT_ONCE = 4;

export async function lintChapter(kitRoot: string, chapters: readonly Chapter[], history: CourseHistory, chapter: Chapter): Promise<string[]> {
  const meta = `lessons/${chapter.dirName}/${METADATA_FILE}`;
  const target = history.chapters[chapter.id]?.target;
  if (target === undefined) return [`${meta}：课程历史里没有第 ${chapter.id} 章（先运行 npm run course -- history）`];
  const tree = new TargetTree(kitRoot, target);
  const at = (field: string, problem: string) => `${meta} ${field}：${problem}`;
  const problems = [
    ...(await anchorsOf(tree, chapter, at)),
    ...(await regionsOf(tree, chapter, at)),
    ...(await testNamesOf(tree, chapter, at)),
    ...checkLesson({ kitRoot, chapters }, chapter).map((problem) => `lessons/${chapter.dirName}/${path.basename(chapter.lessonPath)}：${problem}`),
  ];
  return problems;
}

type At = (field: string, problem: string) => string;

/** 目标提交里的文件，按需从 git 读出并记住。 */
class TargetTree {
  private listing: Promise<Map<string, string>> | undefined;
  private readonly texts = new Map<string, Promise<string>>();

  constructor(
    private readonly kitRoot: string,
    private readonly commit: string,
  ) {}

  async read(file: string): Promise<string | undefined> {
    this.listing ??= listCommittedFiles(this.kitRoot, this.commit);
    if (!(await this.listing).has(file)) return undefined;
    let text = this.texts.get(file);
    if (text === undefined) {
      text = readCommittedFile(this.kitRoot, this.commit, file);
      this.texts.set(file, text);
    }
    return text;
  }
}

/**
 * 每处替换的原文恰好出现一次。故障实验的几处替换依次施加（与自检相同：同一文件的第二处在第一处改过的文字里找）；
 * 变异与编译失败用例各自单独施加在目标上。
 */
async function anchorsOf(tree: TargetTree, chapter: Chapter, at: At): Promise<string[]> {
  const problems: string[] = [];
  const check = async (mutation: Mutation, field: string, sources?: Map<string, string>): Promise<void> => {
    const source = sources?.get(mutation.file) ?? (await tree.read(mutation.file));
    if (source === undefined) {
      problems.push(at(`${field}.file`, `目标里没有 ${mutation.file}`));
      return;
    }
    let problem: AnchorProblem | undefined;
    try {
      problem = anchorProblem(source, mutation);
    } catch (error) {
      problem = { field: "region", message: (error as Error).message }; // 点名了区域，文件里的区域标记却写错了
    }
    if (problem !== undefined) {
      problems.push(at(`${field}.${problem.field}`, problem.message));
      return;
    }
    sources?.set(mutation.file, applyAnchored(source, mutation));
  };
  const faulted = new Map<string, string>();
  for (const [index, mutation] of chapter.fault.mutations.entries()) await check(mutation, `fault.mutations[${index}]`, faulted);
  for (const [index, mutation] of chapter.mutations.entries()) await check(mutation, `mutations[${index}]`);
  for (const [index, mutation] of chapter.compileFails.entries()) await check(mutation, `compileFails[${index}]`);
  return problems;
}

/** 区域标记写得对；每个占位代码恰好对应一个区域；重建章里只要有一个实践标了区域，每个实践都要有区域。 */
async function regionsOf(tree: TargetTree, chapter: Chapter, at: At): Promise<string[]> {
  const problems: string[] = [];
  const regions = new Map<string, Region[]>();
  for (const file of chapter.teachingFiles) {
    const source = await tree.read(file);
    if (source === undefined) continue;
    try {
      regions.set(file, findRegions(source, file));
    } catch (error) {
      problems.push(at("teachingFiles", (error as Error).message));
    }
  }
  const own = new Set(chapter.labs.map((lab) => lab.id));
  const marked = new Set([...regions.values()].flat().map((region) => region.lab).filter((lab) => own.has(lab)));
  if (chapter.mode === "重建" && marked.size > 0) {
    chapter.labs.forEach((lab, index) => {
      if (!marked.has(lab.id)) problems.push(at(`labs[${index}]`, `实践 ${lab.id} 在目标的教学文件里没有区域：练习目录里它无事可做`));
    });
  }
  if (chapter.placeholders.length > 0 && marked.size === 0) problems.push(at("placeholders", "声明了占位代码，目标的教学文件里却没有本章的实践区域"));
  for (const [index, placeholder] of chapter.placeholders.entries()) {
    const source = await tree.read(placeholder.file);
    if (source === undefined) {
      problems.push(at(`placeholders[${index}].file`, `目标里没有 ${placeholder.file}`));
      continue;
    }
    const hits = placeholderRegions(source.split("\n"), regions.get(placeholder.file) ?? [], placeholder);
    if (hits.length !== 1) {
      problems.push(at(`placeholders[${index}].match`, `应当恰好对应 ${placeholder.file} 里实践 ${placeholder.lab} 的一个区域（内容含「${placeholder.match}」），实际 ${hits.length} 个`));
    }
  }
  return problems;
}

/**
 * chapter.json 点名的测试都在目标的聚焦测试里；测试项数与 focusedTest.count、各实践运行的 expect.total 相符。
 * 测试名从源码里读（test("…") 的字符串字面量）；有算出来的名字（模板里带 ${…}）时只查点名的测试，不数项数。
 */
async function testNamesOf(tree: TargetTree, chapter: Chapter, at: At): Promise<string[]> {
  const source = await tree.read(chapter.focusedTest.path);
  if (source === undefined) return [at("focusedTest.path", `目标里没有 ${chapter.focusedTest.path}`)];
  const { names, templates, complete } = testNames(source);
  const problems: string[] = [];
  const named = (field: string, name: string) => {
    const found = names.includes(name) || templates.some((template) => template.test(name)) || (!complete && source.includes(name));
    if (!found) problems.push(at(field, `聚焦测试里没有名为「${name}」的测试`));
  };
  named("fault.test", chapter.fault.test);
  chapter.mutations.forEach((mutation, index) => {
    if (mutation.caughtBy !== undefined) named(`mutations[${index}].caughtBy`, mutation.caughtBy);
  });
  if (chapter.firstRed.kind === "test") chapter.firstRed.failures.forEach((failure, index) => named(`firstRed.failures[${index}].test`, failure.test));
  if (!complete) return problems;
  if (names.length !== chapter.focusedTest.count) {
    problems.push(at("focusedTest.count", `写着 ${chapter.focusedTest.count}，聚焦测试里有 ${names.length} 项`));
  }
  chapter.labs.forEach((lab, labIndex) =>
    lab.runs.forEach((run, runIndex) => {
      const pattern = run.pattern === undefined ? undefined : new RegExp(run.pattern);
      const selected = pattern === undefined ? names.length : names.filter((name) => pattern.test(name)).length;
      if (selected !== run.expect.total) {
        problems.push(at(`labs[${labIndex}].runs[${runIndex}].expect.total`, `写着 ${run.expect.total}，这条运行在聚焦测试里选中 ${selected} 项`));
      }
    }),
  );
  return problems;
}

const TEST_CALL = /\btest\(\s*(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`)/g;

/**
 * 源码里 test(…) 的名字；模板字符串里带 ${…} 的名字交回一个正则（${…} 处可以是任何文字），点名的测试照样能认出来。
 * complete 为假表示有的名字是算出来的，不能拿来数项数。
 */
export function testNames(source: string): { names: string[]; templates: RegExp[]; complete: boolean } {
  const names: string[] = [];
  const templates: RegExp[] = [];
  let complete = true;
  for (const match of source.matchAll(TEST_CALL)) {
    const [, double, single, template] = match;
    if (template !== undefined && template.includes("${")) {
      complete = false;
      const parts = template.split(/\$\{[^}]*\}/).map((part) => escapeRegExp(unescape(part)));
      templates.push(new RegExp(`^${parts.join(".+?")}$`));
    } else names.push(unescape(double ?? single ?? template ?? ""));
  }
  // 每个 test( 都读出了字面量的名字，才能拿名字去数项数
  const calls = source.match(/\btest\(/g)?.length ?? 0;
  return { names, templates, complete: complete && calls === names.length };
}

function unescape(literal: string): string {
  try {
    return JSON.parse(`"${literal.replace(/\\'/g, "'").replace(/\\`/g, "`").replace(/(?<!\\)"/g, '\\"')}"`) as string;
  } catch {
    return literal;
  }
}

