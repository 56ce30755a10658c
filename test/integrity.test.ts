// 一次“通过”必须是本章真实测试的通过：改编译配置、提前退出、关掉断言都不能把失败的代码变成点亮。
import assert from "node:assert/strict";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";

import { runScript, tempDir } from "./helpers.js";

const work = tempDir("integrity");
after(() => work.remove());

const PROLOGUE = "packages/pi-course/src/prologue.ts";
let round = 0;
let dir = "";
let progress = "";

/** 练习目录里的一处真实错误：编号从 0 开始，聚焦测试必定失败，但照样能编译。 */
function breakSolution(): void {
  const file = path.join(dir, PROLOGUE);
  const text = readFileSync(file, "utf8");
  const broken = text.replace("`${index + 1}. ${line}`", "`${index}. ${line}`");
  assert.notEqual(broken, text);
  writeFileSync(file, broken);
}

async function verify() {
  const result = await runScript("verify", ["00", dir, "--json"], { env: { PI_COURSE_PROGRESS: progress } });
  const report = JSON.parse(result.stdout) as { passed: boolean; lit: boolean };
  return { ...result, report };
}

describe("verify 只为本章真实的测试点亮", () => {
  before(() => {
    progress = path.join(work.dir, "progress.json");
  });
  beforeEach(async () => {
    round += 1;
    dir = path.join(work.dir, `p${round}`);
    const made = await runScript("practice", ["00", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(made.code, 0, made.stderr);
    writeFileSync(progress, "");
  });

  test("对照组：改坏的代码 verify 不通过", { timeout: 120_000 }, async () => {
    breakSolution();
    const { code, report } = await verify();
    assert.equal(code, 1);
    assert.equal(report.passed, false);
  });

  test("tsconfig 的 rootDir / include 指向一份完好的副本：不通过，并指出 tsconfig.json 被改过", { timeout: 120_000 }, async () => {
    const pkg = path.join(dir, "packages/pi-course");
    cpSync(path.join(pkg, "src"), path.join(pkg, "shadow/src"), { recursive: true });
    cpSync(path.join(pkg, "test"), path.join(pkg, "shadow/test"), { recursive: true });
    breakSolution();
    const config = JSON.parse(readFileSync(path.join(pkg, "tsconfig.json"), "utf8")) as { compilerOptions: Record<string, unknown>; include: string[] };
    config.compilerOptions.rootDir = "shadow";
    config.include = ["shadow"];
    writeFileSync(path.join(pkg, "tsconfig.json"), JSON.stringify(config, null, 2));
    const { code, stdout, report } = await verify();
    assert.equal(code, 1, stdout);
    assert.equal(report.passed, false);
    assert.equal(report.lit, false);
    assert.match(stdout, /tsconfig\.json/);
  });

  test("学习者的模块在顶层调用 process.exit(0)：不通过", { timeout: 120_000 }, async () => {
    breakSolution();
    writeFileSync(path.join(dir, PROLOGUE), `${readFileSync(path.join(dir, PROLOGUE), "utf8")}\nprocess.exit(0);\n`);
    const { code, report } = await verify();
    assert.equal(code, 1);
    assert.equal(report.passed, false);
  });

  test("学习者的代码把 node:assert 的断言换成空函数：不通过", { timeout: 120_000 }, async () => {
    breakSolution();
    writeFileSync(
      path.join(dir, PROLOGUE),
      `import * as quiet from "node:assert/strict";\n${readFileSync(path.join(dir, PROLOGUE), "utf8")}\n` +
        `try { for (const name of ["equal", "deepEqual", "match", "ok", "throws"]) (quiet.default as unknown as Record<string, unknown>)[name] = () => {}; } catch {}\n`,
    );
    const { code, report } = await verify();
    assert.equal(code, 1);
    assert.equal(report.passed, false);
  });
});
