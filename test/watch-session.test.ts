import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { KIT_ROOT, LESSONS_DIR } from "../scripts/engine/paths.ts";
import type { Painter } from "../scripts/engine/screen.ts";
import { checkPractice, type PracticeCheck } from "../scripts/engine/verify.ts";
import { WatchSession } from "../scripts/engine/watch/session.ts";
import { tempDir } from "./helpers.ts";
import { practice, readProgress } from "./learner.ts";

const work = tempDir("watch-session");
after(() => work.remove());

const plain: Painter = (_style, text) => text;
const text = (session: WatchSession) => {
  const screen = session.screen("12:00:00");
  return [...screen.top, ...screen.body, ...screen.bottom].join("\n");
};

// 状态机不碰终端、不开进程：第 03 章的起点目录跑一次真实的检查，再把保存、结果与按键直接喂给它
describe("watch 的状态机：保存、结果与按键进，一屏内容出", () => {
  const chapters = loadChapters(LESSONS_DIR);
  const chapter = findChapter(chapters, "03");
  const dir = path.join(work.dir, "pi-practice-03");
  const progressFile = path.join(work.dir, "progress.json");
  let check: PracticeCheck;
  const session = () => new WatchSession({ kitRoot: KIT_ROOT, chapter, chapters, dir, progressFile, paint: plain });

  before(async () => {
    await practice("03", dir, progressFile);
    check = await checkPractice({ dir, chapter, chapters, scope: "focused" });
  });

  test("第一次运行结束前只有标题；结束后是当前实践、第一处偏差和提示行；保存两批还没出结果时两批一起算触发", () => {
    const watch = session();
    assert.doesNotMatch(text(watch), /当前实践/);
    watch.saved(["src/types.ts"], performance.now());
    watch.saved(["src/event-stream.ts"], performance.now());
    watch.finished(check, performance.now());
    const screen = text(watch);
    assert.match(screen, /当前实践：3\.1/);
    assert.match(screen, /第一处偏差：/);
    assert.match(screen, /提示：/);
    assert.match(screen, /第 1 次运行 · 用时 .* · 触发：packages\/pi-course\/src\/event-stream\.ts、packages\/pi-course\/src\/types\.ts/);
    assert.match(screen, /保存文件即重跑，Ctrl-C 退出/, "不读键盘时页脚不列按键");
    watch.keys = true;
    assert.match(text(watch), /按键：r 重跑、h 下一级提示、x 还原文件、q 退出/);
  });

  test("运行本身出错：说出错误，不留旧的结果", () => {
    const watch = session();
    watch.finished(check, performance.now());
    watch.finished(new Error("编译器不见了"), performance.now());
    const screen = text(watch);
    assert.match(screen, /这次运行出错了：编译器不见了/);
    assert.doesNotMatch(screen, /当前实践/);
  });

  test("按键：r 与回车重跑并记为手动触发，q 与 Ctrl-C 退出，第一次结果出来之前 h 什么也不做，别的键不理", async () => {
    const watch = session();
    assert.equal(await watch.key("h"), "none");
    assert.equal(await watch.key("z"), "none");
    assert.equal(await watch.key("q"), "stop");
    assert.equal(await watch.key("\u0003"), "stop");
    assert.equal(await watch.key("\r"), "rerun");
    assert.equal(await watch.key("r"), "rerun");
    watch.finished(check, performance.now());
    assert.match(text(watch), /触发：（手动重跑）/);
  });

  test("h：给当前实践的下一级提示并记进进度，再按一次升一级", async () => {
    const watch = session();
    watch.finished(check, performance.now());
    assert.equal(await watch.key("h"), "render");
    assert.match(text(watch), /提示 1\/4 · 定位文件/);
    assert.equal(readProgress(progressFile).hints["03"]?.["3.1"], 1);
    await watch.key("h");
    assert.match(text(watch), /提示 2\/4/);
    assert.equal(readProgress(progressFile).hints["03"]?.["3.1"], 2);
  });

  test("x：先选文件、再按 y 确认；你的版本先进备份；其他键取消，文件原样；还原中 Ctrl-C 仍然退出", async () => {
    const watch = session();
    watch.finished(check, performance.now());
    const file = path.join(dir, chapter.teachingFiles[1]!); // event-stream.ts：第 02 章写的，起点就有
    const start = readFileSync(file, "utf8");
    writeFileSync(file, `${start}\n// 我的草稿\n`);

    assert.equal(await watch.key("x"), "render");
    assert.match(text(watch), /还原哪个文件到本章起点？按数字选择，其他键取消：\n {2}1 {2}packages\/pi-course\/src\/types\.ts\n {2}2 {2}packages\/pi-course\/src\/event-stream\.ts/);
    assert.equal(await watch.key("9"), "render");
    assert.match(text(watch), /没有还原，文件原样未动/);
    assert.match(readFileSync(file, "utf8"), /我的草稿/);

    await watch.key("x");
    assert.equal(await watch.key("\u0003"), "stop");
    await watch.key("n"); // 还在选文件：取消

    await watch.key("x");
    await watch.key("2");
    assert.match(text(watch), /按 y 确认，其他键取消/);
    assert.equal(await watch.key("y"), "render");
    assert.match(text(watch), /已把 packages\/pi-course\/src\/event-stream\.ts 还原到本章起点/);
    assert.equal(readFileSync(file, "utf8"), start);
    const backups = readdirSync(path.join(dir, ".pi-course/backup"));
    assert.equal(backups.length, 1);
    assert.ok(existsSync(path.join(dir, ".pi-course/backup", backups[0]!, chapter.teachingFiles[1]!)));

    await watch.key("x");
    await watch.key("2");
    assert.match(text(watch), /已经是本章起点的样子，什么也没做/);
  });
});
