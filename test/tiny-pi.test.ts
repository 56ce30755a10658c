import assert from "node:assert/strict";
import { existsSync, mkdirSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import test from "node:test";

import { repairLinks } from "../scripts/engine/doctor.js";
import { createLink, expectedLinks, ownBinLinks, practiceLinks } from "../scripts/engine/links.js";
import { hasPty, KIT, runCommandInTerminal, spawnProcess, tempDir } from "./helpers.js";

// tiny-pi 是第 13 章做出来的命令。这里证明套件一侧的承诺：npm ci 之后 node_modules/.bin/tiny-pi 就能用，
// 离线回答“项目名是什么”；练习目录里的 .bin/tiny-pi 指向练习目录自己的代码，绝不指向套件里的答案。

const BIN = path.join(KIT, "node_modules", ".bin", "tiny-pi");
const TASK = "请读取 README，然后告诉我项目名";

/** 一个任意的项目文件夹（不在套件里），带一份 README，和一个放会话的临时目录。 */
function projectWithReadme() {
  const temp = tempDir("tiny-pi");
  const cwd = path.join(temp.dir, "some-project");
  mkdirSync(cwd);
  writeFileSync(path.join(cwd, "README.md"), "# 银河测绘\n\n随便一个项目。\n");
  const env = { ...process.env, PI_COURSE_AGENT_DIR: path.join(temp.dir, "agent"), PI_COURSE_BASE_URL: "", npm_lifecycle_event: "" };
  return { ...temp, cwd, env };
}

test("套件的 node_modules/.bin/tiny-pi 在任意有 README 的文件夹里离线回答项目名", { timeout: 60_000 }, async (t) => {
  assert.ok(existsSync(BIN), "npm ci 之后应当有 node_modules/.bin/tiny-pi（@pi/course 的 bin）");
  const project = projectWithReadme();
  t.after(project.remove);
  const printed = await spawnProcess(BIN, ["-p", TASK], { cwd: project.cwd, env: project.env });
  assert.equal(printed.code, 0, printed.stderr);
  assert.equal(printed.stdout, "项目名是「银河测绘」（取自 README.md 的第一个一级标题）。\n");

  const json = await spawnProcess(BIN, ["--mode", "json", TASK], { cwd: project.cwd, env: project.env });
  assert.equal(json.code, 0, json.stderr);
  const events = json.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { type: string });
  assert.equal(events[0]?.type, "agent_start");
  assert.equal(events.at(-1)?.type, "agent_end");

  const unknown = await spawnProcess(BIN, ["--verbose"], { cwd: project.cwd, env: project.env });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /不认识的选项 --verbose/);
});

test("tiny-pi 接在 head 后面：下游读完一行就关掉管道，不崩溃、不打印堆栈", { timeout: 60_000 }, async (t) => {
  const project = projectWithReadme();
  t.after(project.remove);
  const piped = await spawnProcess("sh", ["-c", `'${BIN}' --mode json '${TASK}' | head -n 1`], { cwd: project.cwd, env: project.env });
  assert.match(piped.stdout, /^\{"type":"agent_start"\}\n/);
  assert.doesNotMatch(piped.stderr, /EPIPE|at .*\.js/);
});

test("交互模式在真实的伪终端里：回答问题，Ctrl-C 一次提醒，连按两次离开", { timeout: 60_000, skip: !hasPty && "这台机器没有 script 命令" }, async (t) => {
  const project = projectWithReadme();
  t.after(project.remove);
  const terminal = runCommandInTerminal([BIN], project.cwd, { PI_COURSE_AGENT_DIR: project.env.PI_COURSE_AGENT_DIR, PI_COURSE_BASE_URL: "" });
  t.after(() => terminal.child.kill());
  await terminal.waitFor(/tiny-pi> /);
  terminal.child.stdin.write(`${TASK}\r`);
  await terminal.waitFor(/项目名是「银河测绘」/);
  terminal.child.stdin.write("\x03");
  await terminal.waitFor(/再按一次 Ctrl-C 离开/);
  terminal.child.stdin.write("\x03");
  assert.equal(await terminal.closed, 0);
});

test("练习目录的 .bin/tiny-pi 指向练习目录自己的包；套件工作区的命令不被链接进去", () => {
  const temp = tempDir("links");
  try {
    // 一个最小的“套件”：一个普通依赖的命令，和一个工作区包的命令（像 npm ci 建出的那样）。
    const kit = path.join(temp.dir, "kit");
    mkdirSync(path.join(kit, "packages", "pi-course", "bin"), { recursive: true });
    writeFileSync(path.join(kit, "packages", "pi-course", "bin", "tiny-pi.js"), "// 套件里的答案\n");
    mkdirSync(path.join(kit, "node_modules", "typescript", "bin"), { recursive: true });
    writeFileSync(path.join(kit, "node_modules", "typescript", "bin", "tsc"), "");
    mkdirSync(path.join(kit, "node_modules", "@pi"), { recursive: true });
    symlinkSync("../../packages/pi-course", path.join(kit, "node_modules", "@pi", "course"));
    mkdirSync(path.join(kit, "node_modules", ".bin"));
    symlinkSync("../typescript/bin/tsc", path.join(kit, "node_modules", ".bin", "tsc"));
    symlinkSync("../@pi/course/bin/tiny-pi.js", path.join(kit, "node_modules", ".bin", "tiny-pi"));

    const names = expectedLinks(kit).map((link) => link.name);
    assert.ok(names.includes(".bin/tsc"));
    assert.ok(!names.includes(".bin/tiny-pi"), "套件工作区包的命令不该链接进练习目录");

    // 第 13 章之前的练习目录：包里还没有 bin，就没有 tiny-pi。
    const practice = path.join(temp.dir, "practice");
    mkdirSync(path.join(practice, "packages", "pi-course", "bin"), { recursive: true });
    writeFileSync(path.join(practice, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course" }));
    assert.deepEqual(ownBinLinks(practice), []);

    writeFileSync(path.join(practice, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course", bin: { "tiny-pi": "bin/tiny-pi.js" } }));
    writeFileSync(path.join(practice, "packages", "pi-course", "bin", "tiny-pi.js"), "// 学习者自己的代码\n");
    for (const link of practiceLinks(kit, practice)) createLink(practice, link);
    const own = path.join(practice, "node_modules", ".bin", "tiny-pi");
    assert.equal(realpathSync(own), realpathSync(path.join(practice, "packages", "pi-course", "bin", "tiny-pi.js")));
    assert.ok(!path.isAbsolute(readlinkSync(own)), "指向练习目录自己文件的链接用相对路径");
    assert.ok((statSync(own).mode & 0o100) !== 0, "命令文件要有可执行位");
    assert.equal(realpathSync(path.join(practice, "node_modules", ".bin", "tsc")), realpathSync(path.join(kit, "node_modules", "typescript", "bin", "tsc")));

    // 旧的练习目录：.bin/tiny-pi 还指向套件里的答案。doctor --fix 把它换成练习目录自己的。
    const old = path.join(temp.dir, "old-practice");
    mkdirSync(path.join(old, "packages", "pi-course", "bin"), { recursive: true });
    writeFileSync(path.join(old, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course", bin: { "tiny-pi": "bin/tiny-pi.js" } }));
    writeFileSync(path.join(old, "packages", "pi-course", "bin", "tiny-pi.js"), "// 学习者自己的代码\n");
    for (const link of expectedLinks(kit)) createLink(old, link);
    symlinkSync(path.join(kit, "node_modules", ".bin", "tiny-pi"), path.join(old, "node_modules", ".bin", "tiny-pi"));
    repairLinks(kit, old);
    assert.equal(realpathSync(path.join(old, "node_modules", ".bin", "tiny-pi")), realpathSync(path.join(old, "packages", "pi-course", "bin", "tiny-pi.js")));
  } finally {
    temp.remove();
  }
});
