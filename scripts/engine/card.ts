import { HINT_LEVELS, HINT_LEVEL_NAMES, type Chapter, type FirstRed, type TestRun } from "./chapters.js";
import { practiceStart, shortHash, type CourseHistory } from "./history.js";
import { COURSE_BRANCH, COURSE_PACKAGE } from "./paths.js";
import { inlineMarkdown, type Painter } from "./screen.js";
import { displayWidth } from "./terminal.js";

const noPaint: Painter = (_style, text) => text;

/** 补空格到 width 列（按显示宽度，中文两列）。 */
function padTo(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - displayWidth(text)));
}

/** 学习者在任何地方（套件、worktree、练习目录）都能照抄的构建命令。 */
export const BUILD_COMMAND = "npm run build -w @pi/course";

export function focusedGlob(chapter: Chapter): string {
  return `${COURSE_PACKAGE}/dist/test/${chapter.id}-*.test.js`;
}

/** 运行本章聚焦测试（可带一个实践的名称过滤）的那条命令，原样印在卡片、书和 practice 的输出里。 */
export function focusedTestCommand(chapter: Chapter, run: Pick<TestRun, "pattern">): string {
  const pattern = run.pattern === undefined ? "" : ` --test-name-pattern="${run.pattern}"`;
  return `node --test${pattern} ${focusedGlob(chapter)}`;
}

export function expectation(run: TestRun): string {
  return `${run.expect.pass}/${run.expect.total}`;
}

export function describeFirstRed(firstRed: FirstRed): string[] {
  switch (firstRed.kind) {
    case "tsc":
      return [firstRed.summary, ...firstRed.errors.map((e) => `  ${e.code} ${e.file}：…${e.includes}…`)];
    case "test":
      return [firstRed.summary, ...firstRed.failures.map((f) => `  ✗ ${f.test}：…${f.includes}…`)];
    case "none":
      return [firstRed.summary];
  }
}

/**
 * 终端里的第一次红灯：说明，加上每个实践的第一条失败（tsc 错误最多三条），其余只报个数。
 * 一整张失败清单会把下一条命令挤出屏幕；完整的清单在 LEARNING.md 和 --json 里。
 */
export function briefFirstRed(firstRed: FirstRed): string[] {
  if (firstRed.kind === "none") return [firstRed.summary];
  const items =
    firstRed.kind === "tsc"
      ? firstRed.errors.map((e) => ({ group: "", line: `  ${e.code} ${e.file}：…${e.includes}…` }))
      : firstRed.failures.map((f) => ({ group: /^\d+\.\d+/.exec(f.test)?.[0] ?? "", line: `  ✗ ${f.test}` }));
  // 不同实践的第一条，最多两条：够看出红灯指向哪里
  const shown: string[] = [];
  const groups = new Set<string>();
  for (const item of items) {
    if (shown.length < 2 && (item.group === "" || !groups.has(item.group))) shown.push(item.line);
    groups.add(item.group);
  }
  const rest = items.length - shown.length;
  return [firstRed.summary, ...shown, ...(rest > 0 ? [`  （另有 ${rest} 项${firstRed.kind === "tsc" ? " tsc 错误" : "失败"}；完整清单见练习目录的 LEARNING.md）`] : [])];
}

/** 课程包里的路径写成相对课程包的样子：卡片上一行能多放几个文件。 */
function inPackage(files: readonly string[]): string {
  return files.map((file) => (file.startsWith(`${COURSE_PACKAGE}/`) ? file.slice(COURSE_PACKAGE.length + 1) : file)).join("、");
}

/**
 * checkpoint 命令打印的章节卡片（纯文本，一行一项）。要在一屏（约 40 行）里放下：
 * 每个实践一行（计数与测试名模式），完整的命令只写一次；第一次红灯只列几条代表。
 */
export function renderCard(chapter: Chapter, history: CourseHistory, paint: Painter = noPaint): string[] {
  const md = (text: string) => inlineMarkdown(text, paint);
  const heading = (text: string) => paint("bold", text);
  const command = (text: string) => paint("cyan", text);
  const commits = history.chapters[chapter.id];
  const parent = commits?.parent ?? "";
  const target = commits?.target ?? "";
  const lines = [
    heading(`第 ${chapter.id} 章 · ${md(chapter.title)}（${chapter.slug}）`),
    md(chapter.summary),
    "",
    `预计：${chapter.minutes} 分钟    难度：${chapter.difficulty}    模式：${chapter.mode}    前置：${chapter.prerequisites.join("、") || "无"}`,
    `教学文件（${COURSE_PACKAGE}/ 下）：${inPackage(chapter.teachingFiles)}`,
  ];
  const newArtifacts = chapter.artifacts.filter((file) => !chapter.teachingFiles.includes(file));
  if (newArtifacts.length > 0) lines.push(`其他产物：${inPackage(newArtifacts)}`);
  lines.push(
    `聚焦测试：${chapter.focusedTest.path}（${chapter.focusedTest.count} 项）`,
    `课程分支 ${COURSE_BRANCH}：起点 ${paint("dim", parent)}    目标 ${paint("dim", target)}`,
  );
  const steps = Object.entries(commits?.steps ?? {});
  if (steps.length > 0) lines.push(`  ${steps.map(([id, hash]) => `步骤 ${id} ${hash}`).join("    ")}`);
  const red = briefFirstRed(chapter.firstRed).map((line) => `  ${md(line).replace(/^(\s*)✗/, (_, space: string) => `${space}${paint("red", "✗")}`)}`);
  lines.push("", heading("第一次红灯："), ...red);
  lines.push(heading("每个实践的命令（<模式> 见各行）："), `  ${command(`${BUILD_COMMAND} && ${focusedTestCommand(chapter, { pattern: "<模式>" })}`)}`);
  const titleWidth = Math.max(...chapter.labs.map((lab) => displayWidth(`实践 ${lab.id} · ${lab.title}`)));
  for (const lab of chapter.labs) {
    const runs = lab.runs.map((run) => `${run.pattern === undefined ? "整个文件" : `"${run.pattern}"`} → ${expectation(run)}`).join("，然后 ");
    lines.push(`  ${padTo(`实践 ${lab.id} · ${lab.title}`, titleWidth)}  ${paint("cyan", runs)}`);
    const stop = chapter.stops.find((candidate) => candidate.after === lab.id);
    if (stop) lines.push(paint("dim", `    ── 停靠点：${md(stop.note)}`));
  }
  lines.push(
    `${heading("故障实验：")}${md(chapter.fault.title)}（${faultOutcome(chapter.fault)}）`,
    "",
    heading("查看本章的改动："),
    `  ${command(`git diff ${shortHash(parent)} ${shortHash(target)} -- ${COURSE_PACKAGE}`)}`,
    `  ${command(`git worktree add ../pi-course-${chapter.id} ${shortHash(target)}`)}    ${paint("yellow", "（做完本章再看答案）")}`,
    heading("创建练习目录："),
    `  ${command(`npm run practice -- ${chapter.id}`)}`,
  );
  return lines;
}

const TUTOR_PROTOCOL = (chapter: Chapter) => [
  "1. 先预测：每次运行前，先写下你认为会看到什么（哪条红灯、几项通过）。",
  "2. 一次只做一个动作：改一处、跑一次、看一眼结果。",
  "3. 找第一处偏差：只看第一条失败的期望值与实际值，或第一条 tsc 错误的文件和行号。",
  `4. 卡住了才要提示，一次一级：npm run hint -- ${chapter.id} <实践>（定位文件 → 指出签名 → 伪代码 → 局部代码），一级不够再要下一级。`,
  "5. 永远不改弱测试：测试是规格；让它变绿的唯一办法是让代码满足它。",
];

/** 课文在课程套件里的位置（相对套件根目录）。 */
export function lessonLocation(chapter: Chapter): string {
  return `lessons/${chapter.dirName}/lesson.md`;
}

/**
 * 练习目录里的 LEARNING.md：本章的卡片。只有红灯、每个实践的目标、命令与计数、怎样要提示；
 * 讲解和做法留在课文里，提示留在 npm run hint 后面：这个目录里的任何文件都不含提示原文。
 */
export function renderPracticeGuide(chapter: Chapter, history: CourseHistory): string {
  const start = practiceStart(chapter, history);
  const lesson = lessonLocation(chapter);
  const out: string[] = [
    `# 第 ${chapter.id} 章 · ${chapter.title}`,
    "",
    chapter.summary,
    "",
    `- 模式：${chapter.mode}${chapter.mode === "观察" ? "（本目录就是目标状态：先预测、再运行、再亲手弄坏它）" : "（本目录是起点：没有答案，也没有 git 历史）"}`,
    `- 取自提交：\`${shortHash(start ?? "")}\`（课程分支 ${COURSE_BRANCH}）`,
    `- 预计 ${chapter.minutes} 分钟 · 难度 ${chapter.difficulty}${chapter.stops.length > 0 ? ` · 停靠点在实践 ${chapter.stops.map((stop) => stop.after).join("、")} 之后` : ""}`,
    `- 教学文件：${chapter.teachingFiles.map((file) => `\`${file}\``).join("、")}`,
    `- 聚焦测试：\`${chapter.focusedTest.path}\`（${chapter.focusedTest.count} 项）`,
    `- 课文：课程套件里的 \`${lesson}\`。概念、每个实践的做法、故障实验和验收问题都在那里，这张卡片只列要做什么、怎么验证。`,
    "",
    "## 第一次运行",
    "",
    "```bash",
    `${BUILD_COMMAND} && ${focusedTestCommand(chapter, {})}`,
    "```",
    "",
    "两条命令用 && 连起来：build 失败时不再运行测试，免得测到 dist 里上一次编译留下的旧代码。",
    "读结果时看末尾汇总里的 tests、pass、fail（终端里以 ℹ 开头；Node 20、22 接进管道时以 # 开头）；带 --test-name-pattern 时，没被选中的测试不算进期望计数（Node 20 把它们列为 skipped，Node 22 起不列出）。",
    "",
    ...describeFirstRed(chapter.firstRed),
    "",
    "## 在课程套件里",
    "",
    "回到课程套件的目录，这几条命令会自动找到本练习目录：",
    "",
    "```bash",
    `npm run watch -- ${chapter.id}`,
    `npm run hint -- ${chapter.id} ${chapter.labs[0]?.id ?? ""}`.trimEnd(),
    `npm run verify -- ${chapter.id}`,
    "```",
    "",
    "watch 在每次保存后重新编译并运行聚焦测试；hint 一次只给一级提示并记进进度；verify 连同更早各章一起验证，全部通过就在 `npm start` 的地图上点亮本章。",
    "",
  ];
  for (const lab of chapter.labs) {
    out.push(`## 实践 ${lab.id} · ${lab.title}`, "", `目标：${lab.goal}`, "");
    out.push(`文件：${lab.files.map((file) => `\`${file}\``).join("、")}`, "", "```bash");
    for (const run of lab.runs) out.push(`${BUILD_COMMAND} && ${focusedTestCommand(chapter, run)}`);
    out.push("```", "", `预期：${lab.runs.map(expectation).join("，然后 ")}`, "");
    out.push(`怎么做见课文「实践 ${lab.id}」一节；卡住了：\`npm run hint -- ${chapter.id} ${lab.id}\`（一次一级：${HINT_LEVELS.map((level) => HINT_LEVEL_NAMES[level]).join(" → ")}）。`, "");
  }
  out.push(
    "## 故障实验",
    "",
    `全部变绿以后，做课文「故障实验」一节：${chapter.fault.title}。先预测哪条测试会失败、失败信息里会出现什么，再运行验证；看清之后改回原样。`,
    "",
    "## 与导师（人或 AI）一起学的约定",
    "",
    "不要直接要完整答案。",
    "",
    ...TUTOR_PROTOCOL(chapter),
    "",
  );
  return out.join("\n");
}

/** 故障实验会弄红哪些测试：点名主要的一项，同一处破坏还弄红的几项只报个数（全名在课文的故障实验一节）。 */
function faultOutcome(fault: Chapter["fault"]): string {
  const also = fault.alsoFails.length;
  return also === 0 ? `应让「${fault.test}」失败` : `应让「${fault.test}」失败，同一处破坏还让另外 ${also} 项失败，课文逐项列出`;
}
