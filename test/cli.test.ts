import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { KIT, runScript, spawnProcess, tempDir, TSX } from "./helpers.ts";

const work = tempDir("cli");
after(() => work.remove());

interface CheckpointJson {
  id: string;
  commits: { parent: string; target: string; steps: Record<string, string> };
}

describe("checkpoint：定位一章", () => {
  let card: CheckpointJson;
  before(async () => {
    const result = await runScript("checkpoint", ["03", "--json"]);
    assert.equal(result.code, 0, result.stderr);
    card = JSON.parse(result.stdout) as CheckpointJson;
  });

  test("卡片列出标题、起点与目标的短哈希和完整哈希、聚焦测试、实践命令与查看差异的命令", async () => {
    const { code, stdout } = await runScript("checkpoint", ["03"]);
    assert.equal(code, 0);
    assert.match(stdout, /第 03 章 · 保存一次完整的工具往返/);
    assert.ok(stdout.includes(card.commits.parent) && stdout.includes(card.commits.target));
    assert.ok(stdout.includes(`git diff ${card.commits.parent.slice(0, 8)} ${card.commits.target.slice(0, 8)} -- packages/pi-course`));
    assert.ok(stdout.includes("git worktree add"));
    assert.ok(stdout.includes('node --test --test-name-pattern="文本投影" packages/pi-course/dist/test/03-*.test.js'));
    assert.match(stdout, /TS2305/);
    assert.match(stdout, /聚焦测试：packages\/pi-course\/test\/03-message-ir\.test\.ts（4 项）/);
  });

  test("3、03、slug 与目录名指向同一章", async () => {
    for (const input of ["3", "message-ir", "03-message-ir"]) {
      const { code, stdout } = await runScript("checkpoint", [input, "--json"]);
      assert.equal(code, 0);
      assert.equal((JSON.parse(stdout) as CheckpointJson).commits.target, card.commits.target);
    }
  });

  test("在 @pi/course 工作区里运行与根目录的形式输出相同", { timeout: 60_000 }, async () => {
    const root = await spawnProcess("npm", ["run", "--silent", "checkpoint", "--", "03"], { cwd: KIT, env: { ...process.env, NO_COLOR: "1" } });
    const workspace = await spawnProcess("npm", ["run", "--silent", "checkpoint", "-w", "@pi/course", "--", "03"], {
      cwd: KIT,
      env: { ...process.env, NO_COLOR: "1" },
    });
    assert.equal(root.code, 0, root.stderr);
    assert.equal(workspace.code, 0, workspace.stderr);
    assert.equal(workspace.stdout, root.stdout);
  });

  test("未知章节、99 与空参数：一行中文错误，退出码 2，并列出可选章节", async () => {
    for (const args of [["99"], ["not-a-chapter"], [""], []]) {
      const { code, stderr, stdout } = await runScript("checkpoint", args);
      assert.equal(code, 2, `参数 ${JSON.stringify(args)}`);
      assert.equal(stdout, "");
      assert.equal(stderr.trim().split("\n").length, 1);
      assert.match(stderr, /^错误：/);
      assert.match(stderr, /可选章节：00 prologue/);
    }
  });

  test("--help 说明用法，未知选项是用法错误", async () => {
    const help = await runScript("checkpoint", ["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /用法：npm run checkpoint/);
    const bad = await runScript("checkpoint", ["03", "--bogus"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /不认识的选项 --bogus/);
  });
});

describe("practice：创建练习目录", () => {
  test("起点代码 + 本章聚焦测试 + LEARNING.md，没有 .git，依赖已链接", async () => {
    const dir = path.join(work.dir, "ch03");
    const started = Date.now();
    const { code, stdout, stderr } = await runScript("practice", ["03", dir]);
    assert.equal(code, 0, stderr);
    assert.ok(Date.now() - started < 10_000);
    assert.match(stdout, /已创建第 03 章练习目录/);
    assert.ok(!existsSync(path.join(dir, ".git")));
    assert.ok(existsSync(path.join(dir, "LEARNING.md")));
    assert.ok(existsSync(path.join(dir, "node_modules", "typescript")));
    assert.ok(!existsSync(path.join(dir, "node_modules", "@pi")));
    assert.ok(!existsSync(path.join(dir, "packages/pi-course/src/types.ts")), "起点还没有 types.ts");
    const tests = readdirSync(path.join(dir, "packages/pi-course/test")).sort();
    assert.deepEqual(tests.at(-1), "03-message-ir.test.ts");
    assert.ok(!tests.some((file) => file.startsWith("04-")));
    const guide = readFileSync(path.join(dir, "LEARNING.md"), "utf8");
    assert.match(guide, /实践 3\.1/);
    assert.match(guide, /定位文件/);
  });

  test("学习者的第一条命令在练习目录里给出声明的 tsc 红灯", { timeout: 60_000 }, async () => {
    const dir = path.join(work.dir, "ch03-red");
    assert.equal((await runScript("practice", ["03", dir])).code, 0);
    const build = await spawnProcess("npm", ["run", "build", "-w", "@pi/course"], { cwd: dir });
    assert.notEqual(build.code, 0);
    const output = build.stdout + build.stderr;
    assert.match(output, /error TS2305: .*AssistantMessageEventStream/);
    assert.match(output, /error TS2307: .*'\.\.\/src\/types\.js'/);
  });

  test("在练习目录里运行套件命令：一句中文说明该去哪里运行，退出码 2", { timeout: 60_000 }, async () => {
    const dir = path.join(work.dir, "ch02-kit-commands");
    assert.equal((await runScript("practice", ["02", dir])).code, 0);
    for (const args of [["run", "checkpoint", "-w", "@pi/course", "--", "03"], ["run", "checkpoint", "--", "03"]]) {
      const result = await spawnProcess("npm", ["--silent", ...args], { cwd: dir });
      assert.equal(result.code, 2, args.join(" "));
      assert.match(result.stderr, /这里是课程项目，不是课程套件/);
    }
  });

  test("相对目录按敲命令时所在的目录解析", async () => {
    const cwd = path.join(work.dir, "here");
    mkdirSync(cwd);
    const { code, stderr } = await runScript("practice", ["2", "ch02"], { cwd });
    assert.equal(code, 0, stderr);
    assert.ok(existsSync(path.join(cwd, "ch02", "packages/pi-course/test/02-event-stream.test.ts")));
  });

  test("已存在的非空目录：拒绝，退出码 2，原有文件一字不改", async () => {
    const dir = path.join(work.dir, "busy");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "notes.md"), "我的笔记");
    const { code, stderr } = await runScript("practice", ["03", dir]);
    assert.equal(code, 2);
    assert.match(stderr, /不是空目录/);
    assert.deepEqual(readdirSync(dir), ["notes.md"]);
    assert.equal(readFileSync(path.join(dir, "notes.md"), "utf8"), "我的笔记");
  });

  test("已存在的空目录可以直接使用", async () => {
    const dir = path.join(work.dir, "empty");
    mkdirSync(dir);
    const { code, stderr } = await runScript("practice", ["01", dir]);
    assert.equal(code, 0, stderr);
    assert.ok(existsSync(path.join(dir, "LEARNING.md")));
  });

  test("套件之内的目录：拒绝，退出码 2，什么也不创建", async () => {
    const dir = path.join(KIT, "packages", "ch03-inside");
    const { code, stderr } = await runScript("practice", ["03", dir]);
    assert.equal(code, 2);
    assert.match(stderr, /位于课程套件之内/);
    assert.ok(!existsSync(dir));
  });

  test("未知章节：退出码 2，不创建目录", async () => {
    const dir = path.join(work.dir, "never");
    const { code, stderr } = await runScript("practice", ["99", dir]);
    assert.equal(code, 2);
    assert.match(stderr, /没有第 “99” 章/);
    assert.ok(!existsSync(dir));
  });

  test("中途被打断（Ctrl-C）：不留下半成品目录，也不留下临时目录", { timeout: 30_000 }, async () => {
    const parent = path.join(work.dir, "interrupt");
    mkdirSync(parent);
    const dir = path.join(parent, "ch03");
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, ["--import", TSX, path.join(KIT, "scripts/practice.ts"), "03", dir], {
      cwd: KIT,
      env: { ...process.env, PI_COURSE_TEST_PAUSE_BEFORE_RENAME: "1", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    await new Promise<void>((resolve) => {
      child.stderr.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("pause-before-rename")) resolve();
      });
    });
    child.kill("SIGINT");
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    assert.equal(code, 130);
    assert.deepEqual(readdirSync(parent), []);
  });
});
