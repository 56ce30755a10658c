import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { argumentError, paint, wantsColor } from "../scripts/engine/cli.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { KIT, kitScriptArgs, runIntoClosedPipe, runScript, spawnProcess, tempDir } from "./helpers.ts";

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
    assert.match(stdout, /git worktree add \.\.\/pi-course-03 [0-9a-f]{8}\s+（做完本章再看答案）/);
    // 完整的命令只写一次，每个实践一行写出它的测试名模式与计数
    assert.ok(stdout.includes('  npm run build -w @pi/course && node --test --test-name-pattern="<模式>" packages/pi-course/dist/test/03-*.test.js'));
    assert.match(stdout, /^ {2}实践 3\.1 · .*"文本投影" → 1\/1/m);
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
    assert.ok(stdout.includes("  npm run build -w @pi/course && node --test packages/pi-course/dist/test/03-*.test.js\n"), "学习循环是一条 && 连起来的命令");
    assert.match(stdout, /在课程套件根目录 .* 运行（或在练习目录里直接 npm run verify）/);
    assert.ok(!existsSync(path.join(dir, ".git")));
    assert.ok(existsSync(path.join(dir, "LEARNING.md")));
    assert.ok(existsSync(path.join(dir, "node_modules", "typescript")));
    assert.ok(!existsSync(path.join(dir, "node_modules", "@pi")));
    assert.ok(!existsSync(path.join(dir, "packages/pi-course/src/types.ts")), "起点还没有 types.ts");
    const tests = readdirSync(path.join(dir, "packages/pi-course/test")).sort();
    assert.deepEqual(tests.at(-1), "03-message-ir.test.ts");
    assert.ok(!tests.some((file) => file.startsWith("04-")));
    const guide = readFileSync(path.join(dir, "LEARNING.md"), "utf8");
    assert.match(guide, /## 实践 3\.1/);
    assert.ok(guide.includes("npm run hint -- 03 3.1"), "卡片说明怎样要提示");
    assert.ok(guide.includes("lessons/03-message-ir/lesson.md"), "卡片指向课文，而不是抄一份");
    assert.ok(!guide.includes("<details>"), "卡片里没有折叠的提示");
    const chapter = loadChapters(LESSONS_DIR).find((candidate) => candidate.id === "03")!;
    for (const lab of chapter.labs) {
      for (const hint of Object.values(lab.hints)) assert.ok(!guide.includes(hint), `卡片里出现了实践 ${lab.id} 的提示原文`);
    }
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

  test("在练习目录里运行套件命令：经 kit.mjs 转交给套件，章节与目录由练习目录补上", { timeout: 60_000 }, async () => {
    const dir = path.join(work.dir, "ch02-kit-commands");
    const progress = path.join(work.dir, "ch02-kit-commands-progress.json");
    assert.equal((await runScript("practice", ["02", dir])).code, 0);
    const env = { ...process.env, NO_COLOR: "1", PI_COURSE_PROGRESS: progress };
    for (const args of [["run", "checkpoint", "-w", "@pi/course", "--", "03"], ["run", "checkpoint", "--", "03"]]) {
      const result = await spawnProcess("npm", ["--silent", ...args], { cwd: dir, env });
      assert.equal(result.code, 0, `${args.join(" ")}：${result.stderr}`);
      assert.match(result.stdout, /第 03 章 · 保存一次完整的工具往返/);
    }
    // practice 打印的“或在练习目录里直接 npm run verify”要成立
    const verify = await spawnProcess("npm", ["--silent", "run", "verify"], { cwd: dir, env });
    assert.equal(verify.code, 1, verify.stderr);
    assert.ok(verify.stdout.includes(`第 02 章 · `) && verify.stdout.includes(`验证 ${dir}`), verify.stdout);
    assert.match(verify.stderr, /^错误：第 02 章还没有通过/);
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

  test("对已有的本章练习目录再运行一次：接着做即可，退出码 2，一个文件都不动", async () => {
    const dir = path.join(work.dir, "again");
    assert.equal((await runScript("practice", ["02", dir])).code, 0);
    const before = readdirSync(dir).sort();
    const { code, stdout, stderr } = await runScript("practice", ["02", dir]);
    assert.equal(code, 2);
    assert.equal(stdout, "");
    assert.match(stderr, /这已经是第 02 章的练习目录，接着做即可；要重新开始请换一个目录/);
    assert.deepEqual(readdirSync(dir).sort(), before);
    const other = await runScript("practice", ["03", dir]);
    assert.equal(other.code, 2);
    assert.match(other.stderr, /是第 02 章的练习目录；第 03 章请换一个/);
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
    const child = spawn(process.execPath, [...kitScriptArgs("practice"), "03", dir], {
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

describe("所有命令共用的命令行约定", () => {
  test("输出接进提前关闭的管道（npm run status | head）：安静地结束，不打印 EPIPE 堆栈", { timeout: 60_000 }, async () => {
    // hint 的同一项检查在 hint.test.ts 里：它要读课文
    const progress = path.join(work.dir, "epipe-progress.json");
    for (const [script, args] of [["status", []], ["checkpoint", ["03"]], ["demo", []]] as const) {
      const { code, stderr } = await runIntoClosedPipe(script, args, { PI_COURSE_PROGRESS: progress });
      assert.equal(code, 0, `${script}：${stderr}`);
      assert.equal(stderr, "", script);
    }
  });

  test("缺少取值的选项：中文说明里没有英文占位符 <value>", async () => {
    const { code, stderr } = await runScript("hint", ["03", "3.1", "--level"]);
    assert.equal(code, 2);
    assert.equal(stderr.trim(), "错误：选项 --level 的用法不对：缺少取值。用 --help 查看用法");
    const error = argumentError(Object.assign(new Error("Option '--dir <value>' argument missing"), { code: "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" }));
    assert.equal(error.message, "选项 --dir 的用法不对：缺少取值。用 --help 查看用法");
    assert.equal(error.exitCode, 2);
  });

  test("颜色：NO_COLOR 非空时不上色、空值不算；FORCE_COLOR 非 0 时管道里也上色", () => {
    const tty = { isTTY: true };
    const pipe = { isTTY: false };
    assert.equal(wantsColor(tty, {}), true);
    assert.equal(wantsColor(pipe, {}), false);
    assert.equal(wantsColor(tty, { NO_COLOR: "1" }), false);
    assert.equal(wantsColor(tty, { NO_COLOR: "" }), true, "空的 NO_COLOR 不算设置");
    assert.equal(wantsColor(pipe, { FORCE_COLOR: "1" }), true);
    assert.equal(wantsColor(tty, { FORCE_COLOR: "0" }), false);
    assert.equal(wantsColor(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" }), false, "NO_COLOR 优先");

    const saved = { NO_COLOR: process.env.NO_COLOR, FORCE_COLOR: process.env.FORCE_COLOR };
    try {
      delete process.env.NO_COLOR;
      process.env.FORCE_COLOR = "1";
      assert.equal(paint("red", "红", pipe), "\u001b[31m红\u001b[39m");
      process.env.NO_COLOR = "1";
      assert.equal(paint("red", "红", pipe), "红");
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  test("FORCE_COLOR=1 时命令的输出接进管道也带颜色；NO_COLOR 设成空值不关颜色", async () => {
    const forced = await runScript("checkpoint", ["03"], { env: { NO_COLOR: "", FORCE_COLOR: "1" } });
    assert.equal(forced.code, 0);
    assert.ok(forced.stdout.startsWith("\u001b[1m第 03 章"), JSON.stringify(forced.stdout.slice(0, 20)));
    const plain = await runScript("checkpoint", ["03"], { env: { NO_COLOR: "1", FORCE_COLOR: "1" } });
    assert.ok(plain.stdout.startsWith("第 03 章"));
  });
});
