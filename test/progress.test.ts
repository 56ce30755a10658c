import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";

import type { Chapter } from "../scripts/engine/chapters.ts";
import { CourseError } from "../scripts/engine/errors.ts";
import {
  emptyProgress,
  hintCount,
  inspectProgress,
  loadProgress,
  progressPath,
  recordHint,
  recordVerified,
  saveProgress,
  updateProgress,
} from "../scripts/engine/progress.ts";
import { recordCheck, type PracticeCheck } from "../scripts/engine/verify.ts";
import { tempDir } from "./helpers.ts";

const work = tempDir("progress");
after(() => work.remove());

let counter = 0;
function freshFile(): string {
  const dir = path.join(work.dir, `case-${++counter}`);
  mkdirSync(dir, { recursive: true });
  return path.join(dir, "progress.json");
}

describe("进度文件的位置", () => {
  test("PI_COURSE_PROGRESS 优先，相对路径按当前目录解析", () => {
    assert.equal(progressPath({ PI_COURSE_PROGRESS: "/tmp/p.json", XDG_STATE_HOME: "/x" }, "linux"), "/tmp/p.json");
    assert.equal(progressPath({ PI_COURSE_PROGRESS: "p.json" }, "linux"), path.resolve("p.json"));
  });

  test("Linux / macOS：${XDG_STATE_HOME:-~/.local/state}/pi-course/progress.json；相对的 XDG_STATE_HOME 被忽略", () => {
    assert.equal(progressPath({ XDG_STATE_HOME: "/state" }, "linux"), "/state/pi-course/progress.json");
    assert.equal(progressPath({}, "darwin"), path.join(os.homedir(), ".local", "state", "pi-course", "progress.json"));
    assert.equal(progressPath({ XDG_STATE_HOME: "relative" }, "linux"), path.join(os.homedir(), ".local", "state", "pi-course", "progress.json"));
  });

  test("Windows：%LOCALAPPDATA%\\pi-course\\progress.json", () => {
    const local = "C:\\Users\\me\\AppData\\Local";
    assert.equal(progressPath({ LOCALAPPDATA: local }, "win32"), path.join(local, "pi-course", "progress.json"));
    assert.equal(progressPath({}, "win32"), path.join(os.homedir(), "AppData", "Local", "pi-course", "progress.json"));
  });
});

describe("读写", () => {
  test("文件不存在：空白进度，不创建任何文件", () => {
    const file = freshFile();
    const loaded = loadProgress(file);
    assert.deepEqual(loaded.progress, emptyProgress());
    assert.equal(loaded.warning, undefined);
    assert.ok(!existsSync(file));
  });

  test("写入是原子的：写完只剩 progress.json，读回来一模一样；目录不存在时自动创建", () => {
    const file = path.join(freshFile(), "..", "nested", "deeper", "progress.json");
    const progress = emptyProgress();
    recordVerified(progress, "03", { target: "a".repeat(40), verifiedAt: "2026-01-01T00:00:00.000Z", dir: "/p" });
    recordHint(progress, "03", "3.1", 2);
    progress.practiceDirs["03"] = "/p";
    saveProgress(file, progress);
    assert.deepEqual(readdirSync(path.dirname(file)), ["progress.json"]);
    assert.deepEqual(loadProgress(file).progress, progress);
    assert.equal((JSON.parse(readFileSync(file, "utf8")) as { version: number }).version, 1);
  });

  test("提示级别只升不降：回看低级别不抹掉记录", () => {
    const progress = emptyProgress();
    recordHint(progress, "03", "3.1", 3);
    recordHint(progress, "03", "3.1", 1);
    recordHint(progress, "03", "3.2", 1);
    assert.equal(progress.hints["03"]?.["3.1"], 3);
    assert.equal(hintCount(progress, "03"), 4);
  });

  test("updateProgress：读、改、写回", () => {
    const file = freshFile();
    updateProgress(file, (progress) => recordHint(progress, "02", "2.1", 1));
    updateProgress(file, (progress) => recordHint(progress, "02", "2.1", 2));
    assert.equal(loadProgress(file).progress.hints["02"]?.["2.1"], 2);
  });
});

describe("损坏的进度文件：读时只警告，写时才备份", () => {
  for (const [label, content, reason] of [
    ["不是 JSON", "{ 写了一半", /不是合法的 JSON/],
    ["不是对象", "[1, 2]", /不是对象/],
    ["字段类型不对：点名是哪个字段", JSON.stringify({ version: 1, hints: [] }), /字段 hints 类型不对（应当是对象，实际是数组）/],
    ["记录不完整", JSON.stringify({ version: 1, verified: { "03": { target: 5 } } }), /第 03 章的记录不完整/],
    ["提示级别越界", JSON.stringify({ version: 1, hints: { "03": { "3.1": 7 } } }), /提示级别不对/],
  ] as const) {
    test(label, () => {
      const file = freshFile();
      writeFileSync(file, content);
      const read = loadProgress(file);
      assert.deepEqual(read.progress, emptyProgress());
      assert.match(read.warning ?? "", reason);
      assert.match(read.warning ?? "", /这次按空白进度处理，文件原样保留/);
      assert.equal(read.backup, undefined);
      assert.equal(readFileSync(file, "utf8"), content, "只读：文件一字不动");
      assert.deepEqual(readdirSync(path.dirname(file)), ["progress.json"]);

      const written = updateProgress(file, (progress) => recordHint(progress, "03", "3.1", 1));
      assert.ok(written.backup && existsSync(written.backup));
      assert.equal(readFileSync(written.backup, "utf8"), content, "备份保留原文");
      assert.match(written.warning ?? "", reason);
      assert.ok(written.warning?.includes(`已备份到 ${written.backup}`), written.warning);
      assert.ok(written.warning?.includes(`要恢复旧文件：mv ${written.backup} ${file}`), written.warning);
      assert.equal(loadProgress(file).warning, undefined);
      assert.equal(loadProgress(file).progress.hints["03"]?.["3.1"], 1);
    });
  }

  test("空文件（0 字节）等于还没有进度：不警告、不备份，写入照常", () => {
    const file = freshFile();
    writeFileSync(file, "");
    const read = loadProgress(file);
    assert.deepEqual(read.progress, emptyProgress());
    assert.equal(read.warning, undefined);
    const written = updateProgress(file, (progress) => recordHint(progress, "03", "3.1", 1));
    assert.equal(written.warning, undefined);
    assert.equal(written.backup, undefined);
    assert.deepEqual(readdirSync(path.dirname(file)), ["progress.json"]);
    assert.equal(loadProgress(file).progress.hints["03"]?.["3.1"], 1);
  });

  test("来自更新版本的套件：读和写都拒绝（退出码 1，请先更新套件），文件原样不动、绝不重置", () => {
    const file = freshFile();
    const content = JSON.stringify({ version: 9, verified: { "03": { target: "x" } } });
    writeFileSync(file, content);
    const refused = (error: unknown) =>
      error instanceof CourseError &&
      error.code === "PROGRESS_NEWER" &&
      error.exitCode === 1 &&
      error.message.startsWith("进度文件来自更新版本的课程套件，请先更新套件（git pull && npm ci）");
    assert.throws(() => loadProgress(file), refused);
    assert.throws(() => updateProgress(file, (progress) => recordHint(progress, "03", "3.1", 1)), refused);
    assert.equal(inspectProgress(file).state, "newer");
    assert.equal(readFileSync(file, "utf8"), content);
    assert.deepEqual(readdirSync(path.dirname(file)), ["progress.json"]);
  });

  test("inspectProgress 只看不动：损坏的文件原地不动", () => {
    const file = freshFile();
    writeFileSync(file, "坏了");
    assert.equal(inspectProgress(file).state, "corrupt");
    assert.equal(readFileSync(file, "utf8"), "坏了");
  });

  test("写不进去时给出一句中文，并提到 PI_COURSE_PROGRESS", () => {
    const blocker = freshFile();
    writeFileSync(blocker, "这是一个文件，不是目录");
    assert.throws(
      () => saveProgress(path.join(blocker, "progress.json"), emptyProgress()),
      (error: unknown) => error instanceof CourseError && error.code === "PROGRESS_UNWRITABLE" && /PI_COURSE_PROGRESS/.test(error.message),
    );
  });
});

describe("verify 记下什么（recordCheck）", () => {
  const chapter = { id: "05" } as Chapter;
  const passed = { passed: true } as PracticeCheck;
  const failed = { passed: false } as PracticeCheck;
  const at = new Date("2026-03-01T00:00:00.000Z");
  const target = "b".repeat(40);

  test("从课程起点做完的：记作 course，记下目标、时间与目录", () => {
    const file = freshFile();
    recordCheck(file, { chapter, check: passed, marker: {}, target, dir: "/p5", now: at });
    const entry = loadProgress(file).progress.verified["05"];
    assert.deepEqual(entry, { target, verifiedAt: at.toISOString(), dir: "/p5", basis: "course" });
    assert.equal(loadProgress(file).progress.practiceDirs["05"], "/p5");
  });

  test("接续目录做完的：记作 own，自第几章起；--use-course 换来的文件照实记下", () => {
    const file = freshFile();
    const origin = { from: "/p4", chapter: "04", ownSince: "03", own: [], merged: [], mine: [], course: ["packages/pi-course/src/types.ts"] };
    recordCheck(file, { chapter, check: passed, marker: { origin }, target, dir: "/p5", now: at });
    const entry = loadProgress(file).progress.verified["05"];
    assert.equal(entry?.basis, "own");
    assert.equal(entry?.ownSince, "03");
    assert.deepEqual(entry?.courseFiles, ["packages/pi-course/src/types.ts"]);
  });

  test("没通过什么也不写：之前的点亮原样保留", () => {
    const file = freshFile();
    const marker = {};
    recordCheck(file, { chapter, check: passed, marker, target, dir: "/p5", now: at });
    const before = readFileSync(file, "utf8");
    assert.equal(recordCheck(file, { chapter, check: failed, marker, target, dir: "/other", now: new Date() }), undefined);
    assert.equal(readFileSync(file, "utf8"), before);
  });
});

test("verify 记下的指纹读回来还在（接续靠它判断目录变没变）；类型不对的可选字段只丢那一项", () => {
  const file = freshFile();
  const marker = {};
  recordCheck(file, { chapter: { id: "05" } as Chapter, check: { passed: true } as PracticeCheck, marker, target: "c".repeat(40), dir: "/p", now: new Date(), fingerprint: "f00d" });
  assert.equal(loadProgress(file).progress.verified["05"]?.fingerprint, "f00d");
  const raw = JSON.parse(readFileSync(file, "utf8")) as { verified: Record<string, Record<string, unknown>> };
  raw.verified["05"]!.fingerprint = 42;
  writeFileSync(file, JSON.stringify(raw));
  const entry = loadProgress(file).progress.verified["05"];
  assert.equal(entry?.fingerprint, undefined);
  assert.equal(entry?.dir, "/p");
});
