import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { cacheable, CLONE_LESSON_READERS, countsByFile, hidesLessons, lessonHiding, LESSON_READERS, longestFirst, readDurations } from "../scripts/ci/kit-file-cache.mjs";
import { lessonHidden } from "../scripts/engine/chapters.ts";
import { git, KIT, spawnProcess, tempDir } from "./helpers.ts";

const work = tempDir("kit-file-cache");
after(() => work.remove());

test("哪些结果进缓存：文件跑完、至少一项通过，没有失败与跳过；没跑完（被中断）的不进", () => {
  const record = (file: string, fields: object) => JSON.stringify({ file, ...fields });
  const counts = countsByFile([
    record("a", { ok: true, skipped: false }),
    record("a", { done: true, ok: true }),
    record("b", { ok: true, skipped: true }),
    record("b", { ok: true, skipped: false }),
    record("b", { done: true, ok: true }),
    record("c", { ok: false, skipped: false }),
    record("c", { done: true, ok: false }),
    record("d", { ok: true, skipped: false }),
    record("e", { done: true, ok: false }),
    "不是 JSON",
  ]);
  assert.deepEqual(
    ["a", "b", "c", "d", "e", "f"].map((file) => cacheable(counts.get(file))),
    [true, false, false, false, false, false],
    "a 整个通过；b 有一项跳过；c 有一项失败；d 没跑完；e 加载失败；f 没有记录",
  );
});

/**
 * 一个最小的“套件”（git 仓库）：npm test 的启动脚本与 tests 里的测试文件（名字 → 测试代码），
 * 每个文件每跑一次在 runs/ 里留一个记号。
 */
async function miniKit(name: string, tests: Record<string, string>) {
  const dir = path.join(work.dir, name);
  mkdirSync(path.join(dir, "scripts", "ci"), { recursive: true });
  for (const file of ["run-tests.mjs", "kit-file-cache.mjs", "file-results.mjs", "hide-lessons.mjs"]) copyFileSync(path.join(KIT, "scripts", "ci", file), path.join(dir, "scripts", "ci", file));
  mkdirSync(path.join(dir, "test", "_selfcheck"), { recursive: true });
  mkdirSync(path.join(dir, "runs"));
  for (const [test, body] of Object.entries(tests)) {
    const mark = `appendFileSync(${JSON.stringify(path.join(dir, "runs", test))}, "x");`;
    writeFileSync(path.join(dir, "test", `${test}.test.ts`), `import assert from "node:assert/strict";\nimport { appendFileSync } from "node:fs";\nimport { test } from "node:test";\n${mark}\n${body}\n`);
  }
  mkdirSync(path.join(dir, "lessons", "01-x"), { recursive: true });
  writeFileSync(path.join(dir, "lessons", "01-x", "lesson.md"), "# 第 01 章\n");
  writeFileSync(path.join(dir, "lessons", "01-x", "chapter.patch"), "");
  writeFileSync(path.join(dir, ".gitignore"), "node_modules\nruns/\n");
  writeFileSync(path.join(dir, "README.md"), "一个最小的套件\n");
  symlinkSync(path.join(KIT, "node_modules"), path.join(dir, "node_modules"), "junction");
  await git(dir, "init", "--quiet");
  await git(dir, "add", ".");
  await git(dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "套件");
  // 像在终端里运行 npm test：没有外层测试进程给的 NODE_TEST_CONTEXT、PI_COURSE_HIDE_LESSONS，也没有 CI
  const { CI: _ci, NODE_TEST_CONTEXT: _context, PI_COURSE_HIDE_LESSONS: _hidden, ...rest } = process.env;
  return {
    dir,
    runs: (test: string) => (existsSync(path.join(dir, "runs", test)) ? readFileSync(path.join(dir, "runs", test), "utf8").length : 0),
    npmTest: async (args: string[] = [], env: NodeJS.ProcessEnv = {}, expectedCode = 0) => {
      const result = await spawnProcess(process.execPath, [path.join(dir, "scripts", "ci", "run-tests.mjs"), ...args], {
        cwd: dir,
        env: { ...rest, PI_COURSE_SELFCHECK_CACHE_DIR: path.join(work.dir, `${name}-cache`), ...env },
      });
      assert.equal(result.code, expectedCode, result.stdout + result.stderr);
      return result.stdout;
    },
  };
}

test("套件测试文件的缓存：整个通过的文件下次不再跑；任何一个文件改了、--no-cache、CI=true、缓存关了、选了部分测试都照常跑；有跳过的文件每次都跑", { timeout: 120_000 }, async () => {
  const kit = await miniKit("kit", { green: `test("通过", () => {});`, skips: `test("通过", () => {});\ntest("跳过", { skip: "没有这个程序" }, () => {});` });
  let out = await kit.npmTest();
  assert.match(out, /套件测试：2 个文件这次重新跑，1 个整个通过、记进缓存/);
  assert.deepEqual([kit.runs("green"), kit.runs("skips")], [1, 1]);

  out = await kit.npmTest();
  assert.match(out, /套件测试：1 个文件来自缓存（同样的输入上次整个通过），1 个文件这次重新跑/);
  assert.deepEqual([kit.runs("green"), kit.runs("skips")], [1, 2], "整个通过的文件没有再跑；有跳过的那个又跑了");

  writeFileSync(path.join(kit.dir, "README.md"), "一个最小的套件（改了一个字）\n");
  await kit.npmTest();
  assert.equal(kit.runs("green"), 2, "套件里任何一个没被忽略的文件变了，都重新跑");
  writeFileSync(path.join(kit.dir, "NOTES.md"), "一个还没提交的新文件\n");
  await kit.npmTest();
  assert.equal(kit.runs("green"), 3, "没跟踪的新文件也是输入");
  await kit.npmTest();
  assert.equal(kit.runs("green"), 3, "输入没变：来自缓存");

  out = await kit.npmTest(["--no-cache"]);
  assert.match(out, /套件测试：2 个文件全部重新跑（--no-cache，不用缓存）/);
  await kit.npmTest([], { CI: "true" });
  await kit.npmTest(["--test-name-pattern=通过"]);
  await kit.npmTest([], { PI_COURSE_SELFCHECK_CACHE: "off" });
  assert.equal(kit.runs("green"), 7, "--no-cache、CI=true、--test-name-pattern、PI_COURSE_SELFCHECK_CACHE=off 都照常跑");

  await kit.npmTest([], { PI_COURSE_EXAMPLE: "1" });
  assert.equal(kit.runs("green"), 8, "PI_COURSE_ 开头的环境变量也是输入");
});

test("套件测试文件的缓存：跑的途中套件里有文件改了，这次一个结果也不记（它们对应不上任何一份输入）", { timeout: 60_000 }, async () => {
  const kit = await miniKit("edited-midway", {
    green: `test("通过", () => {});`,
    editor: `import { writeFileSync } from "node:fs";\ntest("一边跑一边改了套件里的文件", () => writeFileSync(${JSON.stringify(path.join(work.dir, "edited-midway", "README.md"))}, String(Date.now())));`,
  });
  assert.match(await kit.npmTest(), /套件测试：2 个文件这次重新跑，0 个整个通过、记进缓存（跑的途中套件里有文件改了，这次一个也不记）/);
  await kit.npmTest();
  assert.equal(kit.runs("green"), 2, "没有记下的结果，下次照跑");
});

test("套件测试文件的缓存：失败的文件不进缓存，下次照跑", { timeout: 60_000 }, async () => {
  const kit = await miniKit("failing", { red: `test("通过", () => {});\ntest("失败", () => assert.equal(1, 2));` });
  for (let round = 1; round <= 2; round++) {
    assert.match(await kit.npmTest([], {}, 1), /套件测试：1 个文件这次重新跑，0 个整个通过、记进缓存/, "有测试失败，npm test 失败");
  }
  assert.equal(kit.runs("red"), 2);
});

test("跑得久的文件先开：每次运行记下各文件的用时（失败的也记），下一次按它从长到短排；没有记录的排最前；--no-cache 时不记", { timeout: 60_000 }, async () => {
  assert.deepEqual(
    longestFirst(["test/a.test.ts", "test/b.test.ts", "test/c.test.ts", "test/new.test.ts"], { "test/a.test.ts": 100, "test/b.test.ts": 900, "test/c.test.ts": 100 }),
    ["test/new.test.ts", "test/b.test.ts", "test/a.test.ts", "test/c.test.ts"],
  );
  const kit = await miniKit("durations", {
    quick: `test("通过", () => {});`,
    slow: `test("等一下", () => new Promise((resolve) => setTimeout(resolve, 400)));\ntest("失败", () => assert.equal(1, 2));`,
  });
  const cacheDir = path.join(work.dir, "durations-cache", "kit-files");
  await kit.npmTest(["--no-cache"], {}, 1);
  assert.deepEqual(readDurations(cacheDir), {}, "--no-cache 时什么也不写");
  await kit.npmTest([], {}, 1);
  const durations = readDurations(cacheDir);
  assert.ok((durations["test/slow.test.ts"] ?? 0) >= 400, JSON.stringify(durations));
  assert.ok((durations["test/quick.test.ts"] ?? Infinity) < (durations["test/slow.test.ts"] ?? 0), JSON.stringify(durations));
  assert.deepEqual(longestFirst(["test/quick.test.ts", "test/slow.test.ts"], durations), ["test/slow.test.ts", "test/quick.test.ts"]);
});

test("不读课文的套件测试在看不到课文的进程里跑，只经克隆读课文的只看不到本套件的课文，改课文不必重跑它们；读课文的文件（LESSON_READERS）与补丁的改动照常重跑", { timeout: 120_000 }, async () => {
  assert.ok(LESSON_READERS.includes("test/lint.test.ts"));
  assert.ok(CLONE_LESSON_READERS.includes("test/authoring.test.ts"));
  assert.deepEqual(["test/lint.test.ts", "test/verify.test.ts", "test/_selfcheck/shard-1.test.ts"].map(hidesLessons), [false, true, false], "自检分片不归它管");
  assert.deepEqual(
    ["test/lint.test.ts", "test/verify.test.ts", "test/authoring.test.ts"].map((file) => lessonHiding(file, "/kit")),
    [undefined, "1", "/kit"],
  );
  const seesLessons = (expected: string) => `test("看不看得到课文", () => assert.equal(process.env.PI_COURSE_HIDE_LESSONS, ${expected}));`;
  const dir = path.join(work.dir, "lessons");
  const kit = await miniKit("lessons", { verify: seesLessons(`"1"`), lint: seesLessons("undefined"), authoring: seesLessons(JSON.stringify(dir)) });
  const runs = () => [kit.runs("verify"), kit.runs("lint"), kit.runs("authoring")];
  await kit.npmTest();
  assert.deepEqual(runs(), [1, 1, 1], "看不到课文的进程里确实设了 PI_COURSE_HIDE_LESSONS（只经克隆读课文的是套件根目录），读课文的没设");
  writeFileSync(path.join(kit.dir, "lessons", "01-x", "lesson.md"), "# 第 01 章（改了课文）\n");
  const out = await kit.npmTest();
  assert.match(out, /套件测试：2 个文件来自缓存/);
  assert.deepEqual(runs(), [1, 2, 1], "改课文：只有读课文的文件重跑");
  writeFileSync(path.join(kit.dir, "lessons", "01-x", "chapter.patch"), "补丁也改了\n");
  await kit.npmTest();
  assert.deepEqual(runs(), [2, 3, 2], "改补丁：都重跑");
  await git(kit.dir, "add", ".");
  await git(kit.dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "提交课文的改动");
  await kit.npmTest();
  assert.deepEqual(runs(), [3, 4, 3], "提交之后 HEAD 变了（克隆出来的套件会读到新课文）：都重跑");
});

test("PI_COURSE_HIDE_LESSONS：1 藏起每一章的课文；值是套件根目录时只藏那个套件 lessons/ 下的课文，别处（克隆）的照常看得到", () => {
  const kitChapter = path.join(KIT, "lessons", "03-message-ir");
  const cloneChapter = path.join(work.dir, "clone", "lessons", "03-message-ir");
  assert.deepEqual(
    [{}, { PI_COURSE_HIDE_LESSONS: "1" }, { PI_COURSE_HIDE_LESSONS: KIT }, { PI_COURSE_HIDE_LESSONS: "" }].map((env) => [lessonHidden(kitChapter, env), lessonHidden(cloneChapter, env)]),
    [
      [false, false],
      [true, true],
      [true, false],
      [false, false],
    ],
  );
});
