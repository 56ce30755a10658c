import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

import { CourseError, usageError } from "./errors.js";
import { SYLLABUS } from "./syllabus.js";

/** 一次聚焦运行的期望：按名称过滤（可选）后，通过数 / 选中数。 */
export interface TestRun {
  /** 传给 --test-name-pattern 的正则；省略表示运行整个聚焦测试文件。 */
  pattern?: string;
  expect: { pass: number; total: number };
}

/** 四级提示，顺序固定：定位文件 → 指出签名 → 伪代码 → 局部代码。 */
export interface HintLadder {
  file: string;
  signature: string;
  pseudocode: string;
  code: string;
}
export const HINT_LEVELS = ["file", "signature", "pseudocode", "code"] as const;
export const HINT_LEVEL_NAMES: Record<(typeof HINT_LEVELS)[number], string> = {
  file: "定位文件",
  signature: "指出签名",
  pseudocode: "伪代码",
  code: "局部代码",
};

export interface Lab {
  id: string;
  title: string;
  goal: string;
  files: string[];
  actions: string[];
  runs: TestRun[];
  hints: HintLadder;
}

export interface TscErrorExpectation {
  code: string;
  file: string;
  /** 错误文字里必须出现的片段（通常是缺失的名字或模块）。 */
  includes: string;
}

export interface FailureExpectation {
  /** 失败测试的完整名称。 */
  test: string;
  /** 失败信息里必须出现的片段。 */
  includes: string;
}

/** 练习目录第一次运行时应当看到的红灯。 */
export type FirstRed =
  | { kind: "tsc"; summary: string; errors: TscErrorExpectation[] }
  | { kind: "test"; summary: string; failures: FailureExpectation[] }
  | { kind: "none"; summary: string };

export interface Mutation {
  file: string;
  /** 目标代码中恰好出现一次的原文（给了 region 时：在那个实践的区域里恰好一次）。 */
  find: string;
  replace: string;
  /**
   * 原文所在的实践区域（例如 "10.2"）：只在这个实践的区域里找原文，文件别处的改动碰不到这处锚点。
   * 省略时在整个文件里找。
   */
  region?: string;
}

/** 变异测试的一条：破坏课文说出的一条规则，聚焦测试必须因此变红。 */
export interface RuleMutation extends Mutation {
  /** 被破坏的规则，用课文里的说法。 */
  rule: string;
  /**
   * 抓住这条变异的测试的完整名称（npm run course -- caught-by 写进来）：它写明哪项测试守着这条规则，
   * 自检也先单独跑它——它变红就已经判定，不必等聚焦测试里排在它前面的测试。它没变红时照常跑整个文件。
   */
  caughtBy?: string;
}

/** 编译失败用例：施加这处替换之后 tsc 必须报出 code 这个错误（例如穷尽检查挡住漏处理的新角色）。 */
export interface CompileFail extends RuleMutation {
  /** tsc 的错误码，例如 TS2322；错误必须出现在 file 里。 */
  code: string;
}

/** 练习目录里某个区域的占位代码（默认是那句“尚未实现”）。 */
export interface StarterPlaceholder {
  file: string;
  lab: string;
  /** 区域内容里的一段原文：同一实践在同一文件里有几个区域时，用它指认是哪一个。 */
  match: string;
  /** 占位代码，一行一项，按区域标记的缩进写入。 */
  code: string[];
}

export interface FaultExperiment {
  title: string;
  mutations: Mutation[];
  /** 应当失败的测试的完整名称（失败信息按 includes 核对的那一条）。 */
  test: string;
  /** 同一处破坏还会弄红的其他测试：课文点名的失败集合 = [test, ...alsoFails]，一条不多、一条不少。 */
  alsoFails: string[];
  /** 失败信息（或断言的 actual / expected）里必须出现的片段。 */
  includes: string[];
}

/** 章节内部的中间提交，例如实践 3.1 完成时的状态。 */
export interface Step {
  id: string;
  title: string;
  /** 相对章节目录的补丁路径：从本章起点到这一步的差异。 */
  patch: string;
  runs: TestRun[];
}

/** 停靠点：做完某个实践后可以放心离开，下次从下一个实践接着做。 */
export interface Stop {
  /** 在这个实践之后停下（不能是本章最后一个实践）。 */
  after: string;
  /** 为什么这里适合停：前后两段各做了什么。 */
  note: string;
}

/**
 * 留出测试（DESIGN §4.8，毕业章用）：只在套件的自检里、在本章目标上运行，从不进练习目录，
 * 所以学习者照着看得见的测试写死答案也过不了它们。文件放在章节目录里，不进课程历史。
 */
export interface HeldOut {
  /** 相对章节目录的文件，都在 heldout/ 下：测试（*.test.ts）和它们用到的任务。 */
  files: string[];
  /** 自检把这些文件复制到目标项目的哪个目录，例如 packages/pi-course/test/heldout。 */
  into: string;
  /** 这些测试一共几项，必须全部通过。 */
  count: number;
}

export type Mode = "观察" | "重建";
export type Difficulty = "入门" | "基础" | "核心" | "进阶";

export interface ChapterMeta {
  id: string;
  slug: string;
  title: string;
  summary: string;
  minutes: number;
  difficulty: Difficulty;
  artifacts: string[];
  prerequisites: string[];
  mode: Mode;
  teachingFiles: string[];
  focusedTest: { path: string; count: number };
  firstRed: FirstRed;
  labs: Lab[];
  fault: FaultExperiment;
  /** 变异测试（DESIGN §4.10）：每条都必须让聚焦测试变红。 */
  mutations: RuleMutation[];
  /** 编译失败用例：课文说“这样写过不了 tsc”的地方，自检真的去编译一次。 */
  compileFails: CompileFail[];
  /** `course mutants` 生成的变异里，作者判定与原代码等价的那些（各带理由），不计入变异得分。 */
  equivalentMutants: EquivalentMutant[];
  /** 从目标切出练习目录时，不用默认“尚未实现”的区域。 */
  placeholders: StarterPlaceholder[];
  acceptance: string[];
  steps: Step[];
  stops: Stop[];
  /** 留出测试；只有毕业章有。 */
  heldOut?: HeldOut;
}

export interface Chapter extends ChapterMeta {
  /** lessons/ 下的目录名，例如 03-message-ir。 */
  dirName: string;
  dir: string;
  lessonPath: string;
  patchPath: string;
}

export const METADATA_FILE = "chapter.json";
export const LESSON_FILE = "lesson.md";

/**
 * 课文“不在”的地方。自检里不读课文的检查（见 contract.ts 的 readsLesson），以及设了 HIDE_LESSONS_ENV 的进程，
 * 看到的 lessonPath 都指向这里：真去读就因找不到文件而失败，不会悄悄读到课文。
 */
export const LESSON_NOT_AN_INPUT = path.join(path.sep, "nonexistent", "lesson-is-not-an-input-here", LESSON_FILE);
/**
 * 值为 1 时，这个进程（和继承它环境的子进程）里 loadChapters 给的 lessonPath 都是 LESSON_NOT_AN_INPUT。
 * npm test 让不读课文的套件测试这样运行：它们的结果因此与课文无关，改课文不必重跑（见 scripts/ci/kit-file-cache.mjs）。
 * 值是一个套件的根目录时，只藏这个套件自己 lessons/ 下的课文：只读克隆里的课文的测试这样运行，
 * 克隆取的是已提交的 HEAD，它已经在缓存键里，工作区里没提交的课文改动与它们无关。
 */
export const HIDE_LESSONS_ENV = "PI_COURSE_HIDE_LESSONS";

/** 这一章的课文在这个进程里是否看不到（见 HIDE_LESSONS_ENV）。 */
export function lessonHidden(chapterDir: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const hidden = env[HIDE_LESSONS_ENV];
  if (hidden === undefined || hidden === "") return false;
  if (hidden === "1") return true;
  return path.dirname(path.resolve(chapterDir)) === path.join(path.resolve(hidden), "lessons");
}
export const PATCH_FILE = "chapter.patch";

const DIR_PATTERN = /^(\d{2})-([a-z0-9]+(?:-[a-z0-9]+)*)$/;

/** 读取 lessons/ 下的全部章节，按编号排序并逐字段校验。 */
export function loadChapters(lessonsDir: string): Chapter[] {
  if (!existsSync(lessonsDir)) {
    throw new CourseError("LESSONS_MISSING", `找不到课程目录 ${lessonsDir}`);
  }
  const dirs = readdirSync(lessonsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && DIR_PATTERN.test(entry.name))
    .map((entry) => entry.name)
    .sort();
  dirs.forEach((name, index) => {
    const expected = String(index).padStart(2, "0");
    if (!name.startsWith(`${expected}-`)) {
      throw new CourseError("CHAPTER_INVALID", `lessons/${name}：章节编号不连续，这里应当是第 ${expected} 章`);
    }
  });
  const chapters = dirs.map((name) => loadChapter(path.join(lessonsDir, name)));
  checkPrerequisites(chapters);
  return chapters;
}

function loadChapter(dir: string): Chapter {
  const dirName = path.basename(dir);
  const [, id, slug] = DIR_PATTERN.exec(dirName) ?? [];
  const metaPath = path.join(dir, METADATA_FILE);
  const where = path.join("lessons", dirName, METADATA_FILE);
  if (!existsSync(metaPath)) {
    throw new CourseError("CHAPTER_INVALID", `${where}：文件不存在`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(metaPath, "utf8"));
  } catch (error) {
    throw new CourseError("CHAPTER_INVALID", `${where}：不是合法的 JSON（${(error as Error).message}）`);
  }
  const meta = parseMeta(raw, new Reader(where));
  if (meta.id !== id) fail(where, "id", `应当与目录编号 ${id} 一致，实际是 ${meta.id}`);
  if (meta.slug !== slug) fail(where, "slug", `应当与目录名 ${slug} 一致，实际是 ${meta.slug}`);

  const chapter: Chapter = {
    ...meta,
    dirName,
    dir,
    lessonPath: lessonHidden(dir) ? LESSON_NOT_AN_INPUT : path.join(dir, LESSON_FILE),
    patchPath: path.join(dir, PATCH_FILE),
  };
  for (const file of [LESSON_FILE, PATCH_FILE, ...meta.steps.map((step) => step.patch), ...(meta.heldOut?.files ?? [])]) {
    if (!existsSync(path.join(dir, file))) {
      throw new CourseError("CHAPTER_INVALID", `${path.join("lessons", dirName, file)}：文件不存在`);
    }
  }
  return chapter;
}

function checkPrerequisites(chapters: Chapter[]): void {
  for (const chapter of chapters) {
    for (const prerequisite of chapter.prerequisites) {
      if (!(prerequisite < chapter.id)) {
        fail(`lessons/${chapter.dirName}/${METADATA_FILE}`, "prerequisites", `${prerequisite} 不是更早的章节`);
      }
    }
  }
}

/** 接受 3、03、message-ir、03-message-ir；认不出时列出全部合法章节。 */
export function findChapter(chapters: readonly Chapter[], input: string | undefined): Chapter {
  const wanted = (input ?? "").trim();
  if (wanted === "") {
    throw usageError("CHAPTER_REQUIRED", `请指定章节，例如 03。可选章节：${listIds(chapters)}`);
  }
  const asNumber = /^\d{1,2}$/.test(wanted) ? wanted.padStart(2, "0") : undefined;
  const found = chapters.find(
    (chapter) => chapter.id === asNumber || chapter.slug === wanted || chapter.dirName === wanted,
  );
  if (!found) {
    const planned = SYLLABUS.flatMap((part) => part.chapters).find((plan) => plan.id === asNumber || plan.slug === wanted);
    if (planned) {
      throw usageError(
        "CHAPTER_PLANNED",
        `第 ${planned.id} 章（${planned.slug}：${planned.builds}）已在大纲里，还没有写好、尚未开放。现在可学的章节：${listIds(chapters)}`,
      );
    }
    throw usageError("CHAPTER_UNKNOWN", `没有第 “${wanted}” 章。可选章节：${listIds(chapters)}`);
  }
  return found;
}

function listIds(chapters: readonly Chapter[]): string {
  return chapters.map((chapter) => `${chapter.id} ${chapter.slug}`).join("、");
}

// ── 元数据校验 ──────────────────────────────────────────────────

function fail(where: string, field: string, problem: string): never {
  throw new CourseError("CHAPTER_INVALID", `${where}：字段 ${field} ${problem}`);
}

/** 带着“文件 + 字段路径”读取未知 JSON，出错时一句话指出位置。 */
class Reader {
  constructor(private readonly where: string) {}

  fail(field: string, problem: string): never {
    return fail(this.where, field, problem);
  }

  object(value: unknown, field: string): Record<string, unknown> {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.fail(field, "应当是对象");
    }
    return value as Record<string, unknown>;
  }

  string(value: unknown, field: string): string {
    if (typeof value !== "string" || value.trim() === "") this.fail(field, "应当是非空字符串");
    return value;
  }

  optionalString(value: unknown, field: string): string | undefined {
    return value === undefined ? undefined : this.string(value, field);
  }

  count(value: unknown, field: string): number {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
      this.fail(field, "应当是非负整数");
    }
    return value;
  }

  strings(value: unknown, field: string, { nonEmpty = false } = {}): string[] {
    if (!Array.isArray(value)) this.fail(field, "应当是字符串数组");
    if (nonEmpty && value.length === 0) this.fail(field, "不能为空");
    return value.map((item, index) => this.string(item, `${field}[${index}]`));
  }

  array<T>(value: unknown, field: string, item: (value: unknown, field: string) => T): T[] {
    if (!Array.isArray(value)) this.fail(field, "应当是数组");
    return value.map((entry, index) => item(entry, `${field}[${index}]`));
  }

  oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
    if (!allowed.includes(value as T)) this.fail(field, `应当是 ${allowed.join(" / ")} 之一`);
    return value as T;
  }
}

function parseMeta(raw: unknown, r: Reader): ChapterMeta {
  const o = r.object(raw, "(根)");
  const labs = r.array(o.labs, "labs", (value, field) => parseLab(value, field, r));
  if (labs.length === 0) r.fail("labs", "至少需要一个实践");
  const mode = r.oneOf(o.mode, "mode", ["观察", "重建"] as const);
  const firstRed = parseFirstRed(o.firstRed, r);
  if (mode === "重建" && firstRed.kind === "none") r.fail("firstRed.kind", "重建章必须声明第一次红灯");
  const meta: ChapterMeta = {
    id: r.string(o.id, "id"),
    slug: r.string(o.slug, "slug"),
    title: r.string(o.title, "title"),
    summary: r.string(o.summary, "summary"),
    minutes: r.count(o.minutes, "minutes"),
    difficulty: r.oneOf(o.difficulty, "difficulty", ["入门", "基础", "核心", "进阶"] as const),
    artifacts: r.strings(o.artifacts, "artifacts", { nonEmpty: true }),
    prerequisites: r.strings(o.prerequisites, "prerequisites"),
    mode,
    teachingFiles: r.strings(o.teachingFiles, "teachingFiles", { nonEmpty: true }),
    focusedTest: parseFocusedTest(o.focusedTest, r),
    firstRed,
    labs,
    fault: parseFault(o.fault, r),
    mutations: o.mutations === undefined ? [] : r.array(o.mutations, "mutations", (value, field) => parseRuleMutation(value, field, r)),
    compileFails:
      o.compileFails === undefined ? [] : r.array(o.compileFails, "compileFails", (value, field) => parseCompileFail(value, field, r)),
    equivalentMutants:
      o.equivalentMutants === undefined ? [] : r.array(o.equivalentMutants, "equivalentMutants", (value, field) => parseEquivalent(value, field, r)),
    placeholders:
      o.placeholders === undefined ? [] : r.array(o.placeholders, "placeholders", (value, field) => parsePlaceholder(value, field, r)),
    acceptance: r.strings(o.acceptance, "acceptance", { nonEmpty: true }),
    steps: o.steps === undefined ? [] : r.array(o.steps, "steps", (value, field) => parseStep(value, field, r)),
    stops: o.stops === undefined ? [] : parseStops(o.stops, labs, r),
  };
  if (o.heldOut !== undefined) meta.heldOut = parseHeldOut(o.heldOut, r);
  meta.placeholders.forEach((placeholder, index) => {
    if (!labs.some((lab) => lab.id === placeholder.lab)) r.fail(`placeholders[${index}].lab`, `${placeholder.lab} 不是本章的实践`);
    if (!meta.teachingFiles.includes(placeholder.file)) r.fail(`placeholders[${index}].file`, `${placeholder.file} 不是本章的教学文件`);
  });
  return meta;
}

/** 停靠点只能落在两个实践之间，每个实践之后最多一个。 */
function parseStops(value: unknown, labs: readonly Lab[], r: Reader): Stop[] {
  const ids = labs.map((lab) => lab.id);
  const seen = new Set<string>();
  return r.array(value, "stops", (item, field) => {
    const o = r.object(item, field);
    const after = r.string(o.after, `${field}.after`);
    const at = ids.indexOf(after);
    if (at < 0) r.fail(`${field}.after`, `应当是本章的实践编号（${ids.join("、")}），实际是 ${after}`);
    if (at === ids.length - 1) r.fail(`${field}.after`, `不能是最后一个实践 ${after}：做完它本章就结束了`);
    if (seen.has(after)) r.fail(`${field}.after`, `重复：实践 ${after} 之后已经有一个停靠点`);
    seen.add(after);
    return { after, note: r.string(o.note, `${field}.note`) };
  });
}

function parseHeldOut(value: unknown, r: Reader): HeldOut {
  const o = r.object(value, "heldOut");
  const files = r.strings(o.files, "heldOut.files", { nonEmpty: true });
  files.forEach((file, index) => {
    if (!/^heldout\/[^/]+\.ts$/.test(file)) r.fail(`heldOut.files[${index}]`, "应当形如 heldout/名字.ts（直接放在章节的 heldout/ 目录里）");
  });
  if (!files.some((file) => file.endsWith(".test.ts"))) r.fail("heldOut.files", "至少要有一个 *.test.ts");
  const into = r.string(o.into, "heldOut.into");
  if (!/^packages\/pi-course\/test\/[a-z0-9-]+$/.test(into)) r.fail("heldOut.into", "应当形如 packages/pi-course/test/heldout（测试目录下单独的一层）");
  const count = r.count(o.count, "heldOut.count");
  if (count === 0) r.fail("heldOut.count", "至少要有一项测试");
  return { files, into, count };
}

function parseFocusedTest(value: unknown, r: Reader): ChapterMeta["focusedTest"] {
  const o = r.object(value, "focusedTest");
  const testPath = r.string(o.path, "focusedTest.path");
  if (!/^packages\/pi-course\/test\/\d{2}-[a-z0-9-]+\.test\.ts$/.test(testPath)) {
    r.fail("focusedTest.path", "应当形如 packages/pi-course/test/NN-slug.test.ts");
  }
  const count = r.count(o.count, "focusedTest.count");
  if (count === 0) r.fail("focusedTest.count", "至少要有一项测试");
  return { path: testPath, count };
}

function parseRun(value: unknown, field: string, r: Reader): TestRun {
  const o = r.object(value, field);
  const pattern = r.optionalString(o.pattern, `${field}.pattern`);
  if (pattern !== undefined) {
    try {
      new RegExp(pattern);
    } catch {
      r.fail(`${field}.pattern`, "不是合法的正则表达式");
    }
  }
  const expect = r.object(o.expect, `${field}.expect`);
  const run: TestRun = {
    expect: { pass: r.count(expect.pass, `${field}.expect.pass`), total: r.count(expect.total, `${field}.expect.total`) },
  };
  if (run.expect.pass > run.expect.total) r.fail(`${field}.expect`, "通过数不能大于总数");
  if (pattern !== undefined) run.pattern = pattern;
  return run;
}

function parseLab(value: unknown, field: string, r: Reader): Lab {
  const o = r.object(value, field);
  const hints = r.object(o.hints, `${field}.hints`);
  const runs = r.array(o.runs, `${field}.runs`, (run, runField) => parseRun(run, runField, r));
  if (runs.length === 0) r.fail(`${field}.runs`, "至少需要一条运行命令");
  return {
    id: r.string(o.id, `${field}.id`),
    title: r.string(o.title, `${field}.title`),
    goal: r.string(o.goal, `${field}.goal`),
    files: r.strings(o.files, `${field}.files`, { nonEmpty: true }),
    actions: r.strings(o.actions, `${field}.actions`, { nonEmpty: true }),
    runs,
    hints: {
      file: r.string(hints.file, `${field}.hints.file`),
      signature: r.string(hints.signature, `${field}.hints.signature`),
      pseudocode: r.string(hints.pseudocode, `${field}.hints.pseudocode`),
      code: r.string(hints.code, `${field}.hints.code`),
    },
  };
}

function parseFirstRed(value: unknown, r: Reader): FirstRed {
  const o = r.object(value, "firstRed");
  const kind = r.oneOf(o.kind, "firstRed.kind", ["tsc", "test", "none"] as const);
  const summary = r.string(o.summary, "firstRed.summary");
  if (kind === "none") return { kind, summary };
  if (kind === "tsc") {
    const errors = r.array(o.errors, "firstRed.errors", (item, field) => {
      const e = r.object(item, field);
      const code = r.string(e.code, `${field}.code`);
      if (!/^TS\d+$/.test(code)) r.fail(`${field}.code`, "应当形如 TS2305");
      return { code, file: r.string(e.file, `${field}.file`), includes: r.string(e.includes, `${field}.includes`) };
    });
    if (errors.length === 0) r.fail("firstRed.errors", "不能为空");
    return { kind, summary, errors };
  }
  const failures = r.array(o.failures, "firstRed.failures", (item, field) => {
    const f = r.object(item, field);
    return { test: r.string(f.test, `${field}.test`), includes: r.string(f.includes, `${field}.includes`) };
  });
  if (failures.length === 0) r.fail("firstRed.failures", "不能为空");
  return { kind, summary, failures };
}

function parseMutation(value: unknown, field: string, r: Reader): Mutation {
  const m = r.object(value, field);
  const file = r.string(m.file, `${field}.file`);
  const find = r.string(m.find, `${field}.find`);
  if (typeof m.replace !== "string") r.fail(`${field}.replace`, "应当是字符串");
  if (m.replace === find) r.fail(`${field}.replace`, "与 find 相同，什么也没改");
  const region = r.optionalString(m.region, `${field}.region`);
  if (region !== undefined && !/^\d+\.\d+$/.test(region)) r.fail(`${field}.region`, "应当是实践编号，形如 10.2");
  return { file, find, replace: m.replace, ...(region === undefined ? {} : { region }) };
}

/** 等价变异：与原代码行为相同、任何测试都抓不住的生成变异，写明理由。 */
export interface EquivalentMutant extends Mutation {
  reason: string;
}

function parseEquivalent(value: unknown, field: string, r: Reader): EquivalentMutant {
  const o = r.object(value, field);
  return { reason: r.string(o.reason, `${field}.reason`), ...parseMutation(o, field, r) };
}

function parseRuleMutation(value: unknown, field: string, r: Reader): RuleMutation {
  const o = r.object(value, field);
  const caughtBy = o.caughtBy === undefined ? undefined : r.string(o.caughtBy, `${field}.caughtBy`);
  return { rule: r.string(o.rule, `${field}.rule`), ...parseMutation(o, field, r), ...(caughtBy === undefined ? {} : { caughtBy }) };
}

function parseCompileFail(value: unknown, field: string, r: Reader): CompileFail {
  const o = r.object(value, field);
  const code = r.string(o.code, `${field}.code`);
  if (!/^TS\d+$/.test(code)) r.fail(`${field}.code`, "应当是 tsc 的错误码，例如 TS2322");
  return { ...parseRuleMutation(o, field, r), code };
}

function parsePlaceholder(value: unknown, field: string, r: Reader): StarterPlaceholder {
  const o = r.object(value, field);
  const lab = r.string(o.lab, `${field}.lab`);
  if (!/^\d+\.\d+$/.test(lab)) r.fail(`${field}.lab`, "应当形如 7.3");
  return {
    file: r.string(o.file, `${field}.file`),
    lab,
    match: r.string(o.match, `${field}.match`),
    code: r.strings(o.code, `${field}.code`, { nonEmpty: true }),
  };
}

function parseFault(value: unknown, r: Reader): FaultExperiment {
  const o = r.object(value, "fault");
  const mutations = r.array(o.mutations, "fault.mutations", (item, field) => parseMutation(item, field, r));
  if (mutations.length === 0) r.fail("fault.mutations", "不能为空");
  return {
    title: r.string(o.title, "fault.title"),
    mutations,
    test: r.string(o.test, "fault.test"),
    alsoFails: o.alsoFails === undefined ? [] : r.strings(o.alsoFails, "fault.alsoFails"),
    includes: r.strings(o.includes, "fault.includes", { nonEmpty: true }),
  };
}

function parseStep(value: unknown, field: string, r: Reader): Step {
  const o = r.object(value, field);
  return {
    id: r.string(o.id, `${field}.id`),
    title: r.string(o.title, `${field}.title`),
    patch: r.string(o.patch, `${field}.patch`),
    runs: r.array(o.runs, `${field}.runs`, (run, runField) => parseRun(run, runField, r)),
  };
}
