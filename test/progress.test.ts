import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";

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

describe("损坏的进度文件：警告、备份、从空白开始", () => {
  for (const [label, content, reason] of [
    ["不是 JSON", "{ 写了一半", /不是合法的 JSON/],
    ["不是对象", "[1, 2]", /不是对象/],
    ["来自更新的套件", JSON.stringify({ version: 9, verified: {} }), /来自更新版本的课程套件/],
    ["字段类型不对", JSON.stringify({ version: 1, verified: { "03": { target: 5 } } }), /第 03 章的记录不完整/],
    ["提示级别越界", JSON.stringify({ version: 1, hints: { "03": { "3.1": 7 } } }), /提示级别不对/],
  ] as const) {
    test(label, () => {
      const file = freshFile();
      writeFileSync(file, content);
      const loaded = loadProgress(file);
      assert.deepEqual(loaded.progress, emptyProgress());
      assert.match(loaded.warning ?? "", reason);
      assert.match(loaded.warning ?? "", /已备份为 progress\.json\.corrupt-/);
      assert.ok(loaded.backup && existsSync(loaded.backup));
      assert.equal(readFileSync(loaded.backup, "utf8"), content, "备份保留原文");
      assert.ok(!existsSync(file), "原位置让给新的进度");
      // 之后的写入正常
      updateProgress(file, (progress) => recordHint(progress, "03", "3.1", 1));
      assert.equal(loadProgress(file).warning, undefined);
    });
  }

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
