import { existsSync, readFileSync } from "node:fs";
import { HINT_LEVEL_NAMES, HINT_LEVELS, LESSON_NOT_AN_INPUT, type Chapter } from "./chapters.js";
import { escapeRegExp } from "./regexp.js";

/** 课文必需的二级标题（按顺序）；实践标题按章节元数据另行检查。 */
export const REQUIRED_SECTIONS = ["本章重建入口", "故障实验", "Pi 源码对照", "本章验收", "小结"] as const;
export const CARD_FIELDS = [
  "模式",
  "起点",
  "目标",
  "教学文件",
  "第一次红灯",
  "聚焦测试",
  "定位命令",
  "练习目录",
  "聚焦运行",
  "通过证据",
] as const;

const CITED_HASH = (field: "起点" | "目标") => new RegExp(`^(- \\*\\*${field}\\*\\*：\`)([0-9a-f]{7,40})(\`)`, "m");

export interface CitedHashes {
  start?: string;
  target?: string;
}

export function citedHashes(lesson: string): CitedHashes {
  const cited: CitedHashes = {};
  const start = CITED_HASH("起点").exec(lesson)?.[2];
  const target = CITED_HASH("目标").exec(lesson)?.[2];
  if (start) cited.start = start;
  if (target) cited.target = target;
  return cited;
}

/** 把卡片上的起点 / 目标改成新的短哈希；其余文字一个字节都不动。 */
export function restampHashes(lesson: string, start: string, target: string): string {
  return lesson
    .replace(CITED_HASH("起点"), (_all, head: string, _old: string, tail: string) => `${head}${start}${tail}`)
    .replace(CITED_HASH("目标"), (_all, head: string, _old: string, tail: string) => `${head}${target}${tail}`);
}

/** 课文的 `## 标题` 列表。 */
export function sectionTitles(lesson: string): string[] {
  return [...lesson.matchAll(/^## (.+)$/gm)].map((match) => (match[1] ?? "").trim());
}

/** 代码块里以 npm / node 开头的命令行。 */
export function lessonCommands(lesson: string): string[] {
  const commands: string[] = [];
  let inFence = false;
  let shellFence = false;
  for (const line of lesson.split("\n")) {
    const fence = /^```(\S*)/.exec(line);
    if (fence) {
      shellFence = !inFence && ["bash", "sh", "shell", "console", ""].includes(fence[1] ?? "");
      inFence = !inFence;
      continue;
    }
    if (inFence && shellFence && /^\s*(npm|node)\s/.test(line)) commands.push(line.trim());
  }
  return commands;
}

/** 逐条检查课文：必需小节、卡片字段、实践标题、命令是否被套件接受。返回问题清单。 */
export function lintLesson(lesson: string, chapter: Chapter, chapters: readonly Chapter[], kitScripts: readonly string[]): string[] {
  const problems: string[] = [];
  const titles = sectionTitles(lesson);
  let cursor = -1;
  for (const required of REQUIRED_SECTIONS) {
    const at = titles.findIndex((title) => title.startsWith(required));
    if (at < 0) problems.push(`缺少小节「## ${required}」`);
    else if (at < cursor) problems.push(`小节「## ${required}」顺序不对`);
    else cursor = at;
  }
  for (const lab of chapter.labs) {
    if (!titles.some((title) => title.startsWith(`实践 ${lab.id} `) || title === `实践 ${lab.id}`)) {
      problems.push(`缺少实践小节「## 实践 ${lab.id} · …」`);
    }
  }
  for (const lab of chapter.labs) {
    if (labSection(lesson, lab.id) !== "" && predictionOf(lesson, lab.id) === undefined) {
      problems.push(`实践 ${lab.id} 一节缺少运行前的预测「**先预测**：…」（hint 与 watch 会指向它）`);
    }
  }
  for (const stop of chapter.stops) {
    if (!/^> \*\*停靠点\*\*：/m.test(labSection(lesson, stop.after))) {
      problems.push(`实践 ${stop.after} 一节末尾缺少停靠点标记「> **停靠点**：…」（chapter.json 的 stops 声明了它）`);
    }
  }
  for (const field of CARD_FIELDS) {
    if (!new RegExp(`^- \\*\\*${field}\\*\\*：`, "m").test(lesson)) problems.push(`本章重建入口缺少「${field}」一行`);
  }
  for (const command of lessonCommands(lesson)) {
    const problem = checkCommand(command, chapters, kitScripts);
    if (problem) problems.push(`命令 \`${command}\`：${problem}`);
  }
  problems.push(...authoringNotes(lesson, chapter));
  const faultSection = sectionBody(lesson, "故障实验");
  for (const name of [chapter.fault.test, ...chapter.fault.alsoFails]) {
    if (!namesTest(faultSection, name)) problems.push(`「## 故障实验」没有点名会失败的测试「${name}」：学习者要能照着课文核对红了哪几条`);
  }
  return problems;
}

/**
 * 学习者手里只有课文、提示和代码：写作时参考的材料（种子页、代码索引）他们没有，
 * 提到它们的句子对学习者是空指。课文与四级提示里出现这些字眼就报出来。
 */
const AUTHORING_WORDS: readonly RegExp[] = [/种子/, /\bseeds?\b/i, /代码索引/, /索引里/];

export function authoringNotes(lesson: string, chapter: Chapter): string[] {
  const places: Array<[string, string]> = [["课文", lesson]];
  for (const lab of chapter.labs) {
    for (const level of HINT_LEVELS) places.push([`实践 ${lab.id} 的第 ${HINT_LEVELS.indexOf(level) + 1} 级提示（${HINT_LEVEL_NAMES[level]}）`, lab.hints[level]]);
  }
  const problems: string[] = [];
  for (const [place, text] of places) {
    text.split("\n").forEach((line, index) => {
      const word = AUTHORING_WORDS.map((pattern) => pattern.exec(line)?.[0]).find((found) => found !== undefined);
      if (word !== undefined) {
        const where = place === "课文" ? `课文第 ${index + 1} 行` : place;
        problems.push(`${where}写到了学习者手里没有的写作材料「${word}」：换成学习者能看到的东西（上游文件与提交、本章的测试）`);
      }
    });
  }
  return problems;
}

/** 实践一节里运行前要回答的预测（`**先预测**：…` 那一段）；没有时是 undefined。 */
export function predictionOf(lesson: string, labId: string): string | undefined {
  const match = /^\*\*先预测\*\*：(.+)$/m.exec(labSection(lesson, labId));
  return match?.[1]?.trim();
}

/** 从本章课文里取实践的预测问题；课文不在时是 undefined。 */
export function labPrediction(chapter: Chapter, labId: string): string | undefined {
  // 课文被藏起来时（LESSON_NOT_AN_INPUT）照样去读：读不到要报错，不能当作没有预测
  if (chapter.lessonPath !== LESSON_NOT_AN_INPUT && !existsSync(chapter.lessonPath)) return undefined;
  return predictionOf(readFileSync(chapter.lessonPath, "utf8"), labId);
}

/** `## 实践 N.M · …` 这一节的正文（到下一个二级标题为止）；找不到时是空串。 */
function labSection(lesson: string, labId: string): string {
  return sectionBody(lesson, `实践 ${labId}`);
}

/**
 * 课文是否点名了这条测试：写出全名，或者写出它的开头再接省略号（“5.2 SseDecoder 逐字节……”），
 * 开头至少 8 个字符，短到认不出是哪一条就不算。
 */
export function namesTest(text: string, name: string): boolean {
  const plain = text.replace(/\\`/g, "`");
  // 课文常写“6.3 的“参数不合法时……””：实践编号放在引号外面也算点名
  return [name, name.replace(/^\d+\.\d+ /, "")].some((candidate) => namesFullOrPrefix(plain, candidate));
}

function namesFullOrPrefix(plain: string, name: string): boolean {
  if (plain.includes(name)) return true;
  for (let end = plain.indexOf("…"); end >= 0; end = plain.indexOf("…", end + 1)) {
    for (let start = Math.max(0, end - name.length); start <= end - 8; start++) {
      if (name.startsWith(plain.slice(start, end))) return true;
    }
  }
  return false;
}

/** 以 title 开头的二级标题下的正文（到下一个二级标题为止）；找不到时是空串。 */
function sectionBody(lesson: string, title: string): string {
  const escaped = escapeRegExp(title);
  const start = lesson.search(new RegExp(`^## ${escaped}(?: |$)`, "m"));
  if (start < 0) return "";
  const rest = lesson.slice(start + 3);
  const end = rest.search(/^## /m);
  return end < 0 ? rest : rest.slice(0, end);
}

const COURSE_SCRIPTS = ["build", "checkpoint", "practice"];

/** 套件接受的命令形状；返回 undefined 表示没问题。 */
export function checkCommand(command: string, chapters: readonly Chapter[], kitScripts: readonly string[]): string | undefined {
  const words = command.split(/\s+/);
  if (words[0] === "npm") {
    if (command === "npm ci" || command === "npm test" || command === "npm start") return undefined;
    const run = /^npm run ([\w:-]+)(?: -w @pi\/course)?(?: -- (.*))?$/.exec(command);
    if (!run) return "不是 npm ci / npm test / npm run <脚本> 的形式";
    const [, script = "", args] = run;
    const workspace = command.includes("-w @pi/course");
    const known = workspace ? COURSE_SCRIPTS : kitScripts;
    if (!known.includes(script)) return `没有名为 ${script} 的脚本`;
    const chapterArg = args?.split(/\s+/)[0];
    if (chapterArg && /^\d+$/.test(chapterArg) && !chapters.some((c) => c.id === chapterArg.padStart(2, "0"))) {
      return `没有第 ${chapterArg} 章`;
    }
    return undefined;
  }
  const test = /^node --test(?: --test-name-pattern="([^"]+)")? packages\/pi-course\/dist\/test\/(\d{2})-\*\.test\.js$/.exec(command);
  if (!test) return "node 命令只接受 node --test [--test-name-pattern=\"…\"] packages/pi-course/dist/test/NN-*.test.js";
  if (!chapters.some((c) => c.id === test[2])) return `没有第 ${test[2]} 章的测试`;
  return undefined;
}
