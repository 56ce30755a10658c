import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

import { focusedGlob } from "./card.js";
import { HINT_LEVEL_NAMES, HINT_LEVELS, type Chapter, type FaultExperiment, type Mutation, type RuleMutation, type TestRun } from "./chapters.js";
import { checkoutTree, listCommittedFiles, practiceStart, readCommittedFile, shortHash, type CourseHistory } from "./history.js";
import { citedHashes, lintLesson } from "./lesson.js";
import { unstatedWording } from "./wording.js";
import { COURSE_PACKAGE } from "./paths.js";
import { filesUnder } from "../kit-cache.mjs";
import { binsIntoKit } from "./links.js";
import { createPractice, GUIDE_FILE, linkDependencies, PRACTICE_MARKER } from "./practice.js";
import { buildProject, compiledTestPath, exactNames, failureMentions, runFilesApart, runTests, type BuildResult, type RunPace, type TestReport } from "./runner.js";
import { mapInPool } from "./pool.js";
import { anchorProblem, applyAnchored, findRegions, type Anchored } from "./regions.js";
import { cutStarter, parentTeachingFiles, practiceTeachingFiles, targetTeachingFiles } from "./starter.js";

/**
 * 课程自检：DESIGN §4 的每一条承诺都对应这里的一个函数。
 * 每个函数返回问题清单，空清单表示这一章守住了这条承诺。
 */
export interface SelfCheckContext {
  kitRoot: string;
  chapters: readonly Chapter[];
  history: CourseHistory;
  /** 存放临时项目的目录，必须在套件之外。 */
  workRoot: string;
}

export const PROMISES = {
  history: "1 历史与课文哈希一致",
  red: "2 练习目录因声明的原因变红",
  target: "3 目标构建干净、聚焦测试与每个实践的计数准确",
  earlier: "4 目标上更早章节的测试仍然通过",
  fault: "5 故障实验让指定测试按声明失败",
  purity: "6 练习目录纯净",
  lesson: "7 课文结构与命令合规",
  steps: "章节内部步骤按声明通过",
  regions: "9 从目标切出的脚手架红在第一个实践，逐个填回后各实践依次变绿",
  mutations: "10 每条变异都让聚焦测试变红",
  compileFails: "10 每个编译失败用例都让 tsc 报出声明的错误",
  heldOut: "8 留出测试在目标上全部通过",
} as const;

// ── 承诺 1 ──────────────────────────────────────────────────────

export function checkCitedHashes(ctx: SelfCheckContext, chapter: Chapter): string[] {
  const commits = ctx.history.chapters[chapter.id];
  if (!commits) return [`课程历史里没有第 ${chapter.id} 章`];
  const cited = citedHashes(readFileSync(chapter.lessonPath, "utf8"));
  const problems: string[] = [];
  const compare = (label: string, citedHash: string | undefined, actual: string) => {
    if (citedHash === undefined) problems.push(`课文没有引用${label}哈希`);
    else if (!actual.startsWith(citedHash)) {
      problems.push(`课文引用的${label} ${citedHash} 已过期，实际是 ${shortHash(actual)}（运行 npm run course -- export 重新盖章）`);
    }
  };
  compare("起点", cited.start, commits.parent);
  compare("目标", cited.target, commits.target);
  return problems;
}

/** 套件里的 packages/pi-course 必须与历史末端逐文件一致。 */
export async function checkTipMatchesPackage(ctx: SelfCheckContext): Promise<string[]> {
  const committed = await listCommittedFiles(ctx.kitRoot, ctx.history.tip, COURSE_PACKAGE);
  const onDisk = filesUnder(ctx.kitRoot, COURSE_PACKAGE, { skipDirs: ["dist", "node_modules"] });
  const problems: string[] = [];
  for (const file of onDisk) if (!committed.has(file)) problems.push(`${file} 不在课程历史末端里`);
  for (const [file] of committed) {
    const full = path.join(ctx.kitRoot, file);
    if (!existsSync(full)) problems.push(`${file} 在历史末端里，但套件中缺失`);
    else if (readFileSync(full, "utf8") !== (await readCommittedFile(ctx.kitRoot, ctx.history.tip, file))) {
      problems.push(`${file} 与历史末端的内容不同（运行 npm run course -- export 同步）`);
    }
  }
  return problems;
}

// ── 承诺 2 与 6：练习目录 ────────────────────────────────────────

export async function makePracticeDir(ctx: SelfCheckContext, chapter: Chapter, name = `practice-${chapter.id}`): Promise<string> {
  const dir = path.join(ctx.workRoot, name);
  await createPractice({ kitRoot: ctx.kitRoot, chapter, history: ctx.history, dir });
  return dir;
}

export async function checkFirstRed(chapter: Chapter, practiceDir: string): Promise<string[]> {
  const build = await buildProject(practiceDir, SELF_CHECK_BUILD);
  const red = chapter.firstRed;
  if (red.kind === "tsc") {
    const problems: string[] = [];
    const unmatched = [...build.errors];
    for (const expected of red.errors) {
      const at = unmatched.findIndex(
        (error) => error.code === expected.code && error.file === expected.file && error.message.includes(expected.includes),
      );
      if (at < 0) problems.push(`缺少声明的 tsc 错误 ${expected.code} ${expected.file}（…${expected.includes}…）`);
      else unmatched.splice(at, 1);
    }
    for (const extra of unmatched) problems.push(`多出未声明的 tsc 错误 ${extra.code} ${extra.file}:${extra.line}：${extra.message}`);
    return problems;
  }
  if (!build.ok) return [`起点应当能编译，却有 tsc 错误：${describeBuild(build.errors)}`];
  const report = await runTests([compiledTestPath(practiceDir, chapter.focusedTest.path)]);
  if (red.kind === "none") return expectCounts(report, { expect: { pass: chapter.focusedTest.count, total: chapter.focusedTest.count } }, "观察章的练习目录");
  const problems: string[] = [];
  const declared = new Set(red.failures.map((failure) => failure.test));
  for (const failure of red.failures) {
    const outcome = report.tests.find((test) => test.name === failure.test);
    if (!outcome) problems.push(`声明会失败的测试「${failure.test}」没有运行`);
    else if (outcome.ok) problems.push(`测试「${failure.test}」在起点就通过了，应当失败`);
    else if (!failureMentions(outcome, failure.includes)) {
      problems.push(`测试「${failure.test}」失败了，但信息里没有「${failure.includes}」：${outcome.message ?? ""}`);
    }
  }
  for (const outcome of report.tests) {
    if (!outcome.ok && !declared.has(outcome.name)) problems.push(`未声明的失败「${outcome.name}」：${outcome.message ?? ""}`);
  }
  return problems;
}

export async function checkPurity(ctx: SelfCheckContext, chapter: Chapter, practiceDir: string): Promise<string[]> {
  const problems: string[] = [];
  if (existsSync(path.join(practiceDir, ".git"))) problems.push("练习目录里有 .git");
  for (const file of [GUIDE_FILE, PRACTICE_MARKER]) {
    if (!existsSync(path.join(practiceDir, file))) problems.push(`练习目录缺少 ${file}`);
  }
  const testDir = path.join(practiceDir, COURSE_PACKAGE, "test");
  const tests = existsSync(testDir) ? readdirSync(testDir) : [];
  for (const file of tests) {
    const id = /^(\d{2})-/.exec(file)?.[1];
    if (id === undefined || id > chapter.id) problems.push(`练习目录里出现了不属于本章或更早章节的测试 ${file}`);
  }
  if (!tests.includes(path.basename(chapter.focusedTest.path))) problems.push("练习目录缺少本章聚焦测试");

  const start = practiceStart(chapter, ctx.history);
  const startFiles = await listCommittedFiles(ctx.kitRoot, start);
  const starter = await practiceTeachingFiles(ctx.kitRoot, chapter, ctx.history);
  for (const file of chapter.teachingFiles) {
    const practiceFile = path.join(practiceDir, file);
    const expected = starter.has(file)
      ? starter.get(file)
      : startFiles.has(file)
        ? await readCommittedFile(ctx.kitRoot, start, file)
        : undefined;
    const actual = existsSync(practiceFile) ? readFileSync(practiceFile, "utf8") : undefined;
    if (actual !== expected) problems.push(`教学文件 ${file} 不是起点（或切出的脚手架）的版本`);
  }
  problems.push(...findHintText(chapter, practiceDir));
  problems.push(...findHeldOut(ctx.chapters, practiceDir));
  if (existsSync(path.join(practiceDir, "node_modules", "@pi"))) problems.push("练习目录的 node_modules 里有 @pi（会解析到最终答案）");
  problems.push(...binsIntoKit(ctx.kitRoot, practiceDir).map((name) => `练习目录的 node_modules/.bin/${name} 指向套件里的最终答案`));
  try {
    createRequire(path.join(practiceDir, "package.json")).resolve("@pi/course/package.json");
    problems.push("练习目录里的 @pi/course 可以被解析到");
  } catch {
    // 解析失败正是我们要的：练习目录看不到套件里的答案。
  }
  return problems;
}


/** 提示只在 npm run hint 后面：练习目录里任何文件（node_modules 除外）都不能含有本章任何一级提示的原文。 */
export function findHintText(chapter: Chapter, practiceDir: string): string[] {
  const problems: string[] = [];
  for (const file of filesUnder(practiceDir, ".", { skipDirs: ["node_modules"] })) {
    const content = readFileSync(path.join(practiceDir, file), "utf8");
    for (const lab of chapter.labs) {
      for (const level of HINT_LEVELS) {
        if (content.includes(lab.hints[level])) problems.push(`练习目录的 ${file} 含有实践 ${lab.id} 的提示（${HINT_LEVEL_NAMES[level]}）原文`);
      }
    }
  }
  return problems;
}

/**
 * 承诺 8 的另一半：练习目录里没有任何一章的留出文件——既不在自检复制它们去的位置，
 * 也不以别的名字藏在别处（按内容比对）。node_modules 除外。
 */
export function findHeldOut(chapters: readonly Chapter[], practiceDir: string): string[] {
  const byContent = new Map<string, string>();
  const problems: string[] = [];
  for (const chapter of chapters) {
    if (chapter.heldOut === undefined) continue;
    for (const file of chapter.heldOut.files) {
      const label = `第 ${chapter.id} 章的留出文件 ${file}`;
      byContent.set(readFileSync(path.join(chapter.dir, file), "utf8"), label);
      const landing = path.join(chapter.heldOut.into, path.basename(file));
      if (existsSync(path.join(practiceDir, landing))) problems.push(`练习目录里有 ${landing}：${label}不该进练习目录`);
    }
  }
  if (byContent.size === 0) return problems;
  for (const file of filesUnder(practiceDir, ".", { skipDirs: ["node_modules"] })) {
    const label = byContent.get(readFileSync(path.join(practiceDir, file), "utf8"));
    if (label !== undefined && !problems.some((problem) => problem.includes(file))) problems.push(`练习目录的 ${file} 就是${label}`);
  }
  return problems;
}

// ── 承诺 8：留出测试 ────────────────────────────────────────────

/**
 * 把本章的留出文件复制进目标项目（chapter.heldOut.into），编译，运行其中的测试：
 * 必须恰好 count 项、全部通过。本章没有留出测试时这条承诺不适用。
 */
export async function checkHeldOut(chapter: Chapter, dir: string): Promise<string[]> {
  const heldOut = chapter.heldOut;
  if (heldOut === undefined) return [];
  mkdirSync(path.join(dir, heldOut.into), { recursive: true });
  for (const file of heldOut.files) copyFileSync(path.join(chapter.dir, file), path.join(dir, heldOut.into, path.basename(file)));
  const build = await buildProject(dir, SELF_CHECK_BUILD);
  if (!build.ok) return [`放进留出测试之后目标编译失败：${describeBuild(build.errors)}`];
  const tests = heldOut.files
    .filter((file) => file.endsWith(".test.ts"))
    .map((file) => compiledTestPath(dir, `${heldOut.into}/${path.basename(file)}`));
  return expectCounts(await runFilesApart(tests), { expect: { pass: heldOut.count, total: heldOut.count } }, "留出测试");
}

// ── 承诺 3、4：目标 ─────────────────────────────────────────────

/** 把某个提交取到一个新目录，并链接依赖。 */
export async function materialise(ctx: SelfCheckContext, commit: string, name: string): Promise<string> {
  const dir = path.join(ctx.workRoot, name);
  mkdirSync(dir, { recursive: true });
  await checkoutTree(ctx.kitRoot, commit, dir);
  linkDependencies(ctx.kitRoot, dir);
  return dir;
}

/**
 * 编译干净的目标的一份副本（连同 dist/ 与依赖的链接）：故障实验与变异要改文件，各用一份自己的，
 * 却不必再从提交取一遍、再全量编译一遍。副本的源文件与编译时一个字节不差时，它也算编译干净。
 * 目标编译不过时照旧取一份新的（检查会报出编译失败）。
 */
export async function builtCopy(ctx: SelfCheckContext, source: string, commit: string, name: string): Promise<string> {
  const build = await buildClean(source);
  if (!build.ok) return materialise(ctx, commit, name);
  const dir = path.join(ctx.workRoot, name);
  rmSync(dir, { recursive: true, force: true });
  cpSync(source, dir, { recursive: true, verbatimSymlinks: true });
  const fingerprint = cleanBuilds.get(source);
  if (fingerprint !== undefined && sourceFingerprint(dir) === fingerprint) cleanBuilds.set(dir, fingerprint);
  return dir;
}

/** 全量编译干净的目录 → 那次编译时 packages/pi-course 源文件的指纹（见 buildClean）。 */
const cleanBuilds = new Map<string, string>();

/** packages/pi-course 里除 dist/、node_modules 外每个文件的路径与内容的哈希。 */
function sourceFingerprint(dir: string): string {
  const hash = createHash("sha1");
  for (const file of filesUnder(dir, COURSE_PACKAGE, { skipDirs: ["dist", "node_modules"] }).sort()) {
    hash.update(`${file}\0`).update(readFileSync(path.join(dir, file))).update("\0");
  }
  return hash.digest("hex");
}

/**
 * 编译目标：同一个目录刚刚全量编译干净、源文件一个字节也没变、dist/ 还在时，不再编译第二遍
 * （承诺 3 编译过的目标，承诺 4 接着在同一个目录里用）。其余情况照常全量编译。
 */
async function buildClean(dir: string): Promise<BuildResult> {
  const before = sourceFingerprint(dir);
  if (cleanBuilds.get(dir) === before && existsSync(path.join(dir, COURSE_PACKAGE, "dist"))) return { ok: true, errors: [], output: "" };
  cleanBuilds.delete(dir);
  const build = await buildProject(dir, SELF_CHECK_BUILD);
  if (build.ok) cleanBuilds.set(dir, before);
  return build;
}

export async function checkTarget(chapter: Chapter, dir: string): Promise<string[]> {
  const build = await buildClean(dir);
  if (!build.ok) return [`目标编译失败：${describeBuild(build.errors)}`];
  const focused = compiledTestPath(dir, chapter.focusedTest.path);
  const count = chapter.focusedTest.count;
  const whole: { run: TestRun; label: string } = { run: { expect: { pass: count, total: count } }, label: "聚焦测试" };
  const runs = [whole, ...chapter.labs.flatMap((lab) => lab.runs.map((run) => ({ run, label: `实践 ${lab.id}` })))];
  const reports = await mapInPool(runs, TEST_RUNS_AT_ONCE, ({ run }) => runTests([focused], patternOf(run)));
  const pace = reports[0]?.pace;
  if (pace !== undefined && reports[0]?.failed === 0) measuredPace.set(chapter.id, pace);
  return runs.flatMap(({ run, label }, index) => expectCounts(reports[index]!, run, label));
}

/** 承诺 3 整个聚焦测试全绿的那次运行的节奏（同一个进程里承诺 10 接着用，不必再量一次）。 */
const measuredPace = new Map<string, RunPace>();

/**
 * 本章目标上聚焦测试的节奏（每条结果隔了多久）：承诺 3 量过就用它，否则在 dir（编译干净的目标）里量一次。
 * 变异后的运行拿它定期限：某项测试的结果比未变异时晚到太多，就当作它挂住了（见 runner.ts 的 paceLimitMs），
 * 不再等到测试自己的时限。
 */
export async function targetPace(chapter: Chapter, dir: string): Promise<RunPace | undefined> {
  const known = measuredPace.get(chapter.id);
  if (known !== undefined) return known;
  const report = await runTests([compiledTestPath(dir, chapter.focusedTest.path)]);
  if (report.failed > 0 || report.pace === undefined) return undefined;
  measuredPace.set(chapter.id, report.pace);
  return report.pace;
}

export async function checkEarlierChapters(ctx: SelfCheckContext, chapter: Chapter, dir: string): Promise<string[]> {
  const earlier = ctx.chapters.filter((other) => other.id < chapter.id);
  if (earlier.length === 0) return [];
  const build = await buildClean(dir);
  if (!build.ok) return [`目标编译失败：${describeBuild(build.errors)}`];
  const report = await runFilesApart(earlier.map((other) => compiledTestPath(dir, other.focusedTest.path)));
  const problems = report.tests.filter((test) => !test.ok).map((test) => `更早章节的测试失败「${test.name}」：${test.message ?? ""}`);
  for (const other of earlier) {
    const ran = report.tests.filter((test) => test.file === compiledTestPath(dir, other.focusedTest.path)).length;
    if (ran !== other.focusedTest.count) problems.push(`第 ${other.id} 章的测试应有 ${other.focusedTest.count} 项，实际运行 ${ran} 项`);
  }
  return problems;
}

export async function checkStep(chapter: Chapter, stepId: string, dir: string): Promise<string[]> {
  const step = chapter.steps.find((candidate) => candidate.id === stepId);
  if (!step) return [`没有步骤 ${stepId}`];
  const build = await buildProject(dir, SELF_CHECK_BUILD);
  if (!build.ok) return [`步骤 ${stepId} 编译失败：${describeBuild(build.errors)}`];
  const focused = compiledTestPath(dir, chapter.focusedTest.path);
  const problems: string[] = [];
  for (const run of step.runs) problems.push(...expectCounts(await runTests([focused], patternOf(run)), run, `步骤 ${stepId}`));
  return problems;
}

// ── 承诺 5：故障实验 ────────────────────────────────────────────

export async function checkFault(chapter: Chapter, dir: string): Promise<string[]> {
  const problems: string[] = [];
  for (const mutation of chapter.fault.mutations) {
    const file = path.join(dir, mutation.file);
    if (!existsSync(file)) {
      problems.push(`故障实验要改的文件 ${mutation.file} 不存在`);
      continue;
    }
    const source = readFileSync(file, "utf8");
    const problem = anchorProblem(source, mutation);
    if (problem !== undefined) {
      problems.push(`故障实验的${problem.message}`);
      continue;
    }
    writeFileSync(file, applyAnchored(source, mutation));
  }
  if (problems.length > 0) return problems;
  // 变异后的代码可以有类型错误；测试照样按编译出的 JS 运行。目录已经编译干净时只重新写出改过的文件
  // （去掉类型，与变异同法）；否则全量编译
  await rebuildChanged(dir, [...new Set(chapter.fault.mutations.map((mutation) => mutation.file))]);
  const report = await runTests([compiledTestPath(dir, chapter.focusedTest.path)]);
  const outcome = report.tests.find((test) => test.name === chapter.fault.test);
  if (!outcome) return [`故障实验点名的测试「${chapter.fault.test}」没有运行`];
  if (outcome.ok) return [`故障实验之后「${chapter.fault.test}」仍然通过`];
  const missing = chapter.fault.includes
    .filter((fragment) => !failureMentions(outcome, fragment))
    .map((fragment) => `「${chapter.fault.test}」失败了，但信息里没有「${fragment}」：${outcome.message ?? ""}`);
  return [...missing, ...faultSetProblems(chapter.fault, report.tests)];
}

/** 课文点名的失败集合必须与真正失败的测试一致：学习者照着课文做，看到的红灯一条不多、一条不少。 */
export function faultSetProblems(fault: FaultExperiment, tests: readonly { name: string; ok: boolean }[]): string[] {
  const named = new Set([fault.test, ...fault.alsoFails]);
  const failing = tests.filter((test) => !test.ok).map((test) => test.name);
  const problems: string[] = [];
  const unnamed = failing.filter((name) => !named.has(name));
  if (unnamed.length > 0) problems.push(`故障实验还弄红了课文没有点名的测试（写进 fault.alsoFails 和课文）：${unnamed.map((name) => `「${name}」`).join("、")}`);
  const passing = [...named].filter((name) => name !== fault.test && !failing.includes(name));
  if (passing.length > 0) problems.push(`fault.alsoFails 点名的测试并没有失败：${passing.map((name) => `「${name}」`).join("、")}`);
  return problems;
}

// ── 承诺 9：从目标的实践区域切出脚手架 ──────────────────────────

/**
 * 起点 + 聚焦测试 + 切掉区域的教学文件：必须能编译，并且红在第一个实践的“尚未实现”；
 * 然后按实践顺序一个个填回区域，每填回一个，那个实践的运行就按声明的计数变绿。
 * 本章目标里没有区域时这条承诺不适用。
 */
export async function checkRegions(ctx: SelfCheckContext, chapter: Chapter, name = `regions-${chapter.id}`): Promise<string[]> {
  const commits = ctx.history.chapters[chapter.id];
  if (!commits) return [`课程历史里没有第 ${chapter.id} 章`];
  const sources = await targetTeachingFiles(ctx.kitRoot, chapter, ctx.history);
  const parents = await parentTeachingFiles(ctx.kitRoot, chapter, ctx.history);
  let marked: string[];
  try {
    marked = cutStarter(chapter, sources, undefined, parents).labs;
  } catch (error) {
    return [(error as Error).message];
  }
  if (marked.length === 0) {
    return chapter.placeholders.length > 0 ? ["声明了 placeholders，目标的教学文件里却没有本章的实践区域"] : [];
  }
  const unmarked = chapter.labs.filter((lab) => !marked.includes(lab.id));
  if (unmarked.length > 0) return unmarked.map((lab) => `实践 ${lab.id} 在目标的教学文件里没有区域：练习目录里它无事可做`);

  const dir = await materialise(ctx, commits.parent, name);
  writeProjectFile(dir, chapter.focusedTest.path, await readCommittedFile(ctx.kitRoot, commits.target, chapter.focusedTest.path));
  const focused = compiledTestPath(dir, chapter.focusedTest.path);
  const problems: string[] = [];
  for (let filled = 0; filled <= chapter.labs.length; filled++) {
    const unfinished = new Set(chapter.labs.slice(filled).map((lab) => lab.id));
    for (const [file, content] of cutStarter(chapter, sources, unfinished, parents).files) writeProjectFile(dir, file, content);
    const lab = chapter.labs[filled - 1];
    const stage = lab === undefined ? "切出的脚手架" : `填回实践 ${lab.id} 之后`;
    // 每一轮只是改写几个教学文件（从不删除）：增量编译
    const build = await buildProject(dir, { ...SELF_CHECK_BUILD, incremental: buildInfoPath(dir) });
    if (!build.ok && !declaredExtendErrors(chapter, build, unfinished, sources)) return [...problems, `${stage}编译失败：${describeBuild(build.errors)}`];
    if (lab !== undefined) {
      const reports = await mapInPool(lab.runs, TEST_RUNS_AT_ONCE, (run) => runTests([focused], patternOf(run)));
      lab.runs.forEach((run, index) => problems.push(...expectCounts(reports[index]!, run, stage)));
      continue;
    }
    const first = chapter.labs[0];
    if (first === undefined) continue;
    // 第一个实践只扩展更早的代码时，脚手架里是起点原来的代码：它的测试照样要红，只是不会红在“尚未实现”
    const extendsOnly = onlyExtends(first.id, sources);
    const wanted = `Lab ${first.id} 尚未实现`;
    for (const run of first.runs) {
      const report = await runTests([focused], patternOf(run));
      if (report.tests.length === 0) problems.push(`${stage}：实践 ${first.id} 的运行没有选中任何测试`);
      if (extendsOnly) {
        if (report.tests.length > 0 && report.tests.every((outcome) => outcome.ok)) problems.push(`${stage}里实践 ${first.id} 的测试全都通过了：起点的代码不该已经满足本章的规则`);
        continue;
      }
      for (const outcome of report.tests) {
        if (outcome.ok) problems.push(`${stage}里「${outcome.name}」已经通过，应当红在 ${wanted}`);
        else if (!failureMentions(outcome, wanted)) problems.push(`${stage}里「${outcome.name}」没有红在 ${wanted}：${outcome.message ?? ""}`);
      }
    }
  }
  return problems;
}

/**
 * 扩展区域在练习目录里换回起点的代码。本章加宽了起点穷尽处理的联合类型（例如 SessionEntry 多了两种条目）时，
 * 换回的代码过不了 tsc：那是起点的 never 在指出要扩展的地方，也就是本章声明的第一次红灯（firstRed.kind 为 tsc）。
 * 还有这样的扩展区域没填回时，只容许这些声明过的错误；tsc 照样写出 JS，测试照跑。
 */
function declaredExtendErrors(chapter: Chapter, build: BuildResult, unfinished: ReadonlySet<string>, sources: ReadonlyMap<string, string>): boolean {
  const red = chapter.firstRed;
  if (red.kind !== "tsc" || build.errors.length === 0) return false;
  const pending = [...sources].some(([file, source]) => findRegions(source, file).some((region) => region.extend && unfinished.has(region.lab)));
  return (
    pending &&
    build.errors.every((error) => red.errors.some((expected) => expected.code === error.code && expected.file === error.file && error.message.includes(expected.includes)))
  );
}

/** 这个实践的区域全是扩展区域（练习目录里是起点的代码，没有“尚未实现”）。 */
function onlyExtends(lab: string, sources: ReadonlyMap<string, string>): boolean {
  const regions = [...sources].flatMap(([file, source]) => findRegions(source, file)).filter((region) => region.lab === lab);
  return regions.length > 0 && regions.every((region) => region.extend);
}

/** 自检增量编译的 .tsbuildinfo：在项目目录里、dist/ 之外（见 runner.ts 的 BuildOptions.incremental）。 */
function buildInfoPath(dir: string): string {
  return path.join(dir, ".selfcheck.tsbuildinfo");
}

function writeProjectFile(root: string, file: string, content: string): void {
  const target = path.join(root, file);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, content);
}

// ── 承诺 10：变异测试 ───────────────────────────────────────────

/** 变异之后测试可能一直等下去（例如流永远不结束）：等这么久还没有结果，就按失败算。 */
const MUTANT_TIMEOUT_MS = 15_000;

/**
 * 在目标代码上逐条施加 chapter.json 的 mutations：每条都破坏课文说出的一条规则，
 * 聚焦测试必须因此变红；一条变异活下来，说明那条规则没有被测试守住。每条做完都改回原样。
 */
export async function checkMutations(chapter: Chapter, dir: string): Promise<string[]> {
  if (chapter.mutations.length === 0) return ["chapter.json 没有列出 mutations：课文说出的每条规则都要有一条让聚焦测试变红的变异"];
  // 目标已经编译干净（承诺 3 刚编译过就不再编译）。每条变异只改一个 .ts 文件，所以不再跑 tsc：
  // 把这一个文件单独转成 JS，换掉 dist 里它的 .js，测完换回原来的字节。变异后的代码可以有类型错误，
  // 测试本来就按编译出的 JS 运行；转换只是去掉类型，与 tsc 写出的 JS 行为相同（目标是 es2022，没有装饰器）。
  const build = await buildClean(dir);
  if (!build.ok) return [`目标编译失败：${describeBuild(build.errors)}`];
  const pace = await targetPace(chapter, dir);
  // 几条变异同时检验，每个工作者在自己的目录副本里改文件，互不干扰；结果按变异的顺序报告
  const dirs = workerDirs(dir, Math.min(TEST_RUNS_AT_ONCE, chapter.mutations.length));
  const indexed = [...chapter.mutations.entries()];
  const problems = await mapInPool(indexed, dirs.length, ([index, mutation], worker) =>
    checkMutation(chapter, dirs[worker] ?? dir, mutation, `变异 ${index + 1}（${mutation.rule}）`, pace),
  );
  return problems.filter((problem): problem is string => problem !== undefined);
}

/**
 * 同时检验几条变异时每个工作者的目录：dir 本身，加上 dir-2、dir-3 … 几份副本（连同 dist/ 与依赖的链接）。
 * 承诺 10、course mutants 与 course caught-by 共用。
 */
export function workerDirs(dir: string, workers: number): string[] {
  const dirs = [dir];
  for (let worker = 1; worker < workers; worker++) {
    const copy = `${dir}-${worker + 1}`;
    cpSync(dir, copy, { recursive: true, verbatimSymlinks: true });
    dirs.push(copy);
  }
  return dirs;
}

async function checkMutation(chapter: Chapter, dir: string, mutation: RuleMutation, label: string, pace?: RunPace): Promise<string | undefined> {
  const verdict = await judgeMutant(chapter, dir, mutation, label, pace);
  if (verdict.kind === "problem") return verdict.problem;
  if (verdict.kind === "survived") return `${label}之后聚焦测试仍然 ${verdict.passed}/${verdict.total} 全绿：没有测试守住这条规则`;
  return undefined;
}

export type MutantVerdict = { kind: "killed"; by?: string } | { kind: "survived"; passed: number; total: number } | { kind: "problem"; problem: string };

/**
 * 施加一处替换（目标已经编译干净），看聚焦测试能不能抓住它；测完文件与 dist 都换回原样。
 * 供承诺 10 与作者的 `course mutants` 共用。
 */
export async function judgeMutant(chapter: Chapter, dir: string, mutation: Mutation & Pick<RuleMutation, "caughtBy">, label: string, pace?: RunPace): Promise<MutantVerdict> {
  const focused = compiledTestPath(dir, chapter.focusedTest.path);
  let verdict: MutantVerdict = { kind: "killed" };
  const problem = await withReplacement(dir, mutation, label, async (mutated) => {
    const emitted = compiledTestPath(dir, mutation.file);
    if (!mutation.file.endsWith(".ts") || !existsSync(emitted)) return `${label}要改的 ${mutation.file} 不是编译进 dist 的 .ts 文件`;
    const original = readFileSync(emitted);
    let emittedJs: string;
    try {
      emittedJs = await stripTypes(mutated, mutation.file);
    } catch (error) {
      return `${label}之后 ${mutation.file} 不再是合法的 TypeScript：${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
    }
    writeFileSync(emitted, emittedJs);
    try {
      // 只问还是不是全绿：第一项失败就足以判定这条变异被抓住，不再等其余测试和挂住的测试进程。
      // 先只跑改动所在文件的那几个实践的测试（多半就是它们守着这条规则，不必先等别的实践里慢的测试）；
      // 它们全绿时再跑整个文件，结论与只跑整个文件相同（承诺 3 已确认每个实践单独运行时全绿）。
      const owners = ownerPattern(chapter, mutation.file);
      const { caughtBy } = mutation;
      const run = (pattern?: string) =>
        runTests([focused], {
          timeoutMs: MUTANT_TIMEOUT_MS,
          stopAtFirstFailure: true,
          ...(pace === undefined ? {} : { pace }),
          ...(pattern === undefined ? {} : { pattern }),
        });
      const caught = (report: TestReport): boolean => {
        if (!hasFailure(report)) return false;
        // 记下抓住它的那项测试（course caught-by 写进 chapter.json）；文件一级的失败（挂住、加载失败）不算某一项
        const by = report.tests.find((test) => !test.ok && test.name !== focused)?.name;
        verdict = by === undefined ? { kind: "killed" } : { kind: "killed", by };
        return true;
      };
      // chapter.json 写明了哪项测试抓住它：先单独跑那一项，它变红就够了（结论与跑整个文件相同）
      if (caughtBy !== undefined && caught(await run(exactNames([caughtBy])))) return undefined;
      if (owners !== undefined && caught(await run(owners))) return undefined;
      const report = await run();
      if (report.tests.length > 0 && !caught(report)) verdict = { kind: "survived", passed: report.passed, total: report.tests.length };
      return undefined;
    } finally {
      writeFileSync(emitted, original);
    }
  });
  return problem === undefined ? verdict : { kind: "problem", problem };
}

/** 目标目录编译干净（承诺 3 已编译过就直接用），供作者工具在同一目录上连续检验多条变异。 */
export async function prepareMutantDir(dir: string): Promise<string[]> {
  const build = await buildClean(dir);
  return build.ok ? [] : [`目标编译失败：${describeBuild(build.errors)}`];
}

/** 哪几个实践的 files 里有这个文件：它们各自的测试（第一个 run 的 pattern）合成一个；有一个实践不按 pattern 选测试就是 undefined。 */
function ownerPattern(chapter: Chapter, file: string): string | undefined {
  const patterns = chapter.labs.filter((lab) => lab.files.includes(file)).map((lab) => lab.runs[0]?.pattern);
  if (patterns.length === 0 || patterns.some((pattern) => pattern === undefined)) return undefined;
  return patterns.map((pattern) => `(?:${pattern})`).join("|");
}

/** 有测试失败（或文件没能运行，那也记作一项失败）。 */
function hasFailure(report: TestReport): boolean {
  return report.passed < report.tests.length;
}

/**
 * 在编译干净的目录里改了这几个 .ts 文件之后：只把它们去掉类型写进 dist/（与 tsc 写出的 JS 行为相同），
 * 目录从此不再算编译干净。不是编译干净的目录、或改的不是编译进 dist 的 .ts 文件时，全量编译。
 */
async function rebuildChanged(dir: string, files: readonly string[]): Promise<void> {
  const emitted = files.map((file) => compiledTestPath(dir, file));
  const clean = cleanBuilds.has(dir) && files.every((file, index) => file.endsWith(".ts") && existsSync(emitted[index]!));
  cleanBuilds.delete(dir);
  if (!clean) {
    await buildProject(dir, SELF_CHECK_BUILD);
    return;
  }
  for (const [index, file] of files.entries()) writeFileSync(emitted[index]!, await stripTypes(readFileSync(path.join(dir, file), "utf8"), file));
}

/** 一个 TypeScript 文件去掉类型后的 JS（ES 模块，es2022）。变异用它代替一次 tsc。 */
async function stripTypes(source: string, file: string): Promise<string> {
  const { transform } = await import("esbuild");
  const result = await transform(source, { loader: "ts", format: "esm", target: "es2022", sourcefile: file });
  return result.code;
}

/**
 * 编译失败用例：课文说“漏掉这一步过不了 tsc”，就真的把那一步漏掉编译一次。
 * 替换之后必须在那个文件里出现声明的错误码；编译通过，或者错误出在别处，都说明这道类型关卡不在。
 */
export async function checkCompileFails(chapter: Chapter, dir: string): Promise<string[]> {
  const problems: string[] = [];
  for (const [index, mutation] of chapter.compileFails.entries()) {
    const label = `编译失败用例 ${index + 1}（${mutation.rule}）`;
    const problem = await withReplacement(dir, mutation, label, async () => {
      const build = await buildProject(dir, SELF_CHECK_BUILD);
      const wanted = build.errors.filter((error) => error.code === mutation.code && error.file === mutation.file);
      if (build.ok) return `${label}之后 tsc 仍然编译通过，应当报 ${mutation.code}`;
      if (wanted.length === 0) return `${label}之后 tsc 没有在 ${mutation.file} 报 ${mutation.code}：${describeBuild(build.errors)}`;
      return undefined;
    });
    if (problem !== undefined) problems.push(problem);
  }
  return problems;
}

/**
 * 在 dir 里对一个文件做一次精确替换（原文必须恰好出现一次），跑完 check 一定改回原样。
 * 返回问题的说明；替换做不成时说明原因，check 不运行。
 */
async function withReplacement(
  dir: string,
  replacement: Anchored,
  label: string,
  check: (replaced: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const file = path.join(dir, replacement.file);
  if (!existsSync(file)) return `${label}要改的文件 ${replacement.file} 不存在`;
  const original = readFileSync(file, "utf8");
  const problem = anchorProblem(original, replacement);
  if (problem !== undefined) return `${label}的${problem.message}`;
  const replaced = applyAnchored(original, replacement);
  writeFileSync(file, replaced);
  try {
    return await check(replaced);
  } finally {
    writeFileSync(file, original);
  }
}

// ── 承诺 7：课文 ────────────────────────────────────────────────

export function checkLesson(ctx: Pick<SelfCheckContext, "kitRoot" | "chapters">, chapter: Chapter): string[] {
  const scripts = Object.keys(
    (JSON.parse(readFileSync(path.join(ctx.kitRoot, "package.json"), "utf8")) as { scripts?: Record<string, string> }).scripts ?? {},
  );
  const lesson = readFileSync(chapter.lessonPath, "utf8");
  const problems = lintLesson(lesson, chapter, ctx.chapters, scripts);
  if (!lesson.includes(focusedGlob(chapter))) {
    problems.push(`课文里没有聚焦运行命令（${focusedGlob(chapter)}）`);
  }
  const testPath = path.join(ctx.kitRoot, chapter.focusedTest.path);
  for (const wording of unstatedWording(lesson, readFileSync(testPath, "utf8"), testPath)) {
    problems.push(`${chapter.focusedTest.path}:${wording.line} 比对的措辞「${wording.fragment}」课文里没有写出：在实践一节的消息表里写出原文，或者让测试比对 code / 形状`);
  }
  return problems;
}

// ── 共用 ────────────────────────────────────────────────────────

/**
 * 同一份编译结果上互不相干的测试运行（各实践的 pattern、各条变异）两个一起跑：章节测试有不少时间在等
 * 计时器和子进程，挂住的变异更是一直在等自己的时限，两个一起跑几乎不多花 CPU。
 */
const TEST_RUNS_AT_ONCE = 2;

/** 自检里的每次编译都单线程检查（见 runner 的 BuildOptions.singleThreaded）：它总和测试、别的编译一起抢 CPU。 */
const SELF_CHECK_BUILD = { singleThreaded: true } as const;

function patternOf(run: TestRun): { pattern?: string } {
  return run.pattern === undefined ? {} : { pattern: run.pattern };
}

function expectCounts(report: TestReport, run: TestRun, label: string): string[] {
  const total = report.tests.length;
  const selector = run.pattern === undefined ? "" : `（--test-name-pattern="${run.pattern}"）`;
  const problems: string[] = [];
  if (total !== run.expect.total || report.passed !== run.expect.pass) {
    problems.push(`${label}${selector}应为 ${run.expect.pass}/${run.expect.total}，实际 ${report.passed}/${total}`);
    for (const test of report.tests.filter((outcome) => !outcome.ok)) problems.push(`  ✗ ${test.name}：${test.message ?? ""}`);
  }
  return problems;
}

function describeBuild(errors: readonly { file: string; line: number; code: string; message: string }[]): string {
  if (errors.length === 0) return "tsc 以非零状态退出";
  return errors.slice(0, 3).map((error) => `${error.code} ${error.file}:${error.line} ${error.message}`).join("；");
}


