/**
 * 批准闸门：一个普通的扩展，只用本章的 tool_call 钩子。bash、write、edit 执行之前先问人：
 * 这一次可以（y）/ 这个项目里以后都可以（a：这条命令前缀，或者这个路径）/ 不可以（n）。
 * 不能问的时候（打印与 JSON 模式）默认不执行，只放行允许清单里的调用。
 * 没执行的调用照样有一条配对的 isError 结果：英文写给模型，说清是人没有同意，运行照常往下走。
 *
 * 闸门管“做不做”，不管“在哪做”：文件工具本来就碰不到工作区之外（第 08 章）；bash 在工作区目录里启动，
 * 命令自己却能走到任何地方，所以提到 `..` 或工作区外绝对路径的命令，问的时候多一行警告。
 * “以后都可以”记在 agent 目录里（按项目分开），从不写进工作区：否则一个仓库可以替自己预先批准。
 */

import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

import type { ExtensionFactory, ToolCallEvent, ToolCallEventResult } from "./extensions.js";

// ── 类型 ────────────────────────────────────────────────────────

/** 人的三种回答。 */
export type ApprovalAnswer = "yes" | "always" | "no";

/** 问人时给出的东西。 */
export interface ApprovalRequest {
  toolName: string;
  /** 给人看的一行：命令，或者路径加改动的大小。 */
  summary: string;
  /** 命令提到工作区之外的路径时的一行警告。 */
  warning?: string;
  /** 回答“以后都可以”时记下的规则，例如 `bash:npm test`、`write:src/a.ts`。 */
  rule: string;
}

export interface ApprovalGateOptions {
  /** 工作区：路径规则相对于它，警告也按它判断。 */
  cwd: string;
  /** 不问就放行的规则（命令行的 --allow、设置文件）。 */
  allow?: readonly string[];
  /** 问人；省略表示这次运行不能问（打印、JSON 模式），要批准的调用一律不执行。 */
  ask?: (request: ApprovalRequest) => Promise<ApprovalAnswer>;
  /** 记“以后都可以”的地方；省略时只在这次运行里记住。 */
  store?: PermissionStore;
  /** 给人看的一行：不能问而没执行时说怎样放行；/permissions 的输出。 */
  notify?: (message: string) => void;
}

/** 会改东西、会跑命令的工具：只有它们要过闸门。read 只读，不问。 */
export const GUARDED_TOOLS: readonly string[] = ["bash", "write", "edit"];

/** 写给模型：人说了“不”。 */
export function userDeclined(toolName: string): string {
  return `The user declined this ${toolName} call, so it was not run. Do not retry it; tell the user what you wanted to do and ask how to continue.`;
}

/** 写给模型：这次运行没人可问，允许清单里也没有它。 */
export function approvalUnavailable(toolName: string): string {
  return `This ${toolName} call was not run: it needs the user's approval and this run cannot ask. Do not retry it; report what you wanted to do so the user can allow it.`;
}

// ── 纯函数 ──────────────────────────────────────────────────────

function field(input: unknown, name: string): string {
  const value = (input as Record<string, unknown> | null)?.[name];
  return typeof value === "string" ? value : "";
}

/** 命令行与设置文件里的一条规则：`bash`、`bash:npm test`、`write`、`write:src/a.ts`……写错了给一句能照着改的话。 */
export function parseAllowRule(text: string): string {
  // #region lab 12.7
  const colon = text.indexOf(":");
  const tool = colon === -1 ? text.trim() : text.slice(0, colon).trim();
  const argument = colon === -1 ? undefined : text.slice(colon + 1).trim();
  if (!GUARDED_TOOLS.includes(tool) || argument === "") {
    throw new Error(`允许规则 ${JSON.stringify(text)} 看不懂：写成 bash、"bash:npm test"、write、"write:src/a.ts" 或 edit（只有 ${GUARDED_TOOLS.join("、")} 需要批准）。`);
  }
  return argument === undefined ? tool : `${tool}:${argument}`;
  // #endregion
}

/**
 * 命令是不是以 prefix 开头的同一条简单命令：整条相同，或者 prefix 之后隔一个空格接着参数，
 * 而且后面的部分不带 `;`、`&`、`|`、反引号、`$`、重定向、括号、换行——否则 `npm test && rm -rf ~` 也能借 `npm test` 的批准溜过去。
 */
export function commandHasPrefix(command: string, prefix: string): boolean {
  // #region lab 12.7
  const trimmed = command.trim();
  if (trimmed === prefix) return true;
  if (!trimmed.startsWith(`${prefix} `)) return false;
  return !/[;&|`$<>()\n]/.test(trimmed.slice(prefix.length));
  // #endregion
}

/** 工作区里的相对路径（规则里存的就是它）：`./src/a.ts` 与 `src/a.ts` 是同一个。 */
function workspacePath(cwd: string, input: string): string {
  return path.relative(cwd, path.resolve(cwd, input));
}

/** 一条规则放不放行这次调用：只写工具名的规则放行它的全部调用；带参数的，bash 比命令前缀，文件工具比路径。 */
export function ruleAllows(rule: string, toolName: string, input: unknown, cwd: string): boolean {
  // #region lab 12.7
  const colon = rule.indexOf(":");
  const tool = colon === -1 ? rule : rule.slice(0, colon);
  if (tool !== toolName) return false;
  if (colon === -1) return true;
  const argument = rule.slice(colon + 1);
  if (toolName === "bash") return commandHasPrefix(field(input, "command"), argument);
  return workspacePath(cwd, field(input, "path")) === workspacePath(cwd, argument);
  // #endregion
}

/** 回答“以后都可以”时记下什么：bash 记整条命令（以后同一条命令加参数也算），文件工具记工作区里的路径。 */
export function ruleFor(toolName: string, input: unknown, cwd: string): string {
  if (toolName === "bash") return `bash:${field(input, "command").trim()}`;
  if (toolName === "write" || toolName === "edit") return `${toolName}:${workspacePath(cwd, field(input, "path"))}`;
  return toolName;
}

/** 给人看的一行：命令原样；write 写多少；edit 改几处、删几行加几行。 */
export function describeCall(toolName: string, input: unknown): string {
  switch (toolName) {
    case "bash":
      return `bash：${field(input, "command")}`;
    case "write": {
      const content = field(input, "content");
      return `write ${field(input, "path")}（${content.split("\n").length} 行，${Buffer.byteLength(content, "utf8")} 字节）`;
    }
    case "edit": {
      const edits = (input as { edits?: unknown } | null)?.edits;
      const list = Array.isArray(edits) ? edits : [];
      const lines = (key: string) => list.reduce((sum: number, edit) => sum + field(edit, key).split("\n").length, 0);
      return `edit ${field(input, "path")}（${list.length} 处替换，-${lines("oldText")} 行 +${lines("newText")} 行）`;
    }
    default:
      return `${toolName} ${JSON.stringify(input)}`;
  }
}

/**
 * 命令里提到的工作区之外的路径：带 `..` 段的、工作区外的绝对路径、`~` 开头的。
 * 有就交回一行警告，没有是 undefined。这只是提醒人多看一眼，不是边界：命令能用的写法多得数不完。
 */
export function outsideWorkspaceWarning(command: string, cwd: string): string | undefined {
  // #region lab 12.7
  const outside = command.split(/[\s'"=;|&()<>]+/).filter((token) => {
    if (token === "" || token === "/dev/null") return false;
    if (token.split("/").includes("..")) return true;
    // 家目录（~、~/x，或 ~root 这样别人的）不按工作区算：shell 展开之后它在哪儿，这里说不准
    if (token.startsWith("~")) return true;
    if (!path.isAbsolute(token)) return false;
    const relative = path.relative(cwd, token);
    return relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
  });
  if (outside.length === 0) return undefined;
  return `⚠ 这条命令提到了工作区之外的路径（${outside.join("、")}）：bash 在工作区目录里启动，但不被限制在工作区里。`;
  // #endregion
}

/** 一次调用要问人的全部内容。 */
export function approvalRequest(event: ToolCallEvent, cwd: string): ApprovalRequest {
  const request: ApprovalRequest = { toolName: event.toolName, summary: describeCall(event.toolName, event.input), rule: ruleFor(event.toolName, event.input, cwd) };
  const warning = event.toolName === "bash" ? outsideWorkspaceWarning(field(event.input, "command"), cwd) : undefined;
  if (warning !== undefined) request.warning = warning;
  return request;
}

// ── 记住的决定 ──────────────────────────────────────────────────

/**
 * 一个项目记住的“以后都可以”：一个 JSON 文件 `{ "allow": [...] }`。没有文件就是什么都没记；
 * 文件坏了就报错而不是覆盖它（人也许手改过）。写入先写临时文件再改名：中途断电也不会留下半个文件。
 * file 省略时只记在内存里。
 */
export class PermissionStore {
  private constructor(
    readonly file: string | undefined,
    private allow: string[],
  ) {}

  static inMemory(rules: readonly string[] = []): PermissionStore {
    return new PermissionStore(undefined, [...rules]);
  }

  static async open(file: string): Promise<PermissionStore> {
    let body: string;
    try {
      body = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return new PermissionStore(file, []);
      throw error;
    }
    let allow: unknown;
    try {
      allow = (JSON.parse(body) as { allow?: unknown }).allow;
    } catch (error) {
      throw new Error(`权限文件 ${file} 不是合法的 JSON（${(error as Error).message}）：修好它，或者删掉它（记住的决定会一起清掉）。`);
    }
    if (!Array.isArray(allow) || !allow.every((rule) => typeof rule === "string")) {
      throw new Error(`权限文件 ${file} 的 allow 应当是一组字符串：修好它，或者删掉它。`);
    }
    return new PermissionStore(file, allow);
  }

  rules(): readonly string[] {
    return this.allow;
  }

  async add(rule: string): Promise<void> {
    if (this.allow.includes(rule)) return;
    this.allow = [...this.allow, rule];
    await this.save();
  }

  async clear(): Promise<void> {
    this.allow = [];
    await this.save();
  }

  private async save(): Promise<void> {
    if (this.file === undefined) return;
    await mkdir(path.dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify({ allow: this.allow }, null, 2)}\n`);
    await rename(temporary, this.file);
  }
}

// ── 闸门 ────────────────────────────────────────────────────────

/**
 * 一次 tool_call 的决定：不归闸门管的工具、规则放行的调用直接过；不能问就拦下；
 * 问了，“不”拦下，“以后都可以”先记下规则再放行。交回 undefined 就是放行。
 */
export async function decideToolCall(event: ToolCallEvent, options: ApprovalGateOptions, store: PermissionStore): Promise<ToolCallEventResult | undefined> {
  // #region lab 12.7
  if (!GUARDED_TOOLS.includes(event.toolName)) return undefined;
  const rules = [...(options.allow ?? []), ...store.rules()];
  if (rules.some((rule) => ruleAllows(rule, event.toolName, event.input, options.cwd))) return undefined;
  const request = approvalRequest(event, options.cwd);
  if (options.ask === undefined) {
    options.notify?.(`没有运行 ${request.summary}：这次运行不能问你。要放行，加 --allow ${event.toolName} 或 --allow "${request.rule}"。`);
    return { block: true, reason: approvalUnavailable(event.toolName) };
  }
  const answer = await options.ask(request);
  if (answer === "no") return { block: true, reason: userDeclined(event.toolName) };
  if (answer === "always") await store.add(request.rule);
  return undefined;
  // #endregion
}

/** /permissions 的输出：记住了哪些规则，怎样清掉。 */
export function permissionsText(store: PermissionStore): string {
  const rules = store.rules();
  if (rules.length === 0) return "这个项目还没有记住任何“以后都可以”。";
  return [`这个项目记住的“以后都可以”（${rules.length} 条）：`, ...rules.map((rule) => `  ${rule}`), "用 /permissions clear 全部清掉。"].join("\n");
}

/**
 * 闸门扩展。同一时刻只问一个问题：同一 turn 的几个调用是同时开始的（第 07 章），
 * 排成一队才不会几个问题叠在一起；排在后面的调用也能用上前面刚记下的“以后都可以”。
 */
export function approvalGate(options: ApprovalGateOptions): ExtensionFactory {
  const store = options.store ?? PermissionStore.inMemory();
  let queue: Promise<unknown> = Promise.resolve();
  return (pi) => {
    pi.on("tool_call", (event) => {
      const decision = queue.then(() => decideToolCall(event, options, store));
      queue = decision.catch(() => {});
      return decision;
    });
    pi.registerCommand("permissions", {
      description: "列出这个项目记住的“以后都可以”；/permissions clear 全部清掉",
      async handler(args) {
        if (args.trim() === "clear") {
          await store.clear();
          options.notify?.("已清掉这个项目记住的全部“以后都可以”。");
          return;
        }
        options.notify?.(permissionsText(store));
      },
    });
  };
}
