// 同时运行的命令：进度文件、课程历史的第一次构建、同一个练习目录上的 verify。
import assert from "node:assert/strict";
import { appendFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { cloneKit, COMPILED_KIT, git, KIT, runScript, spawnProcess, tempDir, TSX } from "./helpers.js";

const work = tempDir("concurrency");
after(() => work.remove());

// 有新鲜的编译副本时直接 import 它的 JS，省掉每个写入进程的 tsx 加载器
const PROGRESS_MODULE = COMPILED_KIT ? path.join(COMPILED_KIT, "scripts/engine/progress.js") : path.join(KIT, "scripts/engine/progress.ts");
const LOADER = COMPILED_KIT ? [] : ["--import", TSX];

/** 在独立进程里记 count 条提示，实践编号带上 writer，互不重复。 */
function writeHints(file: string, writer: string, count: number, cwd = KIT, extraEnv: Record<string, string> = {}) {
  const script = `
    import { recordHint, updateProgress } from ${JSON.stringify(PROGRESS_MODULE)};
    for (let i = 0; i < ${count}; i += 1) updateProgress(process.argv[1], (p) => recordHint(p, "03", "${writer}." + i, 1));
  `;
  return spawnProcess(process.execPath, [...LOADER, "--input-type=module", "--eval", script, file], {
    cwd,
    env: { ...process.env, ...extraEnv },
  });
}

describe("进度文件", () => {
  test("三个进程同时各记 60 次：180 条一条不丢", { timeout: 120_000 }, async () => {
    const file = path.join(work.dir, "shared", "progress.json");
    const results = await Promise.all(["a", "b", "c"].map((writer) => writeHints(file, writer, 60)));
    for (const result of results) assert.equal(result.code, 0, result.stderr);
    const saved = JSON.parse(readFileSync(file, "utf8")) as { hints: Record<string, Record<string, number>> };
    assert.equal(Object.keys(saved.hints["03"] ?? {}).length, 180);
    assert.deepEqual(readdirSync(path.dirname(file)).sort(), ["progress.json"]);
  });

  test("进度文件是符号链接：写入它指向的文件，链接本身保持原样", { timeout: 60_000 }, async () => {
    const real = path.join(work.dir, "dotfiles", "progress.json");
    mkdirSync(path.dirname(real), { recursive: true });
    writeFileSync(real, "");
    const link = path.join(work.dir, "linked-progress.json");
    symlinkSync(real, link);
    const result = await writeHints(link, "s", 2);
    assert.equal(result.code, 0, result.stderr);
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.equal(Object.keys((JSON.parse(readFileSync(real, "utf8")) as { hints: Record<string, object> }).hints["03"] ?? {}).length, 2);
  });

  test("学习者的测试进程拿不到进度文件的位置", { timeout: 120_000 }, async () => {
    const dir = path.join(work.dir, "env-practice");
    const progress = path.join(work.dir, "env-progress.json");
    const made = await runScript("practice", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(made.code, 0, made.stderr);
    const seen = path.join(work.dir, "env-seen.txt");
    appendFileSync(
      path.join(dir, "packages/pi-course/src/prologue.ts"),
      `\nimport { appendFileSync as noteEnv } from "node:fs";\nnoteEnv(${JSON.stringify(seen)}, String(process.env.PI_COURSE_PROGRESS) + "\\n");\n`,
    );
    const verified = await runScript("verify", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.ok(existsSync(seen), verified.stdout + verified.stderr);
    assert.deepEqual([...new Set(readFileSync(seen, "utf8").trim().split("\n"))], ["undefined"]);
  });
});

describe("课程历史的第一次构建", () => {
  test("四个命令同时在新克隆里第一次构建：都成功，没有被当成坏引用挪走的备份，git fsck 干净", { timeout: 180_000 }, async () => {
    const kit = await cloneKit(work.dir, "fresh-kit");
    const results = await Promise.all([0, 1, 2, 3].map(() => runScript("checkpoint", ["03"], { kit })));
    for (const result of results) assert.equal(result.code, 0, result.stderr);
    const gitDir = path.join(kit, ".git");
    const leftovers = existsSync(path.join(gitDir, "pi-course")) ? readdirSync(path.join(gitDir, "pi-course")).filter((name) => name.startsWith("broken-ref")) : [];
    assert.deepEqual(leftovers, []);
    assert.match(await git(kit, "rev-parse", "refs/heads/course/build-your-own-pi"), /^[0-9a-f]{40}$/);
    const fsck = await spawnProcess("git", ["fsck", "--no-dangling"], { cwd: kit });
    assert.equal(fsck.code, 0, fsck.stdout + fsck.stderr);
    assert.doesNotMatch(fsck.stdout + fsck.stderr, /missing|broken/);
  });
});

describe("同一个练习目录上同时 verify", () => {
  test("两个 verify 同时跑：都给出真实结果，没有假的 Cannot find module", { timeout: 240_000 }, async () => {
    const dir = path.join(work.dir, "twin-verify");
    const progress = path.join(work.dir, "twin-progress.json");
    const made = await runScript("practice", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(made.code, 0, made.stderr);
    for (let round = 0; round < 2; round += 1) {
      const results = await Promise.all([0, 1].map(() => runScript("verify", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } })));
      for (const result of results) {
        assert.doesNotMatch(result.stdout + result.stderr, /Cannot find module/);
        assert.equal(result.code, 0, result.stdout + result.stderr);
      }
    }
  });
});
