import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { register } from "tsx/esm/api";

import { CourseError, usageError } from "./errors.js";
import { COURSE_PACKAGE } from "./paths.js";
import { PRACTICE_MARKER } from "./practice.js";

/**
 * npm run eval 的引擎：在一个课程项目（套件自己，或者学习者的练习目录）上跑第 14 章的 eval。
 * 跑的永远是那个项目自己的代码——它的 src/eval、它的 createRuntime——所以学习者在
 * `practice -- 14 --continue` 建的目录里运行，检验的就是自己一路写下来的 tiny-pi。
 * 套件只按名字取用那几个导出，不依赖自己那份 packages/pi-course 的类型：学习者的代码可以写得不一样。
 */
export interface EvalReportLike {
  id: string;
  ok: boolean;
}

export interface EvalProject {
  dir: string;
  tasks: readonly unknown[];
  runEval(tasks: readonly unknown[], options?: { model?: unknown }): Promise<EvalReportLike[]>;
  formatEvalTable(reports: readonly EvalReportLike[]): string;
  evalSummary(reports: readonly EvalReportLike[]): { passed: number; total: number };
  modelFromEnv(env: Record<string, string | undefined>): unknown;
}

export interface EvalOutcome {
  reports: EvalReportLike[];
  table: string;
  summary: { passed: number; total: number };
}

/** eval 的入口文件：有它，这个项目才写到了第 14 章。 */
const EVAL_ENTRY = path.join(COURSE_PACKAGE, "src", "eval", "run.ts");

/**
 * 在哪个项目上跑：写出来的目录照用；否则从敲命令的目录往上找练习目录的标记，找不到就是套件自己。
 */
export function chooseEvalProject(kitRoot: string, cwd: string, given: string | undefined): string {
  if (given !== undefined) {
    const dir = path.resolve(cwd, given);
    if (!existsSync(dir)) throw usageError("EVAL_DIR_MISSING", `目录 ${dir} 不存在：检查路径是否写对`);
    return dir;
  }
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, PRACTICE_MARKER))) return dir;
    if (path.dirname(dir) === dir) return kitRoot;
  }
}

/** 载入项目自己的 eval 模块（经 tsx 直接读 .ts 源码，不需要先 build）。 */
export async function loadEvalProject(dir: string): Promise<EvalProject> {
  if (!existsSync(path.join(dir, EVAL_ENTRY))) {
    throw new CourseError(
      "EVAL_MISSING",
      `${dir} 里还没有 eval（${EVAL_ENTRY}）：它在第 14 章写成。在自己的代码上跑：npm run practice -- 14 --continue`,
    );
  }
  // 套件命令也可能以编译好的 JS 运行（这个文件本身是 .js，进程里就没有 TS 加载器）：那时先登记 tsx 的加载器，
  // .ts 源码才读得进来。经 --import tsx 运行时已经有了，再登记一次会让两个加载器互相打架。
  // 用全局登记而不是逐个 tsImport：四个文件要共用同一份模块实例（同一个 ScriptedModel 类）。
  if (!import.meta.url.endsWith(".ts")) register();
  const load = (file: string) => import(pathToFileURL(path.join(dir, COURSE_PACKAGE, "src", file)).href) as Promise<Record<string, unknown>>;
  const [run, report, tasks, provider] = await Promise.all([load("eval/run.ts"), load("eval/report.ts"), load("eval/tasks.ts"), load("openai-compatible.ts")]);
  const wanted = { runEval: run.runEval, formatEvalTable: report.formatEvalTable, evalSummary: report.evalSummary, modelFromEnv: provider.modelFromEnv };
  const missing = Object.entries(wanted).filter(([, value]) => typeof value !== "function").map(([name]) => name);
  if (!Array.isArray(tasks.VISIBLE_TASKS)) missing.push("VISIBLE_TASKS");
  if (missing.length > 0) throw new CourseError("EVAL_INCOMPLETE", `${dir} 的 eval 缺少导出：${missing.join("、")}（对照第 14 章的课文）`);
  return { dir, tasks: tasks.VISIBLE_TASKS as unknown[], ...(wanted as Omit<EvalProject, "dir" | "tasks">) };
}

/**
 * 跑全部可见任务。live 时换成项目自己的 modelFromEnv 接上的真实模型：
 * 回答不再是脚本，项目的 eval 只做工作区检查。
 */
export async function evaluate(project: EvalProject, options: { live: boolean; env: Record<string, string | undefined> }): Promise<EvalOutcome> {
  let model: unknown;
  if (options.live) {
    if (!options.env.PI_COURSE_BASE_URL) {
      throw usageError("LIVE_NEEDS_ENDPOINT", "--live 要连一个真实模型：先设置 PI_COURSE_BASE_URL 与 PI_COURSE_MODEL（可选 PI_COURSE_API_KEY）");
    }
    try {
      model = project.modelFromEnv(options.env);
    } catch (error) {
      throw usageError("LIVE_NEEDS_ENDPOINT", (error as Error).message);
    }
  }
  try {
    const reports = await project.runEval(project.tasks, model === undefined ? {} : { model });
    return { reports, table: project.formatEvalTable(reports), summary: project.evalSummary(reports) };
  } catch (error) {
    // 多半是还没写完的实践（“Lab 14.x 尚未实现”）：一句话说清，不打一串堆栈。
    throw new CourseError(
      "EVAL_CRASHED",
      `${project.dir} 的 eval 自己抛出了错误：${(error as Error).message ?? String(error)}。先让本章的聚焦测试通过：npm run verify -- 14`,
    );
  }
}
