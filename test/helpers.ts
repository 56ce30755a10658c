import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { freshCompiledKit } from "../scripts/ci/compiled-kit.ts";

export const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** tsx 加载器的绝对地址：子进程的 cwd 可能在套件之外，按名字解析会找不到。 */
export const TSX = import.meta.resolve("tsx");

/**
 * npm test 预先编译好的套件脚本（scripts/ci/compiled-kit.ts）；只有与磁盘上的源文件逐字一致时才有，
 * 否则（单独跑一个测试文件、刚改过脚本）为 undefined，命令照旧经 tsx 运行源文件。
 */
export const COMPILED_KIT = freshCompiledKit(KIT);

/**
 * 启动套件命令 scripts/<name>.ts 的 node 参数（不含 node 本身）。套件就是本套件、并且有新鲜的编译副本时
 * 直接运行编译出的 JS，省掉 tsx 加载器每次约 0.5 秒的 CPU；别的套件（测试里的克隆）照旧经 tsx 运行它自己的源文件。
 */
export function kitScriptArgs(name: string, kit = KIT): string[] {
  if (kit === KIT && COMPILED_KIT !== undefined) return [path.join(COMPILED_KIT, "scripts", `${name}.js`)];
  return ["--import", TSX, path.join(kit, "scripts", `${name}.ts`)];
}

export interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * 测试里的命令默认把进度写进这个临时文件，绝不碰真实用户的进度；
 * 需要独立进度的测试自己传 PI_COURSE_PROGRESS。
 */
let scratchProgress: string | undefined;
function defaultProgressFile(): string {
  if (!scratchProgress) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pi-course-progress-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    scratchProgress = path.join(dir, "progress.json");
  }
  return scratchProgress;
}

/** 像学习者那样在子进程里运行一个套件命令（scripts/<name>.ts）。 */
export function runScript(
  script: string,
  args: readonly string[],
  options: { kit?: string; cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<Spawned> {
  const kit = options.kit ?? KIT;
  return spawnProcess(process.execPath, [...kitScriptArgs(script, kit), ...args], {
    cwd: options.cwd ?? kit,
    env: { ...process.env, NO_COLOR: "1", INIT_CWD: options.cwd ?? kit, PI_COURSE_PROGRESS: defaultProgressFile(), ...options.env },
  });
}

/** 像 `npm run status | head` 那样运行一个套件命令：读的一端先关掉，它第一次写就遇到 EPIPE。交回退出码与 stderr。 */
export function runIntoClosedPipe(script: string, args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...kitScriptArgs(script), ...args], {
    cwd: KIT,
    env: { ...process.env, NO_COLOR: "1", INIT_CWD: KIT, PI_COURSE_PROGRESS: defaultProgressFile(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

export function spawnProcess(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** 一个在套件之外的临时目录；测试结束时删除。 */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), `pi-course-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * 一个临时的“新克隆”：从套件的 HEAD 克隆，node_modules 链接到套件的依赖。
 * 用来测试默认目录、损坏的分支、不同的 git 配置，而不碰真正的套件。
 */
export async function cloneKit(into: string, name = "kit"): Promise<string> {
  const dir = path.join(into, name);
  const cloned = await spawnProcess("git", ["clone", "--quiet", "--no-hardlinks", KIT, dir], { cwd: into });
  if (cloned.code !== 0) throw new Error(`git clone 失败：${cloned.stderr}`);
  symlinkSync(path.join(KIT, "node_modules"), path.join(dir, "node_modules"), "junction");
  return dir;
}

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const result = await spawnProcess("git", args, { cwd });
  if (result.code !== 0) throw new Error(`git ${args.join(" ")} 失败：${result.stderr}`);
  return result.stdout.trim();
}

/** 这台机器有没有 util-linux 的 script 命令：有它才能给命令一个伪终端。 */
export const hasPty = process.platform === "linux" && spawnSync("script", ["--version"]).status === 0;

/**
 * 在伪终端里运行一个套件脚本（scripts/<name>.ts）：命令以为自己连着终端，会问问题、读按键；
 * 测试往 stdin 写按键，用 waitFor 等屏幕上出现某句话。
 */
export function runInTerminal(name: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  return runCommandInTerminal([process.execPath, ...kitScriptArgs(name), ...args], KIT, env);
}

/** 在伪终端里运行任意一条命令（例如 node_modules/.bin/tiny-pi），cwd 由调用方给出。 */
export function runCommandInTerminal(argv: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const command = argv.map((part) => `'${part}'`).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    cwd,
    env: { ...process.env, NO_COLOR: "1", INIT_CWD: cwd, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  child.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString("utf8")));
  const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
  return {
    child,
    closed,
    /** 到目前为止屏幕上的全部输出。 */
    output: () => screen,
    /** 忘掉已经看到的输出，之后的 waitFor 只看新的。 */
    clear: () => {
      screen = "";
    },
    async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(screen)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`等不到 ${pattern}：\n${screen}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}
