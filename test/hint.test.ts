import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { revealHint } from "../scripts/engine/hints.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { emptyProgress, inspectProgress, recordHint, updateProgress } from "../scripts/engine/progress.ts";
import { KIT, runIntoClosedPipe, runScript, spawnProcess, tempDir } from "./helpers.ts";
import { assertFits } from "./terminal-fit.ts";
import { card, practice, readProgress, solveTo } from "./learner.ts";

const work = tempDir("hint");
after(() => work.remove());

describe("hint：提示梯子一级一级展开", () => {
  const progress = path.join(work.dir, "progress.json");
  const dir = path.join(work.dir, "pi-practice-03");
  const hint = (...args: string[]) => runScript("hint", args, { env: { PI_COURSE_PROGRESS: progress } });
  let hints: Record<string, Record<string, string>>;
  /** 多行提示逐行缩进两格打印，空行不留空格。 */
  const printed = (text: string) => text.split("\n").map((line) => (line === "" ? "" : `  ${line}`)).join("\n");

  before(async () => {
    await practice("03", dir, progress);
    hints = Object.fromEntries((await card("03")).labs.map((lab) => [lab.id, lab.hints]));
  });

  test("省略实践：在练习目录里跑聚焦测试，给第一个没通过的实践第 1 级（定位文件），并记进进度", async () => {
    const { code, stdout, stderr } = await hint("03");
    assert.equal(code, 0, stderr);
    assert.match(stdout, /第 03 章 · 实践 3\.1/);
    assert.match(stdout, /实践 3\.1 还没通过，所以给它的提示/);
    assert.match(stdout, /提示 1\/4 · 定位文件/);
    // 提示之前先把课文里这个实践的预测问题摆出来
    assert.match(stdout, /先预测（课文「实践 3\.1」一节）：占位流永远不会结束/);
    assert.ok(stdout.indexOf("先预测") < stdout.indexOf("提示 1/4"), stdout);
    assert.ok(stdout.includes(printed(hints["3.1"]!.file!)), stdout);
    assert.ok(!stdout.includes(printed(hints["3.1"]!.signature!)), "只给这一级");
    assert.match(stdout, /下一级：npm run hint -- 03 3\.1（指出签名）/);
    assert.equal(readProgress(progress).hints["03"]?.["3.1"], 1);
  });

  test("再要一次升到下一级；实践可以简写成 1", async () => {
    const second = await hint("03", "3.1");
    assert.match(second.stdout, /提示 2\/4 · 指出签名/);
    assert.ok(hints["3.1"]!.signature!.includes("\n"), "3.1 的签名提示分成了多行");
    assert.ok(second.stdout.includes(printed(hints["3.1"]!.signature!)), second.stdout);
    const third = await hint("03", "1");
    assert.match(third.stdout, /提示 3\/4 · 伪代码/);
    assert.equal(readProgress(progress).hints["03"]?.["3.1"], 3);
  });

  test("--level N 回看已经看过的一级，不改记录", async () => {
    const { code, stdout } = await hint("03", "3.1", "--level", "1");
    assert.equal(code, 0);
    assert.match(stdout, /提示 1\/4 · 定位文件/);
    assert.match(stdout, /这是回看；你已经看到第 3 级/);
    assert.equal(readProgress(progress).hints["03"]?.["3.1"], 3);
  });

  test("在练习目录的子目录里（packages/pi-course/src）npm run -s hint：认出是哪个练习目录、哪一章", { timeout: 60_000 }, async () => {
    const { NODE_TEST_CONTEXT: _context, INIT_CWD: _cwd, ...env } = process.env;
    const { code, stdout, stderr } = await spawnProcess("npm", ["run", "-s", "hint", "--", "3.1", "--level", "1"], {
      cwd: path.join(dir, "packages/pi-course/src"),
      env: { ...env, NO_COLOR: "1", PI_COURSE_PROGRESS: progress, npm_config_update_notifier: "false" },
    });
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /第 03 章 · 实践 3\.1/);
    assert.match(stdout, /提示 1\/4 · 定位文件/);
  });

  test("到顶后停在第 4 级（局部代码）", async () => {
    assert.match((await hint("03", "3.1")).stdout, /提示 4\/4 · 局部代码/);
    const again = await hint("03", "3.1");
    assert.match(again.stdout, /提示 4\/4 · 局部代码/);
    assert.match(again.stdout, /这是最后一级/);
    assert.equal(readProgress(progress).hints["03"]?.["3.1"], 4);
  });

  test("不能跳级：退出码 2，说明先看哪一级，进度不变", async () => {
    const { code, stdout, stderr } = await hint("03", "3.2", "--level", "3");
    assert.equal(code, 2);
    assert.equal(stdout, "");
    assert.match(stderr, /提示要一级一级看：实践 3\.2 还没看过第 1 级（定位文件），先运行 npm run hint -- 03 3\.2$/m);
    assert.equal(readProgress(progress).hints["03"]?.["3.2"], undefined);
  });

  test("练习目录全部通过时：不需要提示；还没点亮时提醒 verify，已经点亮时不再提", { timeout: 60_000 }, async () => {
    await solveTo("03", dir, "target");
    const first = await hint("03");
    assert.equal(first.code, 0);
    assert.match(first.stdout, /聚焦测试已经全部通过，不需要提示/);
    assert.match(first.stdout, /记下进度：npm run verify -- 03/);

    const verified = await runScript("verify", ["03", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    const again = await hint("03");
    assert.equal(again.code, 0);
    assert.match(again.stdout, /聚焦测试已经全部通过，不需要提示/);
    assert.doesNotMatch(again.stdout, /记下进度/);
    assert.match(again.stdout, /本章已经点亮/);
  });

  test("错误的输入：未知实践列出本章实践，--level 越界，未知章节，多余参数，未知选项", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["03", "3.9"], /第 03 章没有实践 “3\.9”。可选实践：3\.1 .*、3\.2 /],
      [["03", "3.1", "--level", "5"], /--level 应当是 1 到 4 之间的整数/],
      [["03", "3.1", "--level", "二"], /--level 应当是 1 到 4 之间的整数/],
      [["99"], /可选章节：00 prologue/],
      [["03", "3.1", "extra"], /最多两个参数/],
      [["03", "--bogus"], /不认识的选项 --bogus/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await hint(...args);
      assert.equal(code, 2, `参数 ${JSON.stringify(args)}`);
      assert.equal(stderr.trim().split("\n").length, 1);
      assert.match(stderr, message);
    }
    const missing = await hint("03", "--dir", path.join(work.dir, "nowhere"));
    assert.equal(missing.code, 2, "写出的目录不存在是用法错误");
    assert.match(missing.stderr, /不存在：检查路径是否写对/);
  });

  test("--help 说明四级梯子", async () => {
    const { code, stdout } = await hint("--help");
    assert.equal(code, 0);
    assert.match(stdout, /用法：npm run hint -- <章节> \[实践\]/);
    assert.match(stdout, /1 定位文件 → 2 指出签名 → 3 伪代码 → 4 局部代码/);
  });
});

test("revealHint：hint 与 watch 的 h 共用一处展开；第一次看到的一级才写进度，旧的读数不会把别处记下的级数抹小", () => {
  const chapter = findChapter(loadChapters(LESSONS_DIR), "03");
  const lab = chapter.labs[0]!;
  const file = path.join(work.dir, "reveal", "progress.json");
  const stale = emptyProgress();

  const first = revealHint(file, stale, chapter, lab);
  assert.equal(first.step.level, 1);
  assert.equal(first.seen, 1);
  assert.equal(readProgress(file).hints["03"]?.[lab.id], 1);

  // 另一个进程（例如开着的 watch）在这期间已经看到了第 3 级
  updateProgress(file, (progress) => recordHint(progress, "03", lab.id, 3));
  const again = revealHint(file, stale, chapter, lab);
  assert.equal(again.step.level, 1, "按手里的读数给下一级");
  assert.equal(again.seen, 3, "记下的是较大的那一级");
  assert.equal(readProgress(file).hints["03"]?.[lab.id], 3);

  // 回看看过的一级：不写进度
  const before = readFileSync(file, "utf8");
  const review = revealHint(file, inspectLoaded(file), chapter, lab, 2);
  assert.equal(review.step.isNew, false);
  assert.equal(review.seen, 3);
  assert.equal(readFileSync(file, "utf8"), before);
});

// 下面三项本来各在 cli、terminal、concurrency 的测试里：hint 要读课文（它预测学习者会看到什么），
// 放在这里，那几个文件就不读课文，改一章课文时它们不必重跑。
describe("hint 的输出去处：终端、提前关闭的管道、相对的进度文件", () => {
  test("hint 05 5.1 --level 1 在 80 列和 120 列都不超宽、不折断标识符；管道里原样", { timeout: 60_000 }, async () => {
    const args = ["05", "5.1", "--level", "1"];
    const piped = await runScript("hint", args);
    assert.equal(piped.code, 0, piped.stderr);
    for (const columns of [80, 120]) {
      const { code, stdout, stderr } = await runScript("hint", args, { env: { PI_COURSE_COLUMNS: String(columns), NO_COLOR: undefined, FORCE_COLOR: "1" } });
      assert.equal(code, 0, stderr);
      assertFits(stdout, piped.stdout, columns, `hint ${columns} 列`);
    }
  });

  test("输出接进提前关闭的管道（npm run hint -- 03 3.1 --level 1 | head）：安静地结束，不打印 EPIPE 堆栈", { timeout: 60_000 }, async () => {
    const { code, stderr } = await runIntoClosedPipe("hint", ["03", "3.1", "--level", "1"], { PI_COURSE_PROGRESS: path.join(work.dir, "epipe-progress.json") });
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "");
  });

  test("相对的 PI_COURSE_PROGRESS 按敲命令的目录解析，不是套件目录", { timeout: 60_000 }, async () => {
    const typedIn = path.join(work.dir, "typed-in");
    mkdirSync(typedIn);
    // npm 把 cwd 换成套件目录，学习者敲命令的目录在 INIT_CWD 里
    const result = await runScript("hint", ["03", "3.1"], { env: { INIT_CWD: typedIn, PI_COURSE_PROGRESS: "notes/progress.json" } });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(existsSync(path.join(typedIn, "notes", "progress.json")));
    assert.ok(!existsSync(path.join(KIT, "notes")));
  });
});

function inspectLoaded(file: string) {
  const inspected = inspectProgress(file);
  assert.equal(inspected.state, "ok");
  return inspected.state === "ok" ? inspected.progress : emptyProgress();
}
