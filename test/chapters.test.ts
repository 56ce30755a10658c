import assert from "node:assert/strict";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { renderCard } from "../scripts/engine/card.ts";
import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { CourseError } from "../scripts/engine/errors.ts";
import type { CourseHistory } from "../scripts/engine/history.ts";
import { authoringNotes, lintLesson, namesTest, predictionOf } from "../scripts/engine/lesson.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { faultSetProblems } from "../scripts/engine/selfcheck.ts";
import { regexFragments, unstatedWording } from "../scripts/engine/wording.ts";
import { tempDir } from "./helpers.ts";

const work = tempDir("chapters");
after(() => work.remove());

/** 复制真实课程的 lessons/，再对某一章的 chapter.json 做一次改动。 */
function lessonsWith(name: string, edit: (meta: Record<string, unknown>) => void): string {
  const dir = path.join(work.dir, name);
  cpSync(LESSONS_DIR, dir, { recursive: true });
  const metaPath = path.join(dir, "03-message-ir", "chapter.json");
  const meta = JSON.parse(readFileSync(metaPath, "utf8")) as Record<string, unknown>;
  edit(meta);
  writeFileSync(metaPath, JSON.stringify(meta));
  return dir;
}

function assertInvalid(dir: string, pattern: RegExp): void {
  assert.throws(
    () => loadChapters(dir),
    (error: unknown) => error instanceof CourseError && error.code === "CHAPTER_INVALID" && pattern.test(error.message),
  );
}

test("真实课程的每一章都通过元数据校验，编号从 00 连续", () => {
  const chapters = loadChapters(LESSONS_DIR);
  assert.deepEqual(chapters.map((chapter) => chapter.id).slice(0, 5), ["00", "01", "02", "03", "04"]);
});

test("缺字段、类型不对、提示不足四级：错误指出文件与字段", () => {
  assertInvalid(lessonsWith("no-title", (meta) => delete meta.title), /lessons\/03-message-ir\/chapter\.json：字段 title 应当是非空字符串/);
  assertInvalid(lessonsWith("bad-minutes", (meta) => (meta.minutes = "很久")), /字段 minutes 应当是非负整数/);
  assertInvalid(
    lessonsWith("no-hint", (meta) => {
      const labs = meta.labs as Array<{ hints: Record<string, string> }>;
      delete labs[0]!.hints.pseudocode;
    }),
    /字段 labs\[0\]\.hints\.pseudocode 应当是非空字符串/,
  );
  assertInvalid(lessonsWith("bad-mode", (meta) => (meta.mode = "随便")), /字段 mode 应当是 观察 \/ 重建 之一/);
  assertInvalid(lessonsWith("bad-id", (meta) => (meta.id = "07")), /字段 id 应当与目录编号 03 一致/);
});

test("mutations 与 placeholders 逐字段校验：错误指出文件与字段", () => {
  const mutations = (meta: Record<string, unknown>) => meta.mutations as Array<Record<string, unknown>>;
  assertInvalid(lessonsWith("mutation-no-rule", (meta) => delete mutations(meta)[0]!.rule), /chapter\.json：字段 mutations\[0\]\.rule 应当是非空字符串/);
  assertInvalid(lessonsWith("mutation-no-find", (meta) => (mutations(meta)[1]!.find = "")), /字段 mutations\[1\]\.find 应当是非空字符串/);
  assertInvalid(lessonsWith("mutation-same", (meta) => (mutations(meta)[0]!.replace = mutations(meta)[0]!.find)), /字段 mutations\[0\]\.replace 与 find 相同/);
  assertInvalid(lessonsWith("mutations-object", (meta) => (meta.mutations = {})), /字段 mutations 应当是数组/);
  assertInvalid(lessonsWith("mutation-region", (meta) => (mutations(meta)[0]!.region = "第二节")), /字段 mutations\[0\]\.region 应当是实践编号，形如 10\.2/);
  const placeholder = { file: "packages/pi-course/src/types.ts", lab: "3.1", match: "textOf", code: ["return \"\";"] };
  assertInvalid(lessonsWith("placeholder-lab", (meta) => (meta.placeholders = [{ ...placeholder, lab: "9.9" }])), /字段 placeholders\[0\]\.lab 9\.9 不是本章的实践/);
  assertInvalid(
    lessonsWith("placeholder-file", (meta) => (meta.placeholders = [{ ...placeholder, file: "packages/pi-course/src/sse.ts" }])),
    /字段 placeholders\[0\]\.file .* 不是本章的教学文件/,
  );
  assertInvalid(lessonsWith("placeholder-code", (meta) => (meta.placeholders = [{ ...placeholder, code: [] }])), /字段 placeholders\[0\]\.code 不能为空/);
  assert.doesNotThrow(() => loadChapters(lessonsWith("placeholder-ok", (meta) => (meta.placeholders = [placeholder]))));
  const compileFail = { rule: "漏处理新角色", file: "packages/pi-course/src/types.ts", find: "a", replace: "b", code: "TS2322" };
  assertInvalid(lessonsWith("compile-fail-code", (meta) => (meta.compileFails = [{ ...compileFail, code: "2322" }])), /字段 compileFails\[0\]\.code 应当是 tsc 的错误码/);
  assertInvalid(lessonsWith("compile-fail-rule", (meta) => (meta.compileFails = [{ ...compileFail, rule: "" }])), /字段 compileFails\[0\]\.rule 应当是非空字符串/);
  assert.doesNotThrow(() => loadChapters(lessonsWith("compile-fail-ok", (meta) => (meta.compileFails = [compileFail]))));
});

test("heldOut（留出测试）逐字段校验：文件在章节的 heldout/ 里且真的存在，至少一个测试，落点在测试目录下一层", () => {
  const heldOut = { files: ["heldout/tasks.ts", "heldout/99-heldout.test.ts"], into: "packages/pi-course/test/heldout", count: 2 };
  const withFiles = (name: string, value: unknown) => {
    const dir = lessonsWith(name, (meta) => (meta.heldOut = value));
    mkdirSync(path.join(dir, "03-message-ir", "heldout"));
    for (const file of heldOut.files) writeFileSync(path.join(dir, "03-message-ir", file), "// 留出\n");
    return dir;
  };
  const ok = loadChapters(withFiles("heldout-ok", heldOut)).find((chapter) => chapter.id === "03");
  assert.deepEqual(ok?.heldOut, heldOut);
  assert.equal(loadChapters(LESSONS_DIR).find((chapter) => chapter.id === "03")?.heldOut, undefined);
  assertInvalid(withFiles("heldout-outside", { ...heldOut, files: ["tasks.ts"] }), /字段 heldOut\.files\[0\] 应当形如 heldout\/名字\.ts/);
  assertInvalid(withFiles("heldout-no-test", { ...heldOut, files: ["heldout/tasks.ts"] }), /字段 heldOut\.files 至少要有一个 \*\.test\.ts/);
  assertInvalid(withFiles("heldout-into", { ...heldOut, into: "packages/pi-course/src" }), /字段 heldOut\.into 应当形如/);
  assertInvalid(withFiles("heldout-count", { ...heldOut, count: 0 }), /字段 heldOut\.count 至少要有一项测试/);
  assert.throws(
    () => loadChapters(lessonsWith("heldout-missing", (meta) => (meta.heldOut = heldOut))),
    (error: unknown) => error instanceof CourseError && /03-message-ir\/heldout\/tasks\.ts：文件不存在/.test(error.message),
  );
});

test("不是合法 JSON 与章节编号不连续：同样给出一句中文", () => {
  const broken = lessonsWith("broken-json", () => {});
  writeFileSync(path.join(broken, "03-message-ir", "chapter.json"), "{ 不是 json");
  assertInvalid(broken, /lessons\/03-message-ir\/chapter\.json：不是合法的 JSON/);

  const gap = lessonsWith("gap", () => {});
  mkdirSync(path.join(gap, "07-later"));
  assertInvalid(gap, /章节编号不连续/);
});

test("findChapter 接受 3、03、slug 与目录名；认不出时列出全部章节", () => {
  const chapters = loadChapters(LESSONS_DIR);
  for (const input of ["3", "03", "message-ir", "03-message-ir"]) assert.equal(findChapter(chapters, input).id, "03");
  assert.throws(() => findChapter(chapters, "99"), (error: unknown) => error instanceof CourseError && error.exitCode === 2 && /可选章节：00 prologue/.test(error.message));
  assert.throws(() => findChapter(chapters, ""), /请指定章节/);
});

test("停靠点：只能落在两个实践之间，错误指出文件与字段", () => {
  const withStop = (stop: unknown) => lessonsWith(`stop-${JSON.stringify(stop).length}-${Math.random()}`, (meta) => (meta.stops = [stop]));
  assertInvalid(withStop({ after: "9.9", note: "x" }), /03-message-ir\/chapter\.json：字段 stops\[0\]\.after 应当是本章的实践编号（3\.1、3\.2）/);
  assertInvalid(withStop({ after: "3.2", note: "x" }), /字段 stops\[0\]\.after 不能是最后一个实践 3\.2/);
  assertInvalid(withStop({ after: "3.1" }), /字段 stops\[0\]\.note 应当是非空字符串/);
  assertInvalid(lessonsWith("stop-twice", (meta) => (meta.stops = [{ after: "3.1", note: "a" }, { after: "3.1", note: "b" }])), /字段 stops\[1\]\.after 重复/);
  assertInvalid(lessonsWith("stop-not-array", (meta) => (meta.stops = { after: "3.1" })), /字段 stops 应当是数组/);
});

test("停靠点出现在章节卡片上，课文缺少对应标记时 lint 报出实践编号", () => {
  const dir = lessonsWith("stop-ok", (meta) => (meta.stops = [{ after: "3.1", note: "消息与重放做完了，流留到下次" }]));
  const chapter = findChapter(loadChapters(dir), "03");
  assert.deepEqual(chapter.stops, [{ after: "3.1", note: "消息与重放做完了，流留到下次" }]);

  const history: CourseHistory = { branch: "course", base: "b".repeat(40), tip: "c".repeat(40), chapters: { "03": { parent: "a".repeat(40), target: "d".repeat(40), steps: {} } } };
  const card = renderCard(chapter, history);
  const lab31 = card.findIndex((line) => line.trimStart().startsWith("实践 3.1"));
  const lab32 = card.findIndex((line) => line.trimStart().startsWith("实践 3.2"));
  const stopLine = card.findIndex((line) => line.includes("停靠点：消息与重放做完了，流留到下次"));
  assert.ok(lab31 < stopLine && stopLine < lab32, card.join("\n"));

  const marked = readFileSync(chapter.lessonPath, "utf8");
  assert.deepEqual(lintLesson(marked, chapter, [chapter], []).filter((problem) => problem.includes("停靠点")), []);
  // 标记挪到下一个实践里，就不算 3.1 的停靠点。
  const misplaced = marked.replace(/^> \*\*停靠点\*\*：.*\n/m, "").replace("## 故障实验", "> **停靠点**：放错了地方。\n\n## 故障实验");
  assert.deepEqual(lintLesson(misplaced, chapter, [chapter], []).filter((problem) => problem.includes("停靠点")), [
    "实践 3.1 一节末尾缺少停靠点标记「> **停靠点**：…」（chapter.json 的 stops 声明了它）",
  ]);
});

test("每个实践一节都有运行前的预测；缺了它 lint 报出实践编号，hint 与 watch 才不会指空", () => {
  const chapter = findChapter(loadChapters(LESSONS_DIR), "03");
  const lesson = readFileSync(chapter.lessonPath, "utf8");
  assert.match(predictionOf(lesson, "3.2") ?? "", /^改完以后/);
  assert.deepEqual(lintLesson(lesson, chapter, [chapter], []).filter((problem) => problem.includes("先预测")), []);
  const without = lesson.replace(/^\*\*先预测\*\*：改完以后.*\n/m, "");
  assert.equal(predictionOf(without, "3.2"), undefined);
  assert.deepEqual(lintLesson(without, chapter, [chapter], []).filter((problem) => problem.includes("先预测")), [
    "实践 3.2 一节缺少运行前的预测「**先预测**：…」（hint 与 watch 会指向它）",
  ]);
});

test("课文与提示不提学习者手里没有的写作材料：写到种子、代码索引时 lint 报出行号或提示级别", () => {
  const chapter = findChapter(loadChapters(LESSONS_DIR), "03");
  const lesson = readFileSync(chapter.lessonPath, "utf8");
  assert.deepEqual(authoringNotes(lesson, chapter), []);
  const noted = lesson.replace("## 小结", "按种子 001 的记载核对过。\n\n## 小结");
  const line = noted.split("\n").findIndex((text) => text.includes("按种子")) + 1;
  assert.deepEqual(authoringNotes(noted, chapter), [
    `课文第 ${line} 行写到了学习者手里没有的写作材料「种子」：换成学习者能看到的东西（上游文件与提交、本章的测试）`,
  ]);
  assert.ok(lintLesson(noted, chapter, [chapter], []).some((problem) => problem.startsWith(`课文第 ${line} 行`)));
  // 标识符里的 seed（seedResources）不算；单独的英文词算。
  assert.deepEqual(authoringNotes("调用 `seedResources`。", chapter), []);
  const lab = chapter.labs[0]!;
  const hinted = { ...chapter, labs: [{ ...lab, hints: { ...lab.hints, pseudocode: "代码索引里有一份更新的写法" } }, ...chapter.labs.slice(1)] };
  assert.deepEqual(authoringNotes("", hinted), [
    `实践 ${lab.id} 的第 3 级提示（伪代码）写到了学习者手里没有的写作材料「代码索引」：换成学习者能看到的东西（上游文件与提交、本章的测试）`,
  ]);
});

test("故障实验的失败集合：课文点名的一条不多、一条不少，点名可以写全名或开头加省略号", () => {
  const fault = { title: "t", mutations: [], test: "3.1 甲", alsoFails: ["3.2 乙会红"], includes: [] };
  assert.deepEqual(faultSetProblems(fault, [{ name: "3.1 甲", ok: false }, { name: "3.2 乙会红", ok: false }, { name: "3.3 丙", ok: true }]), []);
  assert.deepEqual(faultSetProblems(fault, [{ name: "3.1 甲", ok: false }, { name: "3.2 乙会红", ok: true }, { name: "3.3 丙", ok: false }]), [
    "故障实验还弄红了课文没有点名的测试（写进 fault.alsoFails 和课文）：「3.3 丙」",
    "fault.alsoFails 点名的测试并没有失败：「3.2 乙会红」",
  ]);
  const name = "5.2 SseDecoder 逐字节喂入也能还原每个事件：汉字被切开";
  assert.ok(namesTest(`“${name}”失败`, name));
  assert.ok(namesTest("“5.2 SseDecoder 逐字节……”失败", name));
  assert.ok(namesTest("5.2 的“SseDecoder 逐字节喂入……”也红", name));
  assert.ok(!namesTest("“5.2 Sse……”失败", name), "开头太短认不出是哪一条");
  assert.ok(!namesTest("5.2 也会失败", name));

  const chapter = findChapter(loadChapters(LESSONS_DIR), "06");
  const lesson = readFileSync(chapter.lessonPath, "utf8");
  assert.deepEqual(lintLesson(lesson, chapter, [chapter], []).filter((problem) => problem.includes("故障实验")), []);
  const silent = { ...chapter, fault: { ...chapter.fault, alsoFails: [...chapter.fault.alsoFails, "6.2 注册表按名字找工具"] } };
  assert.deepEqual(lintLesson(lesson, silent, [chapter], []).filter((problem) => problem.includes("故障实验")), [
    "「## 故障实验」没有点名会失败的测试「6.2 注册表按名字找工具」：学习者要能照着课文核对红了哪几条",
  ]);
});

test("测试比对的措辞课文里都写出了：数字与测试自己的数据可以换成占位，措辞本身要逐字出现", () => {
  const source = [
    'import assert from "node:assert/strict";',
    'test("5.3 看门狗", () => {',
    '  const file = "notes.txt";',
    '  const entry = { id: "b" };',
    '  assert.match(error.message, /250 毫秒没有收到任何数据/);',
    '  assert.match(error.message, /notes\\.txt 不是普通文件/);',
    '  assert.throws(run, { message: /会话已经关闭/ });',
    '  assert.equal(result.text, "Tool result unavailable: the session ended early.");',
    '  expectSays(run, ["第 2 行（条目 b）"]);',
    '  assert.match(answer.text, /notes/, "夹具里的名字是数据，不是措辞");',
    '});',
    'function expectSays(run, says) { for (const words of says) assert.ok(run().message.includes(words)); }',
  ].join("\n");
  const lesson = "| 情形 | 消息 |\n|---|---|\n| 静默 | `N 毫秒没有收到任何数据` |\n| 目录 | `<路径> 不是普通文件` |\n| 行 | `第 N 行（条目 <id>）` |\n";
  assert.deepEqual(unstatedWording(lesson, source).map((wording) => [wording.line, wording.fragment]), [
    [7, "会话已经关闭"],
    [8, "Tool result unavailable: the session ended early."],
  ]);
  const complete = `${lesson}| 关闭 | \`会话已经关闭\` |\n| 模型 | \`Tool result unavailable: the session ended early.\` |\n`;
  assert.deepEqual(unstatedWording(complete, source), []);
  assert.deepEqual(regexFragments("^运行失败（error）：.*服务器返回 500\\.$"), ["运行失败（error）：", "服务器返回 500."]);
});

test("措辞检查把测试自己写出的整段数据当数据：命令里的 && 不是措辞，模式从文件名中间开始也认得出", () => {
  const source = [
    'test("13.5 闸门", () => {',
    '  const turns = [bashTurn("c1", "rm -rf ../outside && echo gone")];',
    '  const file = "2026-01-01T00-00-00-000Z_broken1.jsonl";',
    '  assert.match(out.text(), /需要你的批准：bash：rm -rf \\.\\.\\/outside && echo gone/);',
    '  assert.match(err.text(), /会话文件 .*_broken1\\.jsonl 打不开：第 1 行/);',
    '  assert.match(out.text(), /运行 rm -rf \\.\\.\\/outside && echo gone 之前先问你/);',
    '});',
  ].join("\n");
  const lesson = "问你：`需要你的批准：bash：<命令>`；坏会话：`会话文件 <路径> 打不开：第 1 行：<说明>`；`运行 rm -rf ../outside && echo gone 之前先问你`。";
  assert.deepEqual(unstatedWording(lesson, source), []);
  const placeholders = lesson.replace("rm -rf ../outside && echo gone", "<命令>");
  assert.deepEqual(unstatedWording(placeholders, source), [], "数据的位置写成占位也算写出");
  const silent = "坏会话：`会话文件 <路径> 打不开：第 1 行`。";
  assert.deepEqual(unstatedWording(silent, source).map((wording) => [wording.line, wording.fragment]), [
    [4, "需要你的批准：bash：rm -rf ../outside && echo gone"],
    [6, "运行 rm -rf ../outside && echo gone 之前先问你"],
  ]);
});

test("整体比较的期望对象里，reason、errorMessage 这类属性比对的也是措辞；内容块的 text 是形状里的数据", () => {
  const source = [
    'test("14.1 计数", () => {',
    '  assert.deepEqual(check.run(context), { ok: false, reason: "会话文件里的 user 有 1 个，应当是 2 个" });',
    '  assert.deepEqual(events, [{ type: "error", errorMessage: "连接在中途断开了" }, { type: "text", text: "项目名是 tiny-pi，一个小小的智能体" }]);',
    '});',
  ].join("\n");
  assert.deepEqual(unstatedWording("", source).map((wording) => [wording.line, wording.fragment]), [
    [2, "会话文件里的 user 有 1 个，应当是 2 个"],
    [3, "连接在中途断开了"],
  ]);
  const lesson = "| `sessionCount(\"user\", 2)` | `会话文件里的 user 有 N 个，应当是 N 个` |\n| 断开 | `连接在中途断开了` |";
  assert.deepEqual(unstatedWording(lesson, source), []);
});
