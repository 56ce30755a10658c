import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { isCourseError } from "../scripts/engine/errors.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { openPracticeDir } from "../scripts/engine/practice.ts";
import { failureLocation } from "../scripts/engine/runner.ts";
import { runScript, tempDir } from "./helpers.ts";
import { applyFault, card, practice, readProgress, show, solveTo } from "./learner.ts";

const work = tempDir("verify");
after(() => work.remove());

/**
 * verify 像学习者那样被运行：一个真实的第 03 章练习目录，从起点的红灯一步步做到目标，
 * 每一步都检查报告（按实践、只有第一处偏差）和进度文件（只有全部通过才点亮）。
 */
describe("verify：从红灯做到点亮", () => {
  const progress = path.join(work.dir, "journey", "progress.json");
  const dir = path.join(work.dir, "journey", "pi-practice-03");
  const verify = (...args: string[]) => runScript("verify", args, { env: { PI_COURSE_PROGRESS: progress } });

  before(async () => {
    await practice("03", dir, progress);
  });

  test("起点：tsc 失败时报告第一条 tsc 错误的文件与行号，不点亮", async () => {
    const { code, stdout, stderr } = await verify("03", dir);
    assert.equal(code, 1, stdout + stderr);
    assert.match(stdout, /编译\s+✗ 2 条 tsc 错误/);
    assert.match(stdout, /实践 3\.1\s+✗/);
    assert.match(stdout, /第一处偏差：\n\s+packages\/pi-course\/test\/03-message-ir\.test\.ts:4:10 TS2305 .*AssistantMessageEventStream/);
    assert.match(stdout, /共 2 条 tsc 错误/);
    assert.doesNotMatch(stdout, /TS2307/, "只报第一处偏差");
    assert.match(stdout, /npm run hint -- 03 3\.1/);
    assert.equal(stderr.trim().split("\n").length, 1);
    assert.match(stderr, /^错误：第 03 章还没有通过：从实践 3\.1 开始/);
    assert.deepEqual(readProgress(progress).verified, {});
  });

  test("做完实践 3.1：3.1 亮、3.2 不亮；第一处偏差是 3.2 的第一条失败测试", async () => {
    await solveTo("03", dir, "3.1");
    const { code, stdout } = await verify("03", dir);
    assert.equal(code, 1);
    assert.match(stdout, /编译\s+✓/);
    assert.match(stdout, /实践 3\.1\s+✓ 1\/1 · 2\/2/, "临时流挂住的测试不该连累已经完成的实践");
    // 挂住的那项之后的测试在每个 Node 版本上都照常运行（Node 20、22 会取消它们，runner 单独重跑）
    assert.match(stdout, /实践 3\.2\s+✗ 全部 3\/4/);
    assert.match(stdout, /更早章节\s+✓ 00 4\/4 · 01 4\/4 · 02 6\/6/);
    assert.match(stdout, /✗ 「error 终态自行结束流/);
    assert.match(stdout, /测试一直没有结束：它等待的 Promise 没有兑现/);
    assert.match(stdout, /（实践 3\.2）/);
    assert.deepEqual(readProgress(progress).verified, {});
  });

  test("断言失败时给出期望与实际", async () => {
    const file = path.join(dir, "packages/pi-course/src/types.ts");
    const source = (await show((await card("03")).commits.target, "packages/pi-course/src/types.ts"))
      .replace('return texts.join("\\n");', 'return texts.join(" ");');
    writeFileSync(file, source);
    const { code, stdout } = await verify("03", dir);
    assert.equal(code, 1);
    assert.match(stdout, /✗ 「文本投影有损，但不修改原 content」（实践 3\.1）/);
    assert.match(stdout, /期望：'先读取\\n再回答'/);
    assert.match(stdout, /实际：'先读取 再回答'/);
  });

  test("目标：全部通过时点亮本章，记下目标哈希、时间和练习目录", async () => {
    await solveTo("03", dir, "target");
    const { code, stdout, stderr } = await verify("03", dir);
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /实践 3\.1\s+✓ 1\/1 · 2\/2/);
    assert.match(stdout, /实践 3\.2\s+✓ 全部 4\/4/);
    assert.match(stdout, /✓ 第 03 章已点亮/);
    assert.match(stdout, /npm run practice -- 04/);
    const entry = readProgress(progress).verified["03"];
    assert.ok(entry);
    assert.equal(entry.target, (await card("03")).commits.target);
    assert.equal(entry.dir, dir);
    assert.ok(Math.abs(Date.parse(entry.verifiedAt) - Date.now()) < 60_000);
  });

  test("省略目录时用 practice 记下的练习目录；--json 给出结构化结果", async () => {
    const { code, stdout } = await verify("3", "--json");
    assert.equal(code, 0);
    const result = JSON.parse(stdout) as { passed: boolean; dir: string; labs: Array<{ id: string; ok: boolean }>; deviation: unknown };
    assert.equal(result.passed, true);
    assert.equal(result.dir, dir);
    assert.deepEqual(result.labs.map((lab) => [lab.id, lab.ok]), [["3.1", true], ["3.2", true]]);
    assert.equal(result.deviation, null);
  });

  test("status 与 verify 对下一章的看法一致：只点亮了 03，下一章是 04", async () => {
    const { code, stdout } = await runScript("status", ["--json"], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(code, 0);
    assert.equal((JSON.parse(stdout) as { next: { id: string } }).next.id, "04");
  });

  test("删掉 src/types.ts：编译失败后不拿 dist/ 里上一次的旧输出顶替，实践一个都不亮", async () => {
    const file = path.join(dir, "packages/pi-course/src/types.ts");
    const source = readFileSync(file, "utf8");
    rmSync(file);
    try {
      const { code, stdout } = await verify("03", dir);
      assert.equal(code, 1);
      assert.match(stdout, /编译\s+✗/);
      assert.match(stdout, /实践 3\.1\s+✗/);
      assert.match(stdout, /实践 3\.2\s+✗/);
      assert.doesNotMatch(stdout, /实践 3\.\d\s+✓/);
    } finally {
      writeFileSync(file, source);
    }
  });

  test("聚焦测试文件不见了：报告里说“缺少”，不说“与课程版本不同”", async () => {
    const file = path.join(dir, "packages/pi-course/test/03-message-ir.test.ts");
    const source = readFileSync(file, "utf8");
    rmSync(file);
    try {
      const { code, stdout } = await verify("03", dir);
      assert.equal(code, 1);
      assert.match(stdout, /测试文件\s+✗ 缺少 03-message-ir\.test\.ts/);
      assert.doesNotMatch(stdout, /与课程版本不同/);
      assert.match(stdout, /第一处偏差：\n\s+缺少测试文件/);
    } finally {
      writeFileSync(file, source);
    }
  });

  test("抛出的错误：给出它在 packages/pi-course 里的位置（.ts 源码，或说明是编译后的文件）；--json 里也有；已点亮的章节保持点亮", async () => {
    const types = path.join(dir, "packages/pi-course/src/types.ts");
    const tsconfig = path.join(dir, "packages/pi-course/tsconfig.json");
    const source = readFileSync(types, "utf8");
    const config = readFileSync(tsconfig, "utf8");
    const withSourceMap = (on: boolean) => {
      const parsed = JSON.parse(config) as { compilerOptions: Record<string, unknown> };
      parsed.compilerOptions.sourceMap = on;
      writeFileSync(tsconfig, JSON.stringify(parsed, null, 2));
    };
    const broken = source.replace('return texts.join("\\n");', 'throw new RangeError("textOf 还没写");');
    assert.notEqual(broken, source);
    const line = broken.split("\n").findIndex((text) => text.includes("textOf 还没写")) + 1;
    writeFileSync(types, broken);
    try {
      withSourceMap(true);
      const mapped = await verify("03", dir);
      assert.equal(mapped.code, 1);
      assert.match(mapped.stdout, /✗ 「文本投影有损，但不修改原 content」（实践 3\.1）\n\s+textOf 还没写\n\s+位置：packages\/pi-course\/src\/types\.ts:(\d+):\d+/);
      assert.equal(/位置：packages\/pi-course\/src\/types\.ts:(\d+)/.exec(mapped.stdout)?.[1], String(line));
      assert.match(mapped.stdout, /第 03 章仍然保持点亮/);

      const json = JSON.parse((await verify("03", dir, "--json")).stdout) as {
        lit: boolean;
        deviation: { location: { file: string; line: number; compiled: boolean } };
      };
      assert.equal(json.lit, true);
      assert.deepEqual([json.deviation.location.file, json.deviation.location.line, json.deviation.location.compiled], ["packages/pi-course/src/types.ts", line, false]);

      withSourceMap(false);
      const compiled = await verify("03", dir);
      assert.match(compiled.stdout, /位置：packages\/pi-course\/dist\/src\/types\.js:\d+:\d+（这是编译后的文件，行号按它算；源码是 packages\/pi-course\/src\/types\.ts）/);
    } finally {
      writeFileSync(types, source);
      writeFileSync(tsconfig, config);
    }
  });

  test("更早章节的回归会显出来，第一处偏差指向那一章的测试", async () => {
    await applyFault("01", dir);
    const { code, stdout } = await verify("03", dir);
    assert.equal(code, 1);
    assert.match(stdout, /实践 3\.2\s+✓/);
    assert.match(stdout, /更早章节\s+✗ .*01 \d\/4.*← 回归/);
    assert.match(stdout, /（第 01 章）/);
  });

  test("改弱测试不能点亮：报告被改动的测试文件和恢复命令；已有的记录不被抹掉", async () => {
    const { parent, target } = (await card("03")).commits;
    for (const { file } of (await card("01")).fault.mutations) writeFileSync(path.join(dir, file), await show(parent, file)); // 撤销上一个测试的回归
    const before = readProgress(progress).verified["03"];
    const testFile = path.join(dir, "packages/pi-course/test/03-message-ir.test.ts");
    writeFileSync(testFile, `${await show(target, "packages/pi-course/test/03-message-ir.test.ts")}\n// 我加的一行\n`);
    const { code, stdout } = await verify("03", dir);
    assert.equal(code, 1, stdout);
    assert.match(stdout, /测试文件\s+✗ 03-message-ir\.test\.ts 与课程版本不同/);
    assert.match(stdout, /测试文件被改动过/);
    assert.match(stdout, new RegExp(`git -C .+ show ${target.slice(0, 8)}:packages/pi-course/test/03-message-ir\\.test\\.ts > `));
    assert.deepEqual(readProgress(progress).verified["03"], before);
  });
});

describe("verify：错误的输入", () => {
  const progress = path.join(work.dir, "bad", "progress.json");
  const verify = (...args: string[]) => runScript("verify", args, { env: { PI_COURSE_PROGRESS: progress } });
  let dir03: string;

  before(async () => {
    dir03 = path.join(work.dir, "bad", "p03");
    await practice("03", dir03, progress);
  });

  test("--help 说明用法", async () => {
    const { code, stdout } = await verify("--help");
    assert.equal(code, 0);
    assert.match(stdout, /用法：npm run verify -- <章节> \[目录\]/);
  });

  test("未知章节、缺少章节、多余参数、未知选项：退出码 2，一行中文", async () => {
    for (const args of [["99", dir03], [], ["03", dir03, "extra"], ["03", "--bogus"], ["03", ""]]) {
      const { code, stderr, stdout } = await verify(...args);
      assert.equal(code, 2, `参数 ${JSON.stringify(args)}：${stderr}`);
      assert.equal(stdout, "");
      assert.equal(stderr.trim().split("\n").length, 1);
      assert.match(stderr, /^错误：/);
    }
  });

  test("不是练习目录：退出码 2，说明练习目录由 practice 创建", async () => {
    const plain = path.join(work.dir, "bad", "plain");
    mkdirSync(plain, { recursive: true });
    const { code, stderr } = await verify("03", plain);
    assert.equal(code, 2);
    assert.match(stderr, /不是练习目录（没有 \.pi-course-practice\.json）/);
  });

  test("别的章节的练习目录：退出码 2，指出它属于哪一章", async () => {
    const { code, stderr } = await verify("02", dir03);
    assert.equal(code, 2);
    assert.match(stderr, /是第 03 章的练习目录，不是第 02 章的/);
  });

  test("写出的目录不存在：用法错误（退出码 2），给出创建它的命令", async () => {
    const nowhere = path.join(work.dir, "bad", "nowhere");
    const { code, stderr } = await verify("03", nowhere);
    assert.equal(code, 2);
    assert.ok(stderr.includes(`不存在：检查路径是否写对；要新建它，运行 npm run practice -- 03 ${nowhere}`), stderr);
  });

  test("默认或记下的目录不存在：还没运行 practice，是执行失败（退出码 1）", () => {
    const chapter = findChapter(loadChapters(LESSONS_DIR), "03");
    const attempt = (explicit: boolean) => {
      try {
        openPracticeDir(path.join(work.dir, "bad", "never-created"), chapter, explicit);
      } catch (error) {
        return isCourseError(error) ? [error.exitCode, error.message] : [0, String(error)];
      }
      return [0, ""];
    };
    assert.deepEqual(attempt(false)[0], 1);
    assert.match(String(attempt(false)[1]), /先运行 npm run practice -- 03/);
    assert.deepEqual(attempt(true)[0], 2);
  });
});

describe("verify：观察章与下一章", () => {
  test("第 00 章没有更早的章节：通过时不提“更早章节的测试”；下一章是 01，最后一章已点亮时 01 是“回头补”", async () => {
    const progress = path.join(work.dir, "ch00", "progress.json");
    const dir = path.join(work.dir, "ch00", "pi-practice-00");
    await practice("00", dir, progress);
    const { code, stdout, stderr } = await runScript("verify", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /✓ 第 00 章已点亮：编译干净，\d+ 项聚焦测试全部通过。/);
    assert.doesNotMatch(stdout, /更早章节/);
    assert.match(stdout, /下一章：第 01 章/);

    // 最后一章已经点亮：接下来的 01 是回头补的一章，说法与 status 一致
    const last = loadChapters(LESSONS_DIR).at(-1)!.id;
    const saved = JSON.parse(readFileSync(progress, "utf8")) as { verified: Record<string, unknown> };
    saved.verified[last] = { target: "", verifiedAt: new Date().toISOString(), dir: "" };
    writeFileSync(progress, JSON.stringify(saved));
    const again = await runScript("verify", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /^回头补：第 01 章 · /m);
    assert.doesNotMatch(again.stdout, /下一章/);
  });
});

describe("failureLocation：堆栈里第一帧落在 packages/pi-course 里的位置", () => {
  const project = path.join(work.dir, "location");
  const dist = path.join(project, "packages/pi-course/dist/src");

  before(() => {
    mkdirSync(dist, { recursive: true });
    writeFileSync(path.join(dist, "a.js"), "x\n");
    // 第 2 行的一段 IAME：生成列 4、源 0、源行 6、源列 2（都从 0 起）→ a.js:2:5 对应 src/a.ts:7:3
    writeFileSync(path.join(dist, "a.js.map"), JSON.stringify({ version: 3, file: "a.js", sources: ["../../src/a.ts"], names: [], mappings: ";IAME" }));
  });

  test("跳过 node 内部与依赖；有 .js.map 时换算回 .ts；没有时标出是编译后的文件", () => {
    const node = "    at Test.run (node:internal/test_runner/test:796:25)";
    const dependency = `    at x (${project}/node_modules/dep/index.js:1:1)`;
    const mapped = failureLocation({ stack: ["RangeError: 坏了", node, dependency, `    at boom (file://${dist}/a.js:2:5)`].join("\n") }, project);
    assert.deepEqual(mapped, { file: "packages/pi-course/src/a.ts", line: 7, column: 3, compiled: false });
    const unmapped = failureLocation({ stack: ["Error: 坏了", `    at ${project}/packages/pi-course/dist/src/b.js:4:2`].join("\n") }, project);
    assert.deepEqual(unmapped, { file: "packages/pi-course/dist/src/b.js", line: 4, column: 2, compiled: true });
    assert.equal(failureLocation({ stack: ["Error: 坏了", node].join("\n") }, project), undefined);
  });
});
