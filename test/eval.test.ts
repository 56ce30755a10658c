import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { chooseEvalProject } from "../scripts/engine/eval.ts";
import { PRACTICE_MARKER } from "../scripts/engine/practice.ts";
import { KIT, runScript, spawnProcess, tempDir } from "./helpers.ts";

const work = tempDir("eval");
after(() => work.remove());

/**
 * 一个“学习者的项目”：有练习目录的标记，src/eval 是它自己写的（这里故意写得和课程不一样），
 * 于是输出里看得出 npm run eval 跑的是谁的代码、拿到了什么参数。
 */
function learnerProject(name: string): string {
  const dir = path.join(work.dir, name);
  const src = path.join(dir, "packages", "pi-course", "src");
  mkdirSync(path.join(src, "eval"), { recursive: true });
  // 与真实的课程项目一样是 ES 模块：没有它，.ts 源码会被当成 CommonJS 读
  writeFileSync(path.join(dir, "packages", "pi-course", "package.json"), JSON.stringify({ name: "@pi/course", type: "module" }));
  writeFileSync(path.join(dir, PRACTICE_MARKER), JSON.stringify({ chapter: "14", slug: "eval-capstone", start: "x", kitRoot: KIT }));
  writeFileSync(path.join(src, "eval", "tasks.ts"), 'export const VISIBLE_TASKS = [{ id: "mine" }];\n');
  writeFileSync(
    path.join(src, "eval", "run.ts"),
    "export async function runEval(tasks: { id: string }[], options: { model?: unknown }) {\n" +
      "  return tasks.map((task) => ({ id: `${task.id}:${JSON.stringify(options.model ?? null)}`, ok: options.model === undefined }));\n}\n",
  );
  writeFileSync(
    path.join(src, "eval", "report.ts"),
    "export const formatEvalTable = (reports: { id: string }[]) => `学习者自己的表：${reports.map((r) => r.id).join()}`;\n" +
      "export const evalSummary = (reports: { ok: boolean }[]) => ({ passed: reports.filter((r) => r.ok).length, total: reports.length });\n",
  );
  writeFileSync(path.join(src, "openai-compatible.ts"), "export const modelFromEnv = (env: Record<string, string>) => (env.PI_COURSE_BASE_URL ? { url: env.PI_COURSE_BASE_URL } : undefined);\n");
  return dir;
}

test("npm run eval 在套件上打印表格：每个可见任务都在真正的 tiny-pi 上通过，退出码 0", { timeout: 60_000 }, async () => {
  const result = await runScript("eval", []);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /^任务\s+结果\s+检查\s+步数\s+工具错误\s+token\s+用时$/m);
  assert.match(result.stdout, /^readme-name\s+通过/m);
  assert.match(result.stdout, /通过 (\d+)\/\1 个任务/);
});

test("在练习目录里跑的是练习目录自己的代码：kit.mjs 补上目录，不写目录时从敲命令的地方往上找；--json 给脚本用", { timeout: 30_000 }, async () => {
  const dir = learnerProject("own");
  const inner = path.join(dir, "packages", "pi-course");
  copyFileSync(path.join(KIT, "packages", "pi-course", "kit.mjs"), path.join(inner, "kit.mjs"));
  const table = await spawnProcess(process.execPath, [path.join(inner, "kit.mjs"), "eval"], { cwd: inner, env: { ...process.env, NO_COLOR: "1" } });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /学习者自己的表：mine:null/);
  assert.equal(chooseEvalProject(KIT, path.join(inner, "src"), undefined), dir);
  const json = await runScript("eval", [dir, "--json"]);
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { project: dir, live: false, passed: 1, total: 1, tasks: [{ id: "mine:null", ok: true }] });
});

test("--live 把项目自己的 modelFromEnv 接上的模型交给它的 eval；没有 PI_COURSE_BASE_URL 是用法错误", { timeout: 30_000 }, async () => {
  const dir = learnerProject("live");
  const live = await runScript("eval", [dir, "--live"], { env: { PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1", PI_COURSE_MODEL: "m" } });
  assert.equal(live.code, 1, "学习者的桩在 live 时判为失败：退出码 1");
  assert.match(live.stdout, /学习者自己的表：mine:\{"url":"http:\/\/127\.0\.0\.1:9\/v1"\}/);
  const missing = await runScript("eval", [dir, "--live"], { env: { PI_COURSE_BASE_URL: "" } });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--live 要连一个真实模型：先设置 PI_COURSE_BASE_URL/);
});

test("eval 自己还没写完（抛出“尚未实现”）：一句中文，不打堆栈，退出码 1", { timeout: 30_000 }, async () => {
  const dir = learnerProject("unfinished");
  writeFileSync(path.join(dir, "packages", "pi-course", "src", "eval", "run.ts"), 'export async function runEval() {\n  throw new Error("Lab 14.2 尚未实现");\n}\n');
  const result = await runScript("eval", [dir]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /的 eval 自己抛出了错误：Lab 14\.2 尚未实现。先让本章的聚焦测试通过：npm run verify -- 14/);
  assert.doesNotMatch(result.stderr, /\n\s+at /, "不该打出堆栈");
});

test("还没写到第 14 章的项目：一句中文说明去哪里写 eval", { timeout: 30_000 }, async () => {
  const dir = path.join(work.dir, "early");
  mkdirSync(path.join(dir, "packages", "pi-course", "src"), { recursive: true });
  const result = await runScript("eval", [dir]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /里还没有 eval（packages\/pi-course\/src\/eval\/run\.ts）：它在第 14 章写成。在自己的代码上跑：npm run practice -- 14 --continue/);
  assert.equal(chooseEvalProject(KIT, path.join(work.dir, "nowhere"), undefined), KIT);
});
