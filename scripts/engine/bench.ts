import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { CourseError } from "./errors.js";
import { checkoutTree, type CourseHistory } from "./history.js";
import { createPractice } from "./practice.js";
import { buildProject, compiledTestPath, runTests } from "./runner.js";

/**
 * 性能目标（README 里 npm run bench 那一行列出的各项），逐项测中位数。每个场景是一个异步函数，
 * bench 命令决定跑几次、怎样打印；这里只负责“准备 + 计时一次”。
 */
export interface Target {
  /** 上限（毫秒）或下限（倍数）。 */
  limit: number;
  kind: "max-ms" | "min-ratio";
  text: string;
}

export const TARGETS = {
  watch: { limit: 300, kind: "max-ms", text: "≤ 0.3 s" },
  verify: { limit: 1_200, kind: "max-ms", text: "≤ 1.2 s" },
  verifyLast: { limit: 2_500, kind: "max-ms", text: "≤ 2.5 s" },
  practice: { limit: 500, kind: "max-ms", text: "≤ 0.5 s" },
  history: { limit: 2_000, kind: "max-ms", text: "≤ 2 s" },
  lint: { limit: 10_000, kind: "max-ms", text: "≤ 10 s" },
  npmTest: { limit: 120_000, kind: "max-ms", text: "≤ 2 min" },
  npmTestWarm: { limit: 45_000, kind: "max-ms", text: "≤ 45 s" },
} as const satisfies Record<string, Target>;

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export function meets(target: Target, value: number): boolean {
  return target.kind === "max-ms" ? value <= target.limit : value >= target.limit;
}

export async function timed(action: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

/** verify 的 ≤ 1.2 s 是对这一章定的（连同它之前的七章）；最后一章另有 ≤ 2.5 s。 */
const TARGET_CHAPTER = "08";

/** bench 练习哪一章：默认是 verify 目标所指的第 08 章；没有这一章时，最后一个重建章（代码最多、编译最慢）。 */
export function benchChapter(chapters: readonly Chapter[]): Chapter {
  const rebuilt = chapters.filter((candidate) => candidate.mode === "重建");
  const chapter = rebuilt.find((candidate) => candidate.id === TARGET_CHAPTER) ?? rebuilt.at(-1) ?? chapters.at(-1);
  if (!chapter) throw new CourseError("NO_CHAPTERS", "没有任何章节可以测");
  return chapter;
}

/** 一个“已经做完”的练习目录：practice 创建，再把目标提交的文件铺上去。 */
export async function solvedPractice(kitRoot: string, chapter: Chapter, history: CourseHistory, dir: string): Promise<void> {
  await createPractice({ kitRoot, chapter, history, dir });
  const target = history.chapters[chapter.id]?.target;
  if (!target) throw new CourseError("HISTORY_STALE", `课程历史里没有第 ${chapter.id} 章`);
  await checkoutTree(kitRoot, target, dir);
}

/**
 * 课文里写的学习循环，原样在练习目录里运行：npm run build -w @pi/course，然后 node --test 本章的聚焦测试。
 * 分别计时两段；测试必须全部通过（否则测的不是同一件事）。
 */
export async function documentedLoop(dir: string, chapter: Chapter): Promise<{ buildMs: number; testMs: number; totalMs: number }> {
  const started = performance.now();
  await spawnChecked(npmCommand(), ["run", "build", "-w", "@pi/course"], dir);
  const built = performance.now();
  const testFile = path.relative(dir, compiledTestPath(dir, chapter.focusedTest.path));
  await spawnChecked(process.execPath, ["--test", testFile], dir);
  const done = performance.now();
  return { buildMs: built - started, testMs: done - built, totalMs: done - started };
}

/** 编译一次（冷启动，先清空 dist/），不经 npm：看 npm 自己占了学习循环多少时间。 */
export async function compileOnce(dir: string, tsc?: string): Promise<number> {
  const started = performance.now();
  const build = await buildProject(dir, tsc ? { tsc } : {});
  if (!build.ok) throw new CourseError("BENCH_BUILD_FAILED", `bench 的练习目录编译失败：${build.errors[0]?.message ?? build.output.slice(0, 200)}`);
  return performance.now() - started;
}

/**
 * 测试只跑一次，不计编译：学习循环里测试本身占多少。wallMs 是整个进程，ownMs 是 node:test 报告的各项测试用时之和
 * （两者之差是启动 node、加载模块的开销）。
 */
export async function focusedTestOnce(dir: string, chapter: Chapter): Promise<{ wallMs: number; ownMs: number }> {
  const started = performance.now();
  const report = await runTests([compiledTestPath(dir, chapter.focusedTest.path)]);
  if (report.failed > 0 || report.passed !== chapter.focusedTest.count) {
    throw new CourseError("BENCH_TESTS_FAILED", `bench 的练习目录里聚焦测试没有全部通过（${report.passed}/${report.tests.length}）`);
  }
  const wallMs = performance.now() - started;
  return { wallMs, ownMs: report.tests.reduce((sum, test) => sum + (test.ms ?? 0), 0) };
}

/** 启动一次什么也不做的 node：学习循环的下限里，测试进程至少要付这么多。 */
export async function nodeStartOnce(): Promise<number> {
  return timed(() => spawnChecked(process.execPath, ["-e", ""], os.tmpdir()));
}

function npmCommand(): string {
  return process.platform === "win32" ? "npm.cmd" : "npm";
}

/**
 * 换成 TypeScript 5.9 的依赖目录：套件 node_modules 里的每一项都链接过来，
 * 只有 typescript 指向 typescript-5.9。练习目录的 node_modules 指向它，
 * 课文里的同一条命令就用 5.9 编译——“同一个循环，换一个编译器”。
 */
export function typescript59Modules(kitRoot: string, into: string): string {
  const modules = path.join(into, "node_modules-ts59");
  mkdirSync(path.join(modules, ".bin"), { recursive: true });
  const kitModules = path.join(kitRoot, "node_modules");
  for (const entry of readdirSync(kitModules)) {
    if (entry === ".bin" || entry === "typescript" || entry.startsWith(".")) continue;
    symlinkSync(path.join(kitModules, entry), path.join(modules, entry), "junction");
  }
  symlinkSync(path.join(kitModules, "typescript-5.9"), path.join(modules, "typescript"), "junction");
  for (const bin of ["tsc", "tsserver"]) symlinkSync(path.join("..", "typescript", "bin", bin), path.join(modules, ".bin", bin));
  return modules;
}

/** 让练习目录用另一个依赖目录（替换 practice 建的 node_modules 链接）。 */
export function useModules(dir: string, modules: string): void {
  rmSync(path.join(dir, "node_modules"), { recursive: true, force: true });
  symlinkSync(modules, path.join(dir, "node_modules"), "junction");
}

/** 像学习者一样在子进程里运行一个套件命令；失败时带上它的 stderr。 */
export function runKitScript(kitRoot: string, script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<void> {
  return spawnChecked(process.execPath, [path.join(kitRoot, "scripts", "launch.mjs"), script, ...args], kitRoot, env);
}

export function spawnChecked(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve();
      else reject(new CourseError("BENCH_STEP_FAILED", `${args.map((arg) => path.basename(arg)).join(" ")} 以 ${code} 退出：${stderr.trim().split("\n")[0] ?? ""}`));
    });
  });
}

/**
 * 首次构建课程历史：一个只含主分支的新克隆（没有任何课程提交的对象），
 * 在里面运行 npm run course -- history 的同一条命令并计时。克隆本身不计时。
 */
export async function freshClone(kitRoot: string, into: string): Promise<string> {
  const dir = mkdtempSync(path.join(into, "clone-"));
  rmSync(dir, { recursive: true });
  await spawnChecked("git", ["clone", "--quiet", "--no-hardlinks", "--single-branch", "--no-tags", kitRoot, dir], into);
  symlinkSync(path.join(kitRoot, "node_modules"), path.join(dir, "node_modules"), "junction");
  return dir;
}

export function benchWorkRoot(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pi-course-bench-"));
  mkdirSync(dir, { recursive: true });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
