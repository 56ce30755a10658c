import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import test from "node:test";

import { repairLinks } from "../scripts/engine/doctor.js";
import { binsIntoKit, createLink, expectedLinks, ownBinLinks, practiceLinks } from "../scripts/engine/links.js";
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

/**
 * 回环上的一个 OpenAI 兼容服务器：请求的最后一条是用户的话，就要运行 command；是工具结果，就把结果原样说出来。
 * 每个请求各自决定，所以重启 tiny-pi 之后照样能用。
 */
async function loopbackModel(command: string) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const messages = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages: { role: string; content: string }[] }).messages;
      const last = messages.at(-1);
      const sse = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
      const call = { index: 0, id: `call_${messages.length}`, type: "function", function: { name: "bash", arguments: JSON.stringify({ command }) } };
      const body =
        last?.role === "tool"
          ? sse({ choices: [{ index: 0, delta: { content: `工具说：${last.content.slice(0, 60)}` }, finish_reason: null }] }) + sse({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })
          : sse({ choices: [{ index: 0, delta: { tool_calls: [call] }, finish_reason: null }] }) + sse({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] });
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`${body}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    env: { PI_COURSE_BASE_URL: `http://127.0.0.1:${port}/v1`, PI_COURSE_MODEL: "loopback" },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test("真实的 tiny-pi 接着回环上的模型：-p 默认不运行模型要的 rm -rf，victim 目录还在；--allow bash 之后才运行", { timeout: 60_000 }, async (t) => {
  const project = projectWithReadme();
  t.after(project.remove);
  mkdirSync(path.join(project.cwd, "victim"));
  writeFileSync(path.join(project.cwd, "victim", "keep.txt"), "别删我\n");
  const model = await loopbackModel("rm -rf victim");
  t.after(model.close);
  const env = { ...project.env, ...model.env };
  const refused = await spawnProcess(BIN, ["-p", "清理一下"], { cwd: project.cwd, env });
  assert.equal(refused.code, 0, refused.stderr);
  assert.ok(existsSync(path.join(project.cwd, "victim", "keep.txt")), "没有 --allow 时 rm -rf 不该执行");
  assert.match(refused.stdout, /工具说：This bash call was not run: it needs the user's approval/);
  assert.match(refused.stderr, /没有运行 bash：rm -rf victim：这次运行不能问你。要放行，加 --allow bash/);
  const allowed = await spawnProcess(BIN, ["-p", "--allow", "bash", "清理一下"], { cwd: project.cwd, env });
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.ok(!existsSync(path.join(project.cwd, "victim")), "--allow bash 之后命令应当运行");
});

test("交互模式在真实的伪终端里先问再做：n 不运行，y 运行一次，a 记下，重启之后同一条命令不再问", { timeout: 60_000, skip: !hasPty && "这台机器没有 script 命令" }, async (t) => {
  const project = projectWithReadme();
  t.after(project.remove);
  const model = await loopbackModel("touch made.txt");
  t.after(model.close);
  const env = { PI_COURSE_AGENT_DIR: project.env.PI_COURSE_AGENT_DIR, ...model.env };
  const terminal = runCommandInTerminal([BIN], project.cwd, env);
  t.after(() => terminal.child.kill());
  await terminal.waitFor(/批准闸门开着[\s\S]*tiny-pi> /);
  terminal.child.stdin.write("建个文件\r");
  await terminal.waitFor(/\[n\] 不可以 > /);
  terminal.child.stdin.write("n\r");
  await terminal.waitFor(/工具说：The user declined this bash call/);
  assert.ok(!existsSync(path.join(project.cwd, "made.txt")), "说了 n 的命令不该执行");
  terminal.clear();
  terminal.child.stdin.write("再建一次\r");
  await terminal.waitFor(/\[n\] 不可以 > /);
  terminal.child.stdin.write("y\r");
  await terminal.waitFor(/工具说：/);
  assert.ok(existsSync(path.join(project.cwd, "made.txt")), "说了 y 的命令应当运行");
  terminal.clear();
  terminal.child.stdin.write("还要建\r");
  await terminal.waitFor(/\[n\] 不可以 > /);
  terminal.child.stdin.write("a\r");
  await terminal.waitFor(/工具说：/);
  terminal.child.stdin.write("/exit\r");
  assert.equal(await terminal.closed, 0);

  const again = runCommandInTerminal([BIN], project.cwd, env);
  t.after(() => again.child.kill());
  await again.waitFor(/tiny-pi> /);
  again.child.stdin.write("第四次\r");
  await again.waitFor(/工具说：/);
  assert.doesNotMatch(again.output(), /需要你的批准/);
  again.child.stdin.write("/exit\r");
  assert.equal(await again.closed, 0);
});

test("API key 不出现在屏幕、会话文件与错误信息里：服务器回 401，并把收到的 Authorization 原样写进错误正文", { timeout: 60_000 }, async (t) => {
  const project = projectWithReadme();
  t.after(project.remove);
  const key = "sk-course-tiny-pi-DO-NOT-LEAK";
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${req.headers.authorization ?? ""}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const env = { ...project.env, PI_COURSE_BASE_URL: `http://127.0.0.1:${port}/v1`, PI_COURSE_MODEL: "loopback", PI_COURSE_API_KEY: key };
  const printed = await spawnProcess(BIN, ["-p", "你好"], { cwd: project.cwd, env });
  const json = await spawnProcess(BIN, ["--mode", "json", "你好"], { cwd: project.cwd, env });
  assert.equal(printed.code, 1);
  assert.match(printed.stderr, /HTTP 401.*已隐去的 API key/);
  const sessions = path.join(project.env.PI_COURSE_AGENT_DIR, "sessions");
  const files = readdirSync(sessions).flatMap((folder) => readdirSync(path.join(sessions, folder)).map((name) => path.join(sessions, folder, name)));
  assert.ok(files.length >= 2, "两次运行都应当留下会话文件");
  const everything = [printed.stdout, printed.stderr, json.stdout, json.stderr, ...files.map((file) => readFileSync(file, "utf8"))];
  for (const text of everything) assert.ok(!text.includes(key), `API key 出现在了输出或会话文件里：\n${text.slice(0, 400)}`);
});

/** 一份装好依赖的“套件”（像 npm ci 建出的那样）：工作区包 @pi/course 与它的命令 .bin/tiny-pi。 */
function kitWithTinyPi(kit: string, answer: string): void {
  mkdirSync(path.join(kit, "packages", "pi-course", "bin"), { recursive: true });
  writeFileSync(path.join(kit, "packages", "pi-course", "bin", "tiny-pi.js"), answer);
  mkdirSync(path.join(kit, "node_modules", "@pi"), { recursive: true });
  symlinkSync("../../packages/pi-course", path.join(kit, "node_modules", "@pi", "course"));
  mkdirSync(path.join(kit, "node_modules", ".bin"), { recursive: true });
  symlinkSync("../@pi/course/bin/tiny-pi.js", path.join(kit, "node_modules", ".bin", "tiny-pi"));
}

/** 一个第 13 章起的练习目录：包的 package.json 声明了 tiny-pi，命令文件是学习者自己的代码。 */
function practiceWithOwnTinyPi(dir: string): void {
  mkdirSync(path.join(dir, "packages", "pi-course", "bin"), { recursive: true });
  writeFileSync(path.join(dir, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course", bin: { "tiny-pi": "bin/tiny-pi.js" } }));
  writeFileSync(path.join(dir, "packages", "pi-course", "bin", "tiny-pi.js"), "// 学习者自己的代码\n");
}

test("练习目录的 .bin/tiny-pi 指向练习目录自己的包；套件工作区的命令不被链接进去", () => {
  const temp = tempDir("links");
  try {
    // 一个最小的“套件”：一个普通依赖的命令，和一个工作区包的命令（像 npm ci 建出的那样）。
    const kit = path.join(temp.dir, "kit");
    kitWithTinyPi(kit, "// 套件里的答案\n");
    mkdirSync(path.join(kit, "node_modules", "typescript", "bin"), { recursive: true });
    writeFileSync(path.join(kit, "node_modules", "typescript", "bin", "tsc"), "");
    symlinkSync("../typescript/bin/tsc", path.join(kit, "node_modules", ".bin", "tsc"));

    const names = expectedLinks(kit).map((link) => link.name);
    assert.ok(names.includes(".bin/tsc"));
    assert.ok(!names.includes(".bin/tiny-pi"), "套件工作区包的命令不该链接进练习目录");

    // 第 13 章之前的练习目录：包里还没有 bin，就没有 tiny-pi。
    const practice = path.join(temp.dir, "practice");
    mkdirSync(path.join(practice, "packages", "pi-course", "bin"), { recursive: true });
    writeFileSync(path.join(practice, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course" }));
    assert.deepEqual(ownBinLinks(practice), []);

    practiceWithOwnTinyPi(practice);
    for (const link of practiceLinks(kit, practice)) createLink(practice, link);
    const own = path.join(practice, "node_modules", ".bin", "tiny-pi");
    assert.equal(realpathSync(own), realpathSync(path.join(practice, "packages", "pi-course", "bin", "tiny-pi.js")));
    assert.ok(!path.isAbsolute(readlinkSync(own)), "指向练习目录自己文件的链接用相对路径");
    assert.ok((statSync(own).mode & 0o100) !== 0, "命令文件要有可执行位");
    assert.equal(realpathSync(path.join(practice, "node_modules", ".bin", "tsc")), realpathSync(path.join(kit, "node_modules", "typescript", "bin", "tsc")));

    // 旧的练习目录：.bin/tiny-pi 还指向套件里的答案。doctor --fix 把它换成练习目录自己的。
    const old = path.join(temp.dir, "old-practice");
    practiceWithOwnTinyPi(old);
    for (const link of expectedLinks(kit)) createLink(old, link);
    symlinkSync(path.join(kit, "node_modules", ".bin", "tiny-pi"), path.join(old, "node_modules", ".bin", "tiny-pi"));
    // 自检与 doctor 用同一条规则认出它：落到套件工作区包里的命令
    assert.deepEqual(binsIntoKit(kit, old), ["tiny-pi"]);
    assert.deepEqual(binsIntoKit(kit, practice), []);
    repairLinks(kit, old);
    assert.deepEqual(binsIntoKit(kit, old), []);
    assert.equal(realpathSync(path.join(old, "node_modules", ".bin", "tiny-pi")), realpathSync(path.join(old, "packages", "pi-course", "bin", "tiny-pi.js")));
  } finally {
    temp.remove();
  }
});

test("套件的 node_modules 是指向另一份克隆的链接：那份克隆的 tiny-pi 同样不链接进练习目录，练习目录用自己的", () => {
  const temp = tempDir("links-shared");
  try {
    // 另一份克隆装好了依赖；这份克隆的 node_modules 只是指向它的链接（@pi/course 指向的是那份克隆的 packages/）
    const other = path.join(temp.dir, "other");
    kitWithTinyPi(other, "// 另一份克隆里的答案\n");
    const kit = path.join(temp.dir, "kit");
    mkdirSync(path.join(kit, "packages", "pi-course"), { recursive: true });
    symlinkSync(path.join(other, "node_modules"), path.join(kit, "node_modules"));

    assert.ok(!expectedLinks(kit).some((link) => link.name === ".bin/tiny-pi"), "另一份克隆的工作区命令也是最终答案");
    const practice = path.join(temp.dir, "practice");
    practiceWithOwnTinyPi(practice);
    for (const link of practiceLinks(kit, practice)) createLink(practice, link);
    assert.equal(realpathSync(path.join(practice, "node_modules", ".bin", "tiny-pi")), realpathSync(path.join(practice, "packages", "pi-course", "bin", "tiny-pi.js")));
    assert.deepEqual(binsIntoKit(kit, practice), []);
  } finally {
    temp.remove();
  }
});
