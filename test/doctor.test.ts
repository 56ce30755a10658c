import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { LINES } from "../scripts/ci/node-lines.ts";
import { checkNode, TESTED_NODE_LINES } from "../scripts/engine/doctor.ts";
import { runScript, tempDir } from "./helpers.ts";
import { practice } from "./learner.ts";

const work = tempDir("doctor");
after(() => work.remove());

describe("Node.js 版本线：说出是哪条线、是否已停止维护、课程在哪些线上测试", () => {
  const today = new Date("2026-11-30T12:00:00Z");

  test("受测且在维护期的 LTS 线通过，并说出维护到哪天", () => {
    for (const [version, until] of [["22.23.5", "2027-04-30"], ["24.22.3", "2028-04-30"], ["26.12.1", "2029-04-30"]] as const) {
      const check = checkNode(version, today);
      assert.equal(check.status, "ok", version);
      assert.equal(check.detail, `${version}（${version.split(".")[0]} 号线是 LTS，维护到 ${until}；课程在 Node 20、22、24、26 上测试）`);
    }
  });

  test("已停止维护的 20 号线：能学，但提醒换到在维护的 LTS 线", () => {
    const check = checkNode("20.20.2", today);
    assert.equal(check.status, "warn");
    assert.match(check.detail, /^20\.20\.2（20 号线已于 2026-04-30 停止维护，不再有安全更新；课程在 Node 20、22、24、26 上测试）：可以学习$/);
    assert.equal(check.fix, "换到 LTS 版本线 Node.js 24 或 26（nvm install 26）");
    assert.equal(checkNode("20.20.2", new Date("2026-01-15")).status, "ok", "停止维护之前 20 号线是 LTS");
  });

  test("20.0–20.11 另提醒彩色输出要 20.12；不是 LTS 的线、没测试过的线、还没成为 LTS 的线都只是提醒", () => {
    assert.match(checkNode("20.5.1", new Date("2026-01-15")).detail, /彩色输出等少数便利要 ≥ 20\.12/);
    assert.equal(checkNode("20.5.1", new Date("2026-01-15")).status, "warn");
    assert.match(checkNode("25.1.0", today).detail, /25 号线已于 2026-06-01 停止维护.*课程没有在 25 号线上测试过/);
    const unknown = checkNode("27.2.0", today);
    assert.equal(unknown.status, "warn");
    assert.equal(unknown.detail, "27.2.0（课程没有在 27 号线上测试过，只在 Node 20、22、24、26 上测试）：可以学习");
    const early = checkNode("26.0.0", new Date("2026-05-01"));
    assert.equal(early.status, "warn");
    assert.match(early.detail, /26 号线要到 2026-10-28 才成为 LTS/);
    assert.equal(early.fix, "换到 LTS 版本线 Node.js 22 或 24（nvm install 24）");
  });

  test("20 之前的版本不通过", () => {
    const ancient = checkNode("18.19.0", today);
    assert.equal(ancient.status, "fail");
    assert.match(ancient.detail, /太旧，课程需要 Node\.js ≥ 20；课程在 Node 20、22、24、26 上测试/);
  });

  test("CI 受测的版本线与 doctor 说的一致", () => {
    assert.deepEqual(LINES.map((pin) => Number(pin.line)), [...TESTED_NODE_LINES]);
  });
});

describe("doctor：体检并给出修复办法", () => {
  const progress = path.join(work.dir, "progress.json");
  const dir = path.join(work.dir, "pi-practice-03");
  const doctor = (...args: string[]) => runScript("doctor", args, { env: { PI_COURSE_PROGRESS: progress } });

  before(async () => {
    await practice("03", dir, progress);
  });

  test("健康的环境与练习目录：每一项 ✓，退出码 0", async () => {
    const { code, stdout, stderr } = await doctor("03", dir);
    assert.equal(code, 0, stdout + stderr);
    // 正在受测的 Node（CI 在每条版本线上各跑一次）：doctor 说出它的版本与版本线
    const node = new RegExp(`[✓!] Node\\.js：${process.versions.node.replaceAll(".", "\\.")}（.*课程在 Node 20、22、24、26 上测试`);
    for (const line of [node, /✓ git：\d/, /✓ 课程套件：.* 是 git 仓库/, /✓ 依赖：typescript 7\./, /✓ tsc 命令：node_modules\/\.bin\/tsc → TypeScript 7/, /课程历史：/, /✓ 进度文件：/, /✓ 练习目录（第 03 章）：/, /✓ {3}依赖链接/, /✓ {3}测试文件：与课程版本一致/, / {3}文件监视/]) {
      assert.match(stdout, line);
    }
  });

  test("断掉的依赖链接与被改动的测试：指出问题与修复命令，退出码 1；--fix 只重新链接依赖", async () => {
    unlinkSync(path.join(dir, "node_modules", "tsx"));
    unlinkSync(path.join(dir, "node_modules", "simple-git"));
    symlinkSync(path.join(work.dir, "gone"), path.join(dir, "node_modules", "simple-git"));
    const testFile = path.join(dir, "packages/pi-course/test/03-message-ir.test.ts");
    const original = readFileSync(testFile, "utf8");
    writeFileSync(testFile, original.replace("test(", "test.skip("));

    const broken = await doctor("03", dir);
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /✗ {3}依赖链接：缺少 tsx、simple-git 的链接断了/);
    assert.ok(broken.stdout.includes(`修复：npm run doctor -- 03 ${dir} --fix`));
    assert.match(broken.stdout, /! {3}测试文件：03-message-ir\.test\.ts 被改动过/);
    assert.match(broken.stdout, /修复：git -C .+ show [0-9a-f]{8}:packages\/pi-course\/test\/03-message-ir\.test\.ts > /);
    // 停止维护的 Node 版本线（例如 20）本身就多一个提醒
    const nodeWarnings = checkNode().status === "warn" ? 1 : 0;
    assert.match(broken.stderr, new RegExp(`^错误：体检发现 1 个问题、${1 + nodeWarnings} 个提醒`));

    const fixed = await doctor("03", dir, "--fix");
    assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
    assert.match(fixed.stdout, /已修复：重新链接了 2 项依赖/);
    assert.ok(existsSync(path.join(dir, "node_modules", "tsx", "package.json")));
    assert.ok(existsSync(path.join(dir, "node_modules", "simple-git", "package.json")));
    assert.notEqual(readFileSync(testFile, "utf8"), original, "--fix 从不改学习者的文件");
    writeFileSync(testFile, original);
  });

  test("只写目录：按目录标记里的章节检查", async () => {
    const { code, stdout, stderr } = await doctor(dir);
    assert.equal(code, 0, stdout + stderr);
    assert.ok(stdout.includes(`✓ 练习目录（第 03 章）：${dir}`), stdout);
  });

  test("不是练习目录：空目录建议就在那里 practice，有文件的目录建议换一个；只写目录时也一样", async () => {
    const plain = path.join(work.dir, "plain");
    mkdirSync(plain);
    const notPractice = await doctor("03", plain);
    assert.equal(notPractice.code, 1);
    assert.match(notPractice.stdout, /✗ 练习目录（第 03 章）：.* 不是练习目录/);
    assert.ok(notPractice.stdout.includes(`修复：npm run practice -- 03 ${plain}\n`), notPractice.stdout);

    const onlyDir = await doctor(plain);
    assert.equal(onlyDir.code, 1);
    assert.match(onlyDir.stdout, /✗ 练习目录（第 \d\d 章）：.* 不是练习目录/);
    assert.match(onlyDir.stdout, new RegExp(`修复：npm run practice -- \\d\\d ${plain.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\n`));

    const busy = path.join(work.dir, "busy");
    mkdirSync(busy);
    writeFileSync(path.join(busy, "notes.md"), "我的笔记");
    const nonEmpty = await doctor("03", busy);
    assert.equal(nonEmpty.code, 1);
    assert.match(nonEmpty.stdout, /修复：npm run practice -- 03 <一个不存在或为空的目录>/);
    assert.ok(!nonEmpty.stdout.includes(`practice -- 03 ${busy}`));
  });

  test("练习目录不存在：不通过并给出创建命令", async () => {
    const missing = await doctor("03", path.join(work.dir, "nowhere"));
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /不存在\n\s+修复：npm run practice -- 03 /);
  });

  test("损坏的进度文件：提醒但不动它（doctor 只读）", async () => {
    const corrupt = path.join(work.dir, "corrupt.json");
    writeFileSync(corrupt, "不是 JSON");
    const { code, stdout } = await runScript("doctor", ["03", dir], { env: { PI_COURSE_PROGRESS: corrupt } });
    assert.equal(code, 0);
    assert.match(stdout, /! 进度文件：.* 不是合法的 JSON/);
    assert.equal(readFileSync(corrupt, "utf8"), "不是 JSON");
  });

  test("来自更新版本套件的进度文件：不通过，修复办法是更新套件；文件不动", async () => {
    const newer = path.join(work.dir, "newer.json");
    writeFileSync(newer, JSON.stringify({ version: 5 }));
    const { code, stdout } = await runScript("doctor", ["03", dir], { env: { PI_COURSE_PROGRESS: newer } });
    assert.equal(code, 1);
    assert.match(stdout, /✗ 进度文件：.* 来自更新版本的课程套件（格式版本 5）.*\n\s+修复：更新课程套件：git pull && npm ci/);
    assert.equal(readFileSync(newer, "utf8"), JSON.stringify({ version: 5 }));
  });

  test("找不到 git：git 一项不通过并说明安装", async () => {
    const bin = path.join(work.dir, "no-git-bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, "node"));
    const { code, stdout } = await runScript("doctor", [], { env: { PI_COURSE_PROGRESS: progress, PATH: bin } });
    assert.equal(code, 1);
    assert.match(stdout, /✗ git：找不到 git 命令\n\s+修复：安装 git/);
  });

  test("--json 给出检查清单：每项有稳定的 id 与组，标题不带缩进，修复函数不进 JSON", async () => {
    const { code, stdout } = await doctor("03", dir, "--json");
    assert.equal(code, 0);
    const result = JSON.parse(stdout) as { checks: Array<Record<string, unknown> & { id: string; group: string; title: string; status: string }>; failed: number };
    assert.equal(result.failed, 0);
    assert.ok(result.checks.some((check) => check.id === "node" && check.title === "Node.js" && check.status !== "fail"));
    const ids = result.checks.map((check) => check.id);
    assert.equal(new Set(ids).size, ids.length, `id 不重复：${ids.join(" ")}`);
    for (const id of ["git", "checkout", "install", "tsc", "chapters", "history", "progress-file", "practice", "practice.links", "practice.tests", "practice.watching"]) {
      assert.ok(ids.includes(id), `缺少 ${id}：${ids.join(" ")}`);
    }
    for (const check of result.checks) {
      assert.doesNotMatch(check.title, /^\s/, check.id);
      assert.equal(check.group, check.id.startsWith("practice") ? "practice" : "kit", check.id);
      assert.equal("repair" in check, false, check.id);
    }
  });

  test("错误的输入：未知章节、多余参数、未知选项是用法错误；--help 列出检查项", async () => {
    for (const args of [["99"], ["03", dir, "extra"], ["--bogus"]]) {
      const { code, stderr, stdout } = await doctor(...args);
      assert.equal(code, 2, `参数 ${JSON.stringify(args)}`);
      assert.equal(stdout, "");
      assert.match(stderr, /^错误：/);
    }
    const help = await doctor("--help");
    assert.equal(help.code, 0);
    assert.match(help.stdout, /用法：npm run doctor/);
    assert.match(help.stdout, /--fix/);
  });
});
