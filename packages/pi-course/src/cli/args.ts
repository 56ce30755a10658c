/**
 * tiny-pi 的命令行参数：node:util 的 parseArgs（strict）读，读完换成一个说清意图的对象。
 * 用错了（不认识的选项、缺了取值、-p 却没给任务）是“用法错误”：一句中文，退出码 2，
 * 和“运行失败”（退出码 1）分开，脚本据此知道该改命令还是该重试。
 */

import { parseArgs } from "node:util";

import { parseAllowRule } from "../approval-gate.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 三种模式：print 只把最后的回答写到 stdout；json 每个事件一行；interactive 是一个 REPL。 */
export type CliMode = "print" | "json" | "interactive";

export interface CliArgs {
  mode: CliMode;
  /** 依次交给会话的任务（位置参数）。 */
  messages: string[];
  /** "new"、"continue" 或一个会话文件的路径：原样交给 createRuntime。 */
  session: string;
  /** --allow 给的规则（已检查过）：打印与 JSON 模式只放行这些需要批准的调用。 */
  allow: string[];
  /** --yolo：关掉批准闸门。 */
  yolo: boolean;
  /** --trust：这一次信任这个项目，加载它的 .pi/extensions。 */
  trust: boolean;
  help: boolean;
  /** 第 19 章 --durable：用持久会话（SQLite；Node 20 上是 JSONL）。 */
  durable?: boolean;
}

export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export const USAGE = `用法：tiny-pi [选项] [任务…]

  tiny-pi                      交互模式（REPL）：!cmd、!!cmd、/tree、/branch <id>、/compact、/resume、/exit
  tiny-pi -p "任务"            只把最后的回答写到 stdout
  tiny-pi --mode json "任务"   每个事件一行 JSON，给脚本读

选项：
  -p, --print              打印模式
      --mode <text|json>   text 同 -p；json 每个事件一行
  -c, --continue           续上这个项目最近用过的会话
      --session <文件>     打开（或新建）指定的会话文件
      --allow <规则>       不问就放行：bash、"bash:npm test"（这条命令前缀）、write、"write:路径"、edit；可以给多次
      --yolo               关掉批准闸门：每个工具调用都直接运行，不问
      --trust              这一次信任这个项目：加载它的 .pi/extensions（项目里的代码）
      --durable            持久会话：每个项目一份，先提交再显示，被杀之后续上（SQLite；Node 20 上是 JSONL）
  -h, --help               显示这段说明

批准闸门：bash、write、edit 执行之前先问你（y 这一次 / a 这个项目里以后都可以 / n 不可以）；
打印与 JSON 模式不能问，只运行 --allow 放行的调用，别的告诉模型“没有批准”。bash 在工作区目录里启动，
但不被限制在工作区里。记住的决定在 agent 目录里，/permissions 列出、/permissions clear 清掉。
项目扩展（.pi/extensions）只在信任的项目里加载：交互模式问一次并记下，打印模式要 --trust。

环境变量：PI_COURSE_BASE_URL、PI_COURSE_MODEL、PI_COURSE_API_KEY 接真实模型（不设就用离线模型）；
PI_COURSE_AGENT_DIR 是会话、设置（settings.json 的 allow）与记住的决定的存放位置（默认 ~/.tiny-pi）。
退出码：0 成功，1 运行失败，2 用法错误。`;

const OPTIONS = {
  print: { type: "boolean", short: "p" },
  mode: { type: "string" },
  continue: { type: "boolean", short: "c" },
  session: { type: "string" },
  allow: { type: "string", multiple: true },
  yolo: { type: "boolean" },
  trust: { type: "boolean" },
  durable: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** 缺了取值时给的例子：例子要是这个选项自己的，照着改就对。 */
const VALUE_EXAMPLES: Record<string, string> = {
  "--mode": "--mode json",
  "--session": "--session ./notes.jsonl",
};

// ── 纯函数 ──────────────────────────────────────────────────────

/** parseArgs 的英文错误 → 一句人能照着改的中文。认不出的错误原样抛出：那是我们的 bug。 */
function usageErrorOf(error: unknown): UsageError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  const option = /'([^']+)'/.exec(message)?.[1] ?? "";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return new UsageError(`不认识的选项 ${option}。运行 tiny-pi --help 查看可用的选项。`);
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const name = option.split(" ")[0] ?? "";
    return new UsageError(`选项 ${name} 需要一个取值，例如 ${VALUE_EXAMPLES[name] ?? `${name} <取值>`}。`);
  }
  throw error;
}

/** 每条 --allow 都按闸门的规则检查：写错了是用法错误，而不是悄悄什么都没放行。 */
function allowRules(rules: readonly string[]): string[] {
  try {
    return rules.map(parseAllowRule);
  } catch (error) {
    throw new UsageError(`--allow：${(error as Error).message}`);
  }
}

export function parseCliArgs(argv: readonly string[]): CliArgs {
  // #region lab 13.3
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw usageErrorOf(error);
  }
  const { values, positionals } = parsed;
  const help = values.help === true;
  if (values.mode !== undefined && values.mode !== "text" && values.mode !== "json") {
    throw new UsageError(`--mode 只接受 text 或 json，收到的是 ${values.mode}。`);
  }
  if (values.continue === true && values.session !== undefined) throw new UsageError("--continue 和 --session 只能选一个。");
  const mode: CliMode = values.mode === "json" ? "json" : values.print === true || values.mode === "text" ? "print" : "interactive";
  if (mode !== "interactive" && positionals.length === 0 && !help) {
    throw new UsageError(`${mode === "json" ? "--mode json" : "-p"} 需要一个任务，例如：tiny-pi -p "请读取 README，然后告诉我项目名"`);
  }
  const session = values.continue === true ? "continue" : (values.session ?? "new");
  // #endregion
  // #region lab 19.5 扩展
  return { mode, messages: positionals, session, allow: allowRules(values.allow ?? []), yolo: values.yolo === true, trust: values.trust === true, help, ...(values.durable === true ? { durable: true } : {}) };
  // #endregion
}
