import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { citedHashes } from "../scripts/engine/lesson.ts";
import { cloneKit, git, runScript, spawnProcess, tempDir } from "./helpers.ts";

const work = tempDir("authoring");
after(() => work.remove());

const IDENTITY = ["-c", "user.name=Author", "-c", "user.email=author@example.invalid"];

/** 在编辑分支上用普通 git 把 change 做的修改并进第 id 章的提交：commit --fixup，再 rebase --autosquash。 */
async function amendChapter(editDir: string, id: string, change: () => void): Promise<void> {
  const log = await git(editDir, "log", "--format=%H %s");
  const commit = log.split("\n").find((line) => line.includes(`course(${id}): `))?.split(" ")[0];
  assert.ok(commit, `编辑分支上应有 course(${id}) 提交`);
  const base = log.split("\n").at(-1)?.split(" ")[0] ?? "";
  change();
  await git(editDir, "add", "-A");
  await git(editDir, ...IDENTITY, "commit", "--quiet", `--fixup=${commit}`);
  const rebase = await spawnProcess("git", [...IDENTITY, "rebase", "--quiet", "-i", "--autosquash", base], {
    cwd: editDir,
    env: { ...process.env, GIT_SEQUENCE_EDITOR: "true" },
  });
  assert.equal(rebase.code, 0, rebase.stderr);
}

/**
 * 作者的完整工作流：edit 打开历史的 worktree → 用普通 git 把修改并进第 02 章 →
 * export 写回补丁、重新盖哈希、同步 packages/pi-course → 自检仍然全绿。
 */
test("作者用 edit / export 修改第 02 章：补丁、课文哈希与 packages/pi-course 一起更新，自检仍通过", { timeout: 120_000 }, async () => {
  const kit = await cloneKit(work.dir);
  const editDir = path.join(work.dir, "edit");
  const lessonPath = path.join(kit, "lessons", "02-event-stream", "lesson.md");
  const citedBefore = citedHashes(readFileSync(lessonPath, "utf8"));

  const opened = await runScript("course", ["edit", editDir], { kit, cwd: kit });
  assert.equal(opened.code, 0, opened.stderr);

  const file = path.join(editDir, "packages/pi-course/src/event-stream.ts");
  const marker = "一条单次使用、可以被两种方式读取的异步事件流。";
  await amendChapter(editDir, "02", () => {
    writeFileSync(file, readFileSync(file, "utf8").replace("一条单次使用的异步事件流。", marker));
  });

  const exported = await runScript("course", ["export"], { kit, cwd: kit });
  assert.equal(exported.code, 0, exported.stderr);
  assert.match(exported.stdout, /已从 course\/edit 导出 \d+ 章/);
  assert.match(exported.stdout, /课程静态检查通过：00、/, "export 之后接着做静态检查");

  assert.ok(readFileSync(path.join(kit, "lessons/02-event-stream/chapter.patch"), "utf8").includes(marker));
  assert.ok(readFileSync(path.join(kit, "packages/pi-course/src/event-stream.ts"), "utf8").includes(marker));
  const citedAfter = citedHashes(readFileSync(lessonPath, "utf8"));
  assert.equal(citedAfter.start, citedBefore.start, "第 02 章的起点没有变");
  assert.notEqual(citedAfter.target, citedBefore.target, "第 02 章的目标必须重新盖章");

  const checked = await runScript("course", ["check", "02"], { kit, cwd: kit });
  assert.equal(checked.code, 0, checked.stdout + checked.stderr);
});

test("packages/pi-course 有未提交的改动时，export 拒绝覆盖", { timeout: 60_000 }, async () => {
  const kit = await cloneKit(work.dir, "dirty");
  await runScript("course", ["edit", path.join(work.dir, "dirty-edit")], { kit, cwd: kit });
  const draft = path.join(kit, "packages/pi-course/src/draft.ts");
  writeFileSync(draft, "export const draft = 1;\n");
  const result = await runScript("course", ["export"], { kit, cwd: kit });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /未提交的改动/);
  assert.equal(readFileSync(draft, "utf8"), "export const draft = 1;\n");
});

/** 脚手架不另存：作者改了目标，练习目录切出的脚手架随之改变。 */
test("作者改第 06 章的目标：区域外的改动进入练习目录，区域内的改动仍被切掉", { timeout: 120_000 }, async () => {
  const kit = await cloneKit(work.dir, "regions");
  const editDir = path.join(work.dir, "regions-edit");
  assert.equal((await runScript("course", ["edit", editDir], { kit, cwd: kit })).code, 0);
  const file = path.join(editDir, "packages/pi-course/src/tools.ts");
  const outside = "/** 参数约定：执行前据此检查，也据此生成发给 Provider 的 JSON Schema（作者改过这句）。 */";
  const inside = "    // 这句注释写在实践 6.2 的区域里。";
  await amendChapter(editDir, "06", () => {
    const source = readFileSync(file, "utf8");
    const edited = source
      .replace("/** 参数约定：执行前据此检查，也据此生成发给 Provider 的 JSON Schema。 */", outside)
      .replace("    return this.tools.get(name);\n", `${inside}\n    return this.tools.get(name);\n`);
    assert.notEqual(edited, source);
    writeFileSync(file, edited);
  });
  const exported = await runScript("course", ["export"], { kit, cwd: kit });
  assert.equal(exported.code, 0, exported.stderr);

  const practice = path.join(work.dir, "regions-practice");
  const made = await runScript("practice", ["06", practice], { kit, cwd: kit });
  assert.equal(made.code, 0, made.stderr);
  const starter = readFileSync(path.join(practice, "packages/pi-course/src/tools.ts"), "utf8");
  assert.ok(starter.includes(outside), "区域外的改动原样进入练习目录");
  assert.ok(!starter.includes(inside.trim()), "区域里的内容不进入练习目录");
  assert.ok(starter.includes('  get(name: string): AgentTool | undefined {\n    throw new Error("Lab 6.2 尚未实现");\n  }'));
});
