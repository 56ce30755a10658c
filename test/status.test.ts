import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { nextChapter } from "../scripts/engine/course-map.ts";
import { KIT, runScript, spawnProcess, tempDir } from "./helpers.ts";
import { card } from "./learner.ts";

const work = tempDir("status");
after(() => work.remove());

let counter = 0;
function progressFile(content?: unknown): string {
  const dir = path.join(work.dir, `p${++counter}`);
  mkdirSync(dir);
  const file = path.join(dir, "progress.json");
  if (content !== undefined) writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content));
  return file;
}

const status = (progress: string, ...args: string[]) => runScript("status", args, { env: { PI_COURSE_PROGRESS: progress } });

test("下一章的规则：点亮的最高一章之后第一章没点亮的；后面都亮了就回头找；全亮了没有下一章", () => {
  const chapters = loadChapters(LESSONS_DIR);
  const lit = (...ids: string[]) => ({ verified: Object.fromEntries(ids.map((id) => [id, { target: "", verifiedAt: "", dir: "" }])) });
  const last = chapters.at(-1)!.id;
  assert.equal(nextChapter(chapters, lit())?.id, "00");
  assert.equal(nextChapter(chapters, lit("03"))?.id, "04");
  assert.equal(nextChapter(chapters, lit("00", "01", "03", "04"))?.id, "05");
  assert.equal(nextChapter(chapters, lit("01", last))?.id, "00");
  assert.equal(nextChapter(chapters, lit(...chapters.map((chapter) => chapter.id))), undefined);
});

test("做完最后一章以后回头补：先回到进行中（有练习目录、没点亮）的那章，它在地图上标为进行中，不叫“下一章”", async () => {
  const chapters = loadChapters(LESSONS_DIR);
  const last = chapters.at(-1)!.id;
  const verified = Object.fromEntries(["01", last].map((id) => [id, { target: "", verifiedAt: new Date().toISOString(), dir: "" }]));
  assert.equal(nextChapter(chapters, { verified, practiceDirs: { "05": "/tmp/p05" } })?.id, "05");
  const { code, stdout, stderr } = await status(progressFile({ version: 1, verified, hints: {}, practiceDirs: { "05": path.join(work.dir, "p05") } }));
  assert.equal(code, 0, stderr);
  assert.match(stdout, /◐ 05 .*进行中\s+← 回头补/);
  assert.match(stdout, /^回头补：第 05 章 · /m);
  assert.doesNotMatch(stdout, /下一章/);
  assert.match(stdout, /○ 00 /);
});

describe("status：学习地图", () => {
  test("空白进度：按部分列出规划的章节，二十章都已开放，下一章是 00", async () => {
    const { code, stdout, stderr } = await status(progressFile());
    assert.equal(code, 0, stderr);
    assert.match(stdout, /学习地图\s+已点亮 0\/\d+ 章（规划 20 章）/);
    for (const part of ["第一部分 地基", "第二部分 真实的智能体", "第三部分 有状态的运行时", "第四部分 扩展"]) assert.ok(stdout.includes(part), part);
    assert.match(stdout, /○ 03 保存一次完整的工具往返/);
    assert.match(stdout, /○ 19 持久会话：先提交再显示，上下文从只追加的记录拼出/);
    assert.doesNotMatch(stdout, /未开放/, "二十章都已开放");
    assert.match(stdout, /○ 00 .*← 下一章/);
    assert.match(stdout, /下一章：第 00 章 · /);
    assert.match(stdout, /提示：共展开 0 级 · 进度文件：/);
  });

  test("verify 点亮过的章节亮起来，下一章顺延，显示用了几级提示与练习目录", async () => {
    const { commits } = await card("00");
    const practiceDir = path.join(work.dir, "my-practice-01");
    mkdirSync(practiceDir);
    writeFileSync(path.join(practiceDir, ".pi-course-practice.json"), JSON.stringify({ chapter: "01", slug: "typescript-survival", start: "x", kitRoot: KIT }));
    const file = progressFile({
      version: 1,
      verified: { "00": { target: commits.target, verifiedAt: new Date().toISOString(), dir: "/somewhere" } },
      hints: { "01": { "1.1": 2, "1.2": 1 } },
      practiceDirs: { "01": practiceDir },
    });
    const { code, stdout } = await status(file);
    assert.equal(code, 0);
    assert.match(stdout, /已点亮 1\/\d+ 章/);
    assert.match(stdout, /● 00 .*已点亮 \d\d-\d\d/);
    assert.match(stdout, /◐ 01 .*进行中\s+← 下一章\s+提示 3 级/);
    assert.match(stdout, /下一章：第 01 章/);
    assert.ok(stdout.includes(`练习目录：${practiceDir}`));
    assert.match(stdout, /npm run verify -- 01/);
    assert.match(stdout, /共展开 3 级/);
  });

  test("课程更新后（目标哈希变了）旧的点亮仍然亮，但标出可以重新 verify", async () => {
    const file = progressFile({ version: 1, verified: { "02": { target: "0".repeat(40), verifiedAt: new Date().toISOString(), dir: "/x" } } });
    const { stdout } = await status(file);
    assert.match(stdout, /● 02 .*课程已更新，可重新 verify/);
  });

  test("--json 给出同样的地图", async () => {
    const { code, stdout } = await status(progressFile(), "--json");
    assert.equal(code, 0);
    const map = JSON.parse(stdout) as { planned: number; lit: number; next: { id: string }; parts: Array<{ title: string; chapters: Array<{ id: string; state: string }> }> };
    assert.equal(map.planned, 20);
    assert.equal(map.lit, 0);
    assert.equal(map.next.id, "00");
    assert.equal(map.parts[3]?.chapters.at(-1)?.id, "19");
    assert.ok(map.parts.every((part) => part.chapters.every((chapter) => chapter.state !== "planned")), "二十章都已开放");
  });

  test("损坏的进度文件：一行警告，按空白进度显示；status 只读，文件原样不动、也不备份", async () => {
    const file = progressFile("{ 写到一半断电了");
    const { code, stdout, stderr } = await status(file);
    assert.equal(code, 0);
    assert.match(stderr, /^注意：进度文件 .* 不是合法的 JSON：这次按空白进度处理，文件原样保留/);
    assert.equal(stderr.trim().split("\n").length, 1);
    assert.match(stdout, /已点亮 0\//);
    assert.deepEqual(readdirSync(path.dirname(file)), ["progress.json"]);
    assert.equal(readFileSync(file, "utf8"), "{ 写到一半断电了");
  });

  test("来自更新版本套件的进度文件：拒绝显示（退出码 1），请先更新套件，文件原样不动", async () => {
    const content = JSON.stringify({ version: 2, verified: {} });
    const file = progressFile(content);
    const { code, stdout, stderr } = await status(file);
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.match(stderr, /^错误：进度文件来自更新版本的课程套件，请先更新套件（git pull && npm ci）/);
    assert.equal(readFileSync(file, "utf8"), content);
  });

  test("空的进度文件等于还没有进度：不警告", async () => {
    const { code, stderr } = await status(progressFile(""));
    assert.equal(code, 0);
    assert.equal(stderr, "");
  });

  test("跳着做：只点亮了 03，下一章是 04，而不是 00", async () => {
    const { commits } = await card("03");
    const file = progressFile({ version: 1, verified: { "03": { target: commits.target, verifiedAt: new Date().toISOString(), dir: "/x" } } });
    const { stdout } = await status(file);
    assert.match(stdout, /○ 04 .*← 下一章/);
    assert.match(stdout, /下一章：第 04 章/);
  });

  test("npm start 就是 status", { timeout: 60_000 }, async () => {
    const { code, stdout, stderr } = await spawnProcess("npm", ["start", "--silent"], {
      cwd: KIT,
      env: { ...process.env, NO_COLOR: "1", PI_COURSE_PROGRESS: progressFile() },
    });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /学习地图/);
  });

  test("错误的输入：多余参数与未知选项是用法错误；--help 说明进度文件的位置", async () => {
    for (const args of [["03"], ["--bogus"]]) {
      const { code, stderr } = await status(progressFile(), ...args);
      assert.equal(code, 2);
      assert.match(stderr, /^错误：/);
    }
    const help = await status(progressFile(), "--help");
    assert.equal(help.code, 0);
    assert.match(help.stdout, /PI_COURSE_PROGRESS/);
    assert.match(help.stdout, /XDG_STATE_HOME/);
  });
});
