// 学习者顺手会做的事、同时运行与中途打断：每一条都在真实目录里用子进程复现。
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { KIT, kitScriptArgs, runScript, spawnProcess, tempDir } from "./helpers.js";
import { loadChapters } from "../scripts/engine/chapters.js";
import { optionsSwallowedByNpm } from "../scripts/engine/cli.js";
import { LESSONS_DIR } from "../scripts/engine/paths.js";
import { SYLLABUS } from "../scripts/engine/syllabus.js";

const work = tempDir("reflexes");
after(() => work.remove());

/** 一棵目录树的全部相对路径（不跟随符号链接）；顶层的 .cache（套件命令的编译副本等，随用随建）不算依赖文件。 */
function listTree(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const relative = `${prefix}${entry.name}`;
      if (relative === ".cache") continue;
      out.push(relative);
      if (entry.isDirectory()) walk(path.join(dir, entry.name), `${relative}/`);
    }
  };
  walk(root, "");
  return out.sort();
}

const progressFile = path.join(work.dir, "npm-progress.json");

/** 像学习者那样经 npm 运行（真实的 npm，真实的 INIT_CWD）。 */
function npm(cwd: string, args: string[]) {
  return spawnProcess("npm", args, {
    cwd,
    env: { ...process.env, NO_COLOR: "1", PI_COURSE_PROGRESS: progressFile, npm_config_update_notifier: "false", INIT_CWD: undefined },
  });
}

describe("练习目录里顺手运行 npm install", () => {
  let kit: string;
  before(async () => {
    // 一份自己的套件：node_modules 是硬链接的副本，npm 删什么都伤不到真正的套件
    kit = path.join(work.dir, "npm-kit");
    const cloned = await spawnProcess("git", ["clone", "--quiet", "--no-hardlinks", KIT, kit], { cwd: work.dir });
    assert.equal(cloned.code, 0, cloned.stderr);
    const copied = await spawnProcess("cp", ["-al", path.join(KIT, "node_modules"), path.join(kit, "node_modules")], { cwd: work.dir });
    assert.equal(copied.code, 0, copied.stderr);
  });

  test("npm install 不会删掉套件的任何依赖文件", { timeout: 120_000 }, async () => {
    const dir = path.join(work.dir, "npm-practice");
    const made = await runScript("practice", ["00", dir], { kit });
    assert.equal(made.code, 0, made.stderr);
    const before = listTree(path.join(kit, "node_modules"));
    const installed = await spawnProcess("npm", ["install", "--offline", "--no-audit", "--no-fund"], {
      cwd: dir,
      env: { ...process.env, npm_config_update_notifier: "false" },
    });
    assert.deepEqual(listTree(path.join(kit, "node_modules")), before, installed.stdout + installed.stderr);
    // npm install 之后（postinstall）依赖重新链接好了：照常编译
    assert.equal(installed.code, 0, installed.stdout + installed.stderr);
    const built = await npm(dir, ["run", "-s", "build"]);
    assert.equal(built.code, 0, built.stdout + built.stderr);
  });

  test("练习目录的子目录里（packages/pi-course、src）直接 npm run verify；npm run -s 加 --json 的输出是合法 JSON", { timeout: 180_000 }, async () => {
    const dir = path.join(work.dir, "sub-practice");
    assert.equal((await runScript("practice", ["00", dir], { kit })).code, 0);
    for (const sub of ["packages/pi-course", "packages/pi-course/src"]) {
      const result = await npm(path.join(dir, sub), ["run", "-s", "verify", "--", "--json"]);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      const report = JSON.parse(result.stdout) as { chapter: string; passed: boolean; dir: string };
      assert.deepEqual([report.chapter, report.passed, report.dir], ["00", true, dir]);
    }
    // 子目录里的 hint 在 hint.test.ts（它读课文里的预测）
  });

  test("练习目录被移动：doctor --fix 把进度里的位置改记成新目录", { timeout: 120_000 }, async () => {
    const dir = path.join(work.dir, "move-practice");
    assert.equal((await npm(kit, ["run", "-s", "practice", "--", "00", dir])).code, 0);
    const moved = `${dir}-moved`;
    renameSync(dir, moved);
    const inside = await npm(moved, ["run", "-s", "verify"]);
    assert.equal(inside.code, 0, inside.stdout + inside.stderr);
    const fixed = await npm(kit, ["run", "-s", "doctor", "--", "00", moved, "--fix"]);
    assert.match(fixed.stdout, /改记成/);
    const progress = JSON.parse(readFileSync(progressFile, "utf8")) as { practiceDirs: Record<string, string> };
    assert.equal(progress.practiceDirs["00"], moved);
  });

  test("课程套件被移动：练习目录里的命令说明怎么修而不是说“不是练习目录”，doctor --fix 修好", { timeout: 180_000 }, async () => {
    const dir = path.join(work.dir, "kit-move-practice");
    assert.equal((await runScript("practice", ["00", dir], { kit })).code, 0);
    const movedKit = `${kit}-moved`;
    renameSync(kit, movedKit);
    try {
      const lost = await npm(dir, ["run", "-s", "verify"]);
      assert.equal(lost.code, 1);
      assert.equal(lost.stderr.trim().split("\n").length, 1, lost.stderr);
      assert.match(lost.stderr, /不在了.*npm run doctor -- .* --fix/);
      assert.doesNotMatch(lost.stderr, /不是练习目录/);
      const fixed = await npm(movedKit, ["run", "-s", "doctor", "--", dir, "--fix"]);
      assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
      const again = await npm(dir, ["run", "-s", "verify"]);
      assert.equal(again.code, 0, again.stdout + again.stderr);
    } finally {
      renameSync(movedKit, kit);
    }
  });

  test("套件的依赖不见了：npm run doctor 和练习目录里的 verify 都只说一句该运行什么", { timeout: 120_000 }, async () => {
    const dir = path.join(work.dir, "nodeps-practice");
    assert.equal((await runScript("practice", ["00", dir], { kit })).code, 0);
    rmSync(path.join(kit, "node_modules"), { recursive: true, force: true });
    for (const [cwd, script] of [[kit, "doctor"], [dir, "verify"], [dir, "doctor"]] as const) {
      const result = await npm(cwd, ["run", "-s", script]);
      assert.equal(result.code, 1, result.stderr);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      assert.match(result.stderr, /^错误：.*npm ci.*npm run doctor -- --fix/);
    }
  });
});

describe("忘了 --", () => {
  test("npm run verify 03 --json：npm 吞掉的选项被认出来，一行中文，退出码 2", async () => {
    const result = await runScript("verify", ["03"], { env: { npm_lifecycle_event: "verify", npm_config_json: "true" } });
    assert.equal(result.code, 2);
    assert.equal(result.stderr.trim().split("\n").length, 1);
    assert.match(result.stderr, /忘了 `--`？.*npm run verify -- 03 --json/);
  });

  test("npm run hint 03 3.1 --level 1：取值型选项同样认出", async () => {
    const result = await runScript("hint", ["03", "3.1", "1"], { env: { npm_lifecycle_event: "hint", npm_config_level: "true" } });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /忘了 `--`？.*--level/);
  });

  test("写在 -- 之后的 --yes、npmrc 里的空配置：npm 照样设了 npm_config_yes，都不算忘了 --", () => {
    const env = { npm_lifecycle_event: "reset", npm_config_yes: "true" };
    assert.deepEqual(optionsSwallowedByNpm(["yes"], env, ["03", "types.ts", "--yes"]), []);
    assert.deepEqual(optionsSwallowedByNpm(["yes"], env, ["03", "types.ts"]), ["yes"]);
    // npmrc 里空的 yes= 也会以 npm_config_yes="" 传下来：那是配置，不是学习者敲的选项
    assert.deepEqual(optionsSwallowedByNpm(["yes"], { ...env, npm_config_yes: "" }, ["03", "types.ts"]), []);
  });

  test("真正经过 npm：npm run verify 03 --json", { timeout: 60_000 }, async () => {
    const result = await spawnProcess("npm", ["run", "-s", "verify", "03", "--json"], { cwd: KIT, env: { ...process.env, NO_COLOR: "1" } });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /忘了 `--`？/);
  });
});

describe("规划中、还没写好的章节", () => {
  // 大纲里第一章还没有 lessons/ 目录的章节：写好一章，这里自动换成下一章
  const written = new Set(loadChapters(LESSONS_DIR).map((chapter) => chapter.id));
  const planned = SYLLABUS.flatMap((part) => part.chapters).find((chapter) => !written.has(chapter.id))?.id;

  // 大纲的二十章都写好了：没有规划中的章节可以拿来试，只确认大纲与 lessons/ 一一对应。
  if (planned === undefined) {
    test("大纲的每一章都有 lessons/ 目录：没有规划中、还没写好的章节", () => {
      assert.deepEqual([...written].sort(), SYLLABUS.flatMap((part) => part.chapters).map((chapter) => chapter.id).sort());
    });
  }

  // 不登记为 skip：CI 按章数核对跳过的项数。
  if (planned !== undefined) test(`checkpoint ${planned} 与 practice ${planned}：说它在规划中，而不是不存在`, async () => {
    for (const script of ["checkpoint", "practice"]) {
      const dir = path.join(work.dir, `planned-${script}`);
      const result = await runScript(script, script === "practice" ? [planned, dir] : [planned]);
      assert.equal(result.code, 2);
      assert.match(result.stderr, new RegExp(`第 ${planned} 章.*还没有写好、尚未开放`));
      assert.doesNotMatch(result.stderr, /没有第/);
      assert.ok(!existsSync(dir));
    }
  });
});

describe("practice 的目标目录：同时运行、符号链接、无写权限", () => {
  test("两个 practice 同时建同一个目录：一个成功，另一个一行中文说明，没有堆栈", { timeout: 120_000 }, async () => {
    for (let round = 0; round < 3; round += 1) {
      const dir = path.join(work.dir, `race-${round}`);
      const results = await Promise.all([runScript("practice", ["03", dir]), runScript("practice", ["03", dir])]);
      const codes = results.map((result) => result.code).sort();
      assert.deepEqual(codes, [0, 2], results.map((result) => result.stderr).join("\n"));
      const loser = results.find((result) => result.code === 2)!;
      assert.equal(loser.stderr.trim().split("\n").length, 1, loser.stderr);
      assert.match(loser.stderr, /^错误：/);
      assert.ok(existsSync(path.join(dir, ".pi-course-practice.json")));
      assert.deepEqual(readdirSync(work.dir).filter((name) => name.includes(".partial-")), []);
    }
  });

  test("目标是符号链接（指向目录或悬空）：拒绝，退出码 2，链接与它指向的东西都不动", async () => {
    const real = path.join(work.dir, "real-target");
    mkdirSync(real);
    const pointing = path.join(work.dir, "link-to-dir");
    const dangling = path.join(work.dir, "link-dangling");
    symlinkSync(real, pointing);
    symlinkSync(path.join(work.dir, "nowhere"), dangling);
    for (const dir of [pointing, dangling]) {
      const result = await runScript("practice", ["03", dir]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /符号链接/);
      assert.equal(result.stderr.trim().split("\n").length, 1);
      assert.ok(lstatSync(dir).isSymbolicLink());
    }
    assert.deepEqual(readdirSync(real), []);
    assert.ok(!existsSync(path.join(work.dir, "nowhere")));
  });

  test("父目录不可写：一行中文说明，没有 EACCES 堆栈", async () => {
    let parent: string;
    if (process.getuid?.() === 0) {
      // root 不受权限位限制；/sys 对谁都不能建目录
      if (!existsSync("/sys")) return;
      parent = "/sys/pi-course-readonly";
    } else {
      parent = path.join(work.dir, "readonly");
      mkdirSync(parent);
      chmodSync(parent, 0o555);
    }
    const result = await runScript("practice", ["03", path.join(parent, "p")]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^错误：无法在 .* 里创建练习目录/);
    assert.equal(result.stderr.trim().split("\n").length, 1);
  });
});

describe("Ctrl-C 打断 practice", () => {
  test("git 正在取出文件时被打断：先结束 git，再删干净，不留 .partial 也不留 pi-course-index-*", { timeout: 60_000 }, async () => {
    const root = path.join(work.dir, "interrupt-git");
    const parent = path.join(root, "parent");
    const tmp = path.join(root, "tmp");
    const bin = path.join(root, "bin");
    for (const dir of [parent, tmp, bin]) mkdirSync(dir, { recursive: true });
    // 一个慢下来的 git：checkout-index 先报到、再睡一会儿，好让 Ctrl-C 落在它运行的时候
    const realGit = (await spawnProcess("sh", ["-c", "command -v git"], { cwd: root })).stdout.trim();
    const started = path.join(root, "git-started");
    writeFileSync(
      path.join(bin, "git"),
      `#!/bin/sh\ncase " $* " in *" checkout-index "*) : > "${started}"; sleep 2 </dev/null >/dev/null 2>&1;; esac\nexec "${realGit}" "$@"\n`,
      { mode: 0o755 },
    );
    const child = spawn(process.execPath, [...kitScriptArgs("practice"), "03", path.join(parent, "p")], {
      cwd: KIT,
      env: { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}`, TMPDIR: tmp, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    while (!existsSync(started)) await new Promise((resolve) => setTimeout(resolve, 20));
    child.kill("SIGINT");
    assert.equal(await closed, 130, stderr);
    // 给一个没被结束的 git 足够的时间把文件写进来
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.deepEqual(readdirSync(parent), []);
    assert.deepEqual(readdirSync(tmp).filter((name) => name.startsWith("pi-course-index-")), []);
  });
});

