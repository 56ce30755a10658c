import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { buildProject } from "../scripts/engine/runner.ts";
import { hasPty, spawnProcess, tempDir } from "./helpers.ts";
import { card, practice, solveTo } from "./learner.ts";

/**
 * 课文（第 00、02、03 章）描述的 node --test 原始输出，在运行这份测试的 Node 版本上逐条成立。
 * CI 用 scripts/ci/node-lines.mjs 在 Node 20、22、24、26 上各跑一次，所以每条版本线的说法都被检查到。
 * 子进程一律用 process.execPath：检查的正是正在受测的那个 Node。
 */
const major = Number(process.versions.node.split(".")[0]);

const work = tempDir("node-output");
after(() => work.remove());

const dir = path.join(work.dir, "pi-practice-03");
const focused = "packages/pi-course/dist/test/03-message-ir.test.js";

/** 学习者的终端环境：没有套件测试进程给子进程的 NODE_TEST_CONTEXT（否则子进程的 node --test 改用内部协议输出）。 */
function learnerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** 像学习者那样在练习目录里运行 node --test；输出接进管道。 */
async function piped(...args: string[]): Promise<string> {
  const { stdout } = await spawnProcess(process.execPath, ["--test", ...args, focused], { cwd: dir, env: learnerEnv() });
  return stdout;
}

/** 同一条命令在伪终端里运行（课文说的“在终端里”），去掉颜色。 */
function inTerminal(...args: string[]): string {
  const command = [process.execPath, "--test", ...args, focused].map((part) => `'${part}'`).join(" ");
  const result = spawnSync("script", ["-qfec", command, "/dev/null"], { cwd: dir, encoding: "utf8", env: learnerEnv() });
  return result.stdout.replace(/\x1b\[[0-9;]*m/g, "").replace(/\r/g, "");
}

/** 汇总行的前缀：Node 20、22 在管道里打 TAP（#），终端里和 Node 24 起都是 spec（ℹ）。 */
function pipedPrefix(): string {
  return major < 24 ? "#" : "ℹ";
}

describe(`node --test 的原始输出与课文的描述一致（Node ${process.versions.node}）`, () => {
  before(async () => {
    await practice("03", dir, path.join(work.dir, "progress.json"));
    await solveTo("03", dir, "3.1");
    const build = await buildProject(dir);
    assert.ok(build.ok, build.output);
  });

  test("名称过滤：只有 Node 20 列出没被选中的测试并计入 skipped 与 tests", async () => {
    const out = await piped("--test-name-pattern=文本投影");
    const p = pipedPrefix();
    assert.match(out, new RegExp(`^${p} pass 1$`, "m"));
    assert.match(out, new RegExp(`^${p} fail 0$`, "m"));
    if (major === 20) {
      assert.match(out, /^# tests 4$/m);
      assert.match(out, /^# skipped 3$/m);
      assert.match(out, /# SKIP test name does not match pattern$/m);
    } else {
      assert.match(out, new RegExp(`^${p} tests 1$`, "m"));
      assert.match(out, new RegExp(`^${p} skipped 0$`, "m"));
      assert.doesNotMatch(out, /does not match pattern/);
    }
  });

  test("实践 3.1 做完、3.2 没做时跑整份文件：Node 20、22 取消 3 项，Node 24 起超时 1 项、其余照常运行", async () => {
    const out = await piped();
    const p = pipedPrefix();
    assert.match(out, new RegExp(`^${p} tests 4$`, "m"));
    if (major < 24) {
      assert.match(out, /^# pass 1$/m);
      assert.match(out, /^# cancelled 3$/m);
      assert.match(out, /Promise resolution is still pending but the event loop has already resolved/);
    } else {
      assert.match(out, /^ℹ pass 3$/m);
      assert.match(out, /^ℹ cancelled 1$/m);
      assert.match(out, /test timed out after 1000ms/);
    }
  });

  test("在终端里：逐项以 ✔ 开头，汇总写作 ℹ pass 1；Node 20 的跳过行写着 # test name does not match pattern", { skip: hasPty ? false : "需要 util-linux 的 script 命令来提供伪终端" }, () => {
    const out = inTerminal("--test-name-pattern=文本投影");
    assert.match(out, /^✔ 文本投影有损，但不修改原 content/m);
    assert.match(out, /^ℹ pass 1$/m);
    assert.match(out, major === 20 ? /^ℹ tests 4$/m : /^ℹ tests 1$/m);
    if (major === 20) assert.match(out, /# test name does not match pattern$/m);
    else assert.doesNotMatch(out, /does not match pattern/);
  });
});

/**
 * 第 02 章实践 2.1 做完、2.2 没做（照 2.1 的局部代码提示写出 push 与迭代器，end()、result() 先抛错）：
 * 整份文件的结果，课文按版本线写明。
 */
describe(`第 02 章实践 2.1 之后跑整份文件（Node ${process.versions.node}）`, () => {
  const dir02 = path.join(work.dir, "pi-practice-02");
  const focused02 = "packages/pi-course/dist/test/02-event-stream.test.js";

  before(async () => {
    await practice("02", dir02, path.join(work.dir, "progress.json"));
    const hint = (await card("02")).labs.find((lab) => lab.id === "2.1")?.hints.code;
    assert.ok(hint, "实践 2.1 的局部代码提示");
    const source = [
      "export class EventStream<T, R = T> implements AsyncIterable<T> {",
      "  private buffered: T[] = [];",
      "  private waiters: Array<(step: IteratorResult<T>) => void> = [];",
      "  constructor(readonly isComplete: (event: T) => boolean, readonly extractResult: (event: T) => R) {}",
      hint,
      '  end(_result?: R): void { throw new Error("实践 2.1 尚未实现"); }',
      '  result(): Promise<R> { throw new Error("实践 2.1 尚未实现"); }',
      "}",
    ].join("\n");
    writeFileSync(path.join(dir02, "packages/pi-course/src/event-stream.ts"), source);
    const build = await buildProject(dir02);
    assert.ok(build.ok, build.output);
  });

  test("只有前 3 项通过；Node 20、22 取消第 5、6 项，Node 24 起第 5 项超时、第 6 项照常运行并失败", async () => {
    const { stdout: out } = await spawnProcess(process.execPath, ["--test", focused02], { cwd: dir02, env: learnerEnv() });
    const p = pipedPrefix();
    assert.match(out, new RegExp(`^${p} pass 3$`, "m"));
    assert.match(out, /实践 2\.1 尚未实现/);
    if (major < 24) {
      assert.match(out, /^# fail 1$/m);
      assert.match(out, /^# cancelled 2$/m);
    } else {
      assert.match(out, /^ℹ fail 2$/m);
      assert.match(out, /^ℹ cancelled 1$/m);
      assert.match(out, /test timed out after 1000ms/);
    }
  });
});
