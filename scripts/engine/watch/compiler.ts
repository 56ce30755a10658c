import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import path from "node:path";

import { filesUnder } from "../../kit-cache.mjs";
import { COURSE_PACKAGE } from "../paths.js";
import { parseTscOutput, tscCommand, type BuildResult } from "../runner.js";

/**
 * 一直开着的编译器：项目自己的 TypeScript 以 tsc --watch 运行，保存之间把程序留在内存里，
 * 一次改动只重新检查受影响的文件、只写出变了的输出（冷启动的 tsc 每次都要从头读 @types/node）。
 *
 * 它从标准输出里报告两件事：一轮编译开始（started）和结束（finished，带这一轮的错误）。
 * 一轮从哪个时刻开始由 generation 编号区分，调用方据此判断某一轮是否发生在某次保存之后。
 */
export interface CompileRound {
  /** 第几轮（从 1 起）。 */
  generation: number;
  /** 本进程看到这一轮开始的时刻（performance.now()）。 */
  startedAt: number;
  build: BuildResult;
  ms: number;
}

export interface WatchCompilerEvents {
  started(generation: number): void;
  finished(round: CompileRound): void;
  /** tsc 进程自己退出了（崩溃、被杀）。 */
  exited(code: number | null, output: string): void;
}

const ROUND_START = /Starting (?:incremental )?compilation/;
const ROUND_END = /Watching for file changes/;

export class WatchCompiler {
  private child: ChildProcess | undefined;
  private generation = 0;
  private startedAt = 0;
  private lines: string[] = [];
  private pending = "";
  private closing = false;
  /** 正在编译（看到了开始，还没看到结束）。 */
  busy = false;

  private constructor(
    private readonly command: { file: string; args: string[] },
    private readonly projectDir: string,
    private readonly events: WatchCompilerEvents,
  ) {}

  /** 找到项目的 tsc 并以 --watch 启动；第一轮编译马上开始。 */
  static async start(projectDir: string, events: WatchCompilerEvents): Promise<WatchCompiler> {
    const compiler = new WatchCompiler(await tscCommand(projectDir), projectDir, events);
    compiler.spawn();
    return compiler;
  }

  /** 正在进行（或最近一轮）的编译是什么时候开始的。 */
  get roundStartedAt(): number {
    return this.startedAt;
  }

  private spawn(): void {
    const args = [...this.command.args, "-p", COURSE_PACKAGE, "--watch", "--preserveWatchOutput", "--pretty", "false"];
    const child = spawn(this.command.file, args, { cwd: this.projectDir, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    // tsc --watch 不会自己停：本进程无论怎样退出，都带上它
    const killOnExit = () => child.kill();
    process.once("exit", killOnExit);
    child.once("close", () => process.off("exit", killOnExit));
    let tail = "";
    child.stdout?.on("data", (chunk: Buffer) => this.read(chunk.toString("utf8")));
    child.stderr?.on("data", (chunk: Buffer) => (tail = (tail + chunk.toString("utf8")).slice(-2000)));
    child.on("error", (error) => {
      if (!this.closing) this.events.exited(null, error.message);
    });
    child.on("close", (code) => {
      if (this.child === child) this.child = undefined;
      this.busy = false;
      if (!this.closing) this.events.exited(code, `${this.lines.join("\n")}\n${tail}`.trim());
    });
  }

  private read(text: string): void {
    this.pending += text;
    const lines = this.pending.split(/\r?\n/);
    this.pending = lines.pop() ?? "";
    for (const line of lines) {
      if (ROUND_START.test(line)) {
        this.generation += 1;
        this.startedAt = performance.now();
        this.lines = [];
        this.busy = true;
        this.events.started(this.generation);
      } else if (ROUND_END.test(line)) {
        this.busy = false;
        const output = this.lines.join("\n");
        const errors = parseTscOutput(output);
        const found = /Found (\d+) errors?/.exec(line);
        const ok = errors.length === 0 && (found === null || found[1] === "0");
        this.events.finished({
          generation: this.generation,
          startedAt: this.startedAt,
          build: { ok, errors, output: `${output}\n${line}`.trim() },
          ms: performance.now() - this.startedAt,
        });
      } else if (line.trim() !== "") {
        this.lines.push(line);
      }
    }
  }

  close(): void {
    this.closing = true;
    this.child?.kill();
    this.child = undefined;
  }
}

/** dist/ 里一个输出文件可能来自哪些源文件（相对 packages/pi-course）。 */
function sourcesOf(output: string): string[] {
  const base = output.replace(/\.map$/, "");
  const match = /^(.*?)(\.d)?\.(js|mjs|cjs|ts|mts|cts)$/.exec(base);
  if (!match) return [];
  const stem = match[1] ?? "";
  switch (match[3]) {
    case "mjs":
    case "mts":
      return [`${stem}.mts`];
    case "cjs":
    case "cts":
      return [`${stem}.cts`];
    default:
      return [`${stem}.ts`, `${stem}.tsx`];
  }
}

/**
 * 删掉 dist/ 里源文件已经不在的输出：tsc --watch 不会替被删掉（或改名）的源文件收拾旧的 .js，
 * 留着的话，测试会 import 到上一次编译的旧代码。返回删掉了哪些（相对 dist/）。
 */
export function removeOrphanOutputs(projectDir: string): string[] {
  const pkg = path.join(projectDir, COURSE_PACKAGE);
  const dist = path.join(pkg, "dist");
  const removed: string[] = [];
  for (const file of filesUnder(dist, ".")) {
    const sources = sourcesOf(file);
    if (sources.length > 0 && !sources.some((source) => existsSync(path.join(pkg, source)))) {
      rmSync(path.join(dist, ...file.split("/")), { force: true });
      removed.push(file);
    }
  }
  return removed;
}
