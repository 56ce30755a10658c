/**
 * 组合根：把前面各章做好的零件按一个顺序接起来，交出一个能用的运行时。
 *
 *   模型      options.model → agent 目录里的 models.json（第 18 章的目录模型）→ 环境变量（第 05 章的 modelFromEnv）→ 离线模型
 *   会话文件  <agentDir>/sessions/<cwd 编码成的一个文件夹名>/<时间戳>_<id>.jsonl（第 10 章的 JSONL）
 *   工具      第 08 章的四个编码工具：文件工具限定在 cwd 这个工作区里；bash 在那里启动，但不被限定在里面；第 15 章加上 tool_search 与等着被它找到的 deferred 工具（ls）；
 *             第 16 章加上 codemode（选项 codemode 给了才有）；第 17 章加上 mcp.json 里 MCP 服务器的工具（默认 deferred）
 *   资源      第 12 章：AGENTS.md、技能、提示模板；坏掉的文件只是一条警告
 *   扩展      第 12 章：<cwd>/.pi/extensions 里的模块；加载失败、处理器出错都只是一条警告
 *   闸门      第 12 章的批准闸门排在扩展的最前面；允许规则与“以后都可以”都在 agent 目录里，从不在工作区里
 *   信任      项目扩展是仓库里的代码：给了 trust 时，只在信任的项目里加载；决定也在 agent 目录里
 *   会话      第 09–12 章的 AgentSession：Agent、会话树、用户命令、压缩、资源与扩展
 *
 * 别处的代码不 new 这些零件：它们只调用 createRuntime。零件怎么接、按什么顺序关，只在这一个文件里。
 * 关闭是创建的逆序，每个部件恰好关一次；某个部件关不掉，其余的照样关，最后一起报告。
 * 关闭了的运行时不再接新的提问；会话文件先 stat 再打开，打不开时错误点名那个文件。
 */

import { randomUUID } from "node:crypto";
import type { Stats } from "node:fs";
import { access, constants, mkdir, readdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { AgentSession, type PromptReport } from "./agent-session.js";
import type { PromptInput } from "./agent.js";
import { approvalGate, parseAllowRule, PermissionStore, type ApprovalGateOptions } from "./approval-gate.js";
import { codemodeTool } from "./codemode/codemode-tool.js";
import { codingTools } from "./coding-tools.js";
import type { CompactionSettings } from "./compaction.js";
import { loadExtensions } from "./extension-loader.js";
import { loadMcpConfig } from "./mcp/config.js";
import { connectMcpServers } from "./mcp/connect.js";
import { extensionFromFactory, ExtensionRunner, type Extension, type ExtensionActions, type ExtensionError } from "./extensions.js";
import { lsTool } from "./ls-tool.js";
import { loadCatalogFile, type CatalogFile } from "./models/catalog-file.js";
import { CatalogModel } from "./models/routed-model.js";
import { LateLedger, sessionLedger } from "./models/routing.js";
import { OfflineModel } from "./offline-model.js";
import { modelFromEnv } from "./openai-compatible.js";
import { loadResources, type Resources } from "./resources.js";
import { JsonlSessionStore, type SessionStore } from "./session-store.js";
import { SessionTree } from "./session-tree.js";
import { ToolActivation } from "./tool-activation.js";
import { TOOL_SEARCH_NAME, toolSearchTool } from "./tool-search.js";
import { exposureOf, type AgentTool } from "./tools.js";
import type { Model } from "./types.js";
import { Workspace } from "./workspace.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface RuntimeOptions {
  /** 工作区：工具只能碰这个目录里的文件，会话也按它归档。 */
  cwd: string;
  /** 读模型配置与 PI_COURSE_AGENT_DIR；默认 process.env。测试传一个对象，就不会碰到真实环境。 */
  env?: Record<string, string | undefined>;
  /** 直接给定模型（测试、评测用脚本模型）；省略时看环境变量，再退到离线模型。 */
  model?: Model;
  /** 第 18 章：直接给定模型目录（评测用）；省略时读 agent 目录里的 models.json（没给 model 时）。给了它就不看 model。 */
  catalog?: CatalogFile;
  /** 放会话的根目录；默认 env.PI_COURSE_AGENT_DIR，再默认 ~/.tiny-pi。 */
  agentDir?: string;
  /** "new"（默认）开新会话；"continue" 续上这个项目最近用过的会话；别的字符串是一个会话文件的路径。 */
  session?: "new" | "continue" | string;
  systemPrompt?: string;
  now?: () => number;
  compaction?: CompactionSettings;
  /** 给人看的警告（扩展加载失败或处理器出错、坏掉的资源文件）；默认写到 stderr。 */
  onWarning?: (message: string) => void;
  /** 会话文件用哪种存储打开；默认第 10 章的 JsonlSessionStore。测试换上一个会写满或卡住的存储。 */
  openStore?: (file: string) => SessionStore;
  /** 向上找 AGENTS.md 时走到这一层为止（第 12 章的 stopAt）；省略时走到文件系统根。eval 用它隔开机器上的文件。 */
  contextStopAt?: string;
  /**
   * 装上第 12 章的批准闸门。省略就不装：createRuntime 是一个库，嵌入它的程序（例如在临时工作区里跑的评测）
   * 自己决定；tiny-pi 命令总是给它。
   */
  approval?: ApprovalSettings;
  /**
   * 检查项目信任：`.pi/extensions` 只在信任的项目里加载。省略就照旧全部加载（同 approval，由调用方决定）；
   * once 是 --trust：只信任这一次，不记下。
   */
  trust?: { once?: boolean };
  /**
   * 第 16 章：true 时交给会话一个 codemode 工具（沙箱用默认的限制）。省略就不给（同 approval，由调用方决定）；
   * tiny-pi 命令与 eval 总是给它。
   */
  codemode?: boolean;
}

/** 这个项目的信任状况：有哪些项目扩展、加载了没有、怎样记下决定。 */
export interface ProjectTrust {
  /** `.pi/extensions` 里的文件名（没有这个目录就是空的）。 */
  readonly extensions: readonly string[];
  /** trusted：加载了；untrusted：以前回答过不信任；undecided：还没有决定过（这次没有加载）。 */
  readonly state: "trusted" | "untrusted" | "undecided";
  /** 决定记在哪个文件里（agent 目录里，从不在工作区里）。 */
  readonly file: string;
  /** 把决定记进 agent 目录，下次启动按它办。 */
  record(trusted: boolean): Promise<void>;
}

export interface ApprovalSettings {
  /** 问人（交互模式）；省略时要批准的调用一律不执行（打印、JSON 模式）。 */
  ask?: ApprovalGateOptions["ask"];
  /** 命令行给的允许规则（--allow）；agent 目录里 settings.json 的 allow 也算。 */
  allow?: readonly string[];
  /** --yolo：不装闸门，每个工具调用都直接运行。 */
  off?: boolean;
  /** 闸门给人看的话（/permissions 的输出、不能问时怎样放行）；默认同 onWarning。 */
  notify?: (message: string) => void;
}

export interface Runtime {
  readonly cwd: string;
  readonly model: Model;
  readonly session: AgentSession;
  readonly resources: Resources;
  readonly extensions: ExtensionRunner;
  readonly sessionFile: string;
  readonly projectTrust: ProjectTrust;
  /** 批准闸门开着没有（没给 approval、或者 --yolo 时是关的）：横幅据此说清楚。 */
  readonly approvalGate: boolean;
  /** 按创建的逆序关闭每个部件，恰好一次；再调用拿到的是同一个结果。 */
  dispose(): Promise<void>;
}

export type RuntimeErrorCode =
  | "CWD_NOT_DIRECTORY"
  | "SESSION_DIR_NOT_WRITABLE"
  | "SESSION_NOT_A_FILE"
  | "SESSION_UNREADABLE"
  | "RUNTIME_DISPOSED"
  | "SETTINGS_INVALID";

/** 人能照着改的错误：code 稳定，消息说出哪里不对、怎样修。 */
export class RuntimeError extends Error {
  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "RuntimeError";
  }
}

/** 关闭时有部件失败：每一个都在 failures 里，消息里点名。 */
export class DisposeError extends Error {
  constructor(readonly failures: readonly { name: string; error: unknown }[]) {
    const names = failures.map(({ name, error }) => `${name}（${error instanceof Error ? error.message : String(error)}）`);
    super(`关闭运行时时有 ${failures.length} 个部件出错：${names.join("；")}`);
    this.name = "DisposeError";
  }
}

export const DEFAULT_SYSTEM_PROMPT =
  "你是 tiny-pi，一个在工作区里干活的编码助手。可以用 read、write、edit、bash 四个工具；" +
  "先读再改，只碰工作区里的文件，做完用一两句话说清做了什么。";

// ── 纯函数 ──────────────────────────────────────────────────────

/**
 * 一个项目的会话放在哪个文件夹：绝对路径编码成一个文件夹名（与上游相同的写法）。
 * 路径分隔符和盘符冒号都换成 `-`，首尾加 `--`，所以不同的项目不会落进同一个文件夹。
 */
export function sessionFolderName(cwd: string): string {
  // #region lab 13.2
  return `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
  // #endregion
}

/** 新会话的文件名：时间戳在前（冒号与点换成 `-`，在任何文件系统上都合法），按名字排序就是按开始时间排序。 */
export function sessionFileName(timestamp: number, id: string): string {
  // #region lab 13.2
  return `${new Date(timestamp).toISOString().replace(/[:.]/g, "-")}_${id}.jsonl`;
  // #endregion
}

/** 扩展的一次出错 → 一句警告：哪个文件、哪个事件、说了什么，以及 Agent 照常继续。 */
export function extensionWarning(error: ExtensionError): string {
  return `扩展 ${error.extensionPath} 在 ${error.event} 里出错（已跳过，Agent 继续）：${error.error}`;
}

/** 一个项目记住的“以后都可以”放在哪里：agent 目录里，文件名与会话文件夹同一种编码。 */
export function permissionsFile(agentDir: string, cwd: string): string {
  return path.join(agentDir, "permissions", `${sessionFolderName(cwd)}.json`);
}

export function defaultAgentDir(env: Record<string, string | undefined>): string {
  return env.PI_COURSE_AGENT_DIR || path.join(os.homedir(), ".tiny-pi");
}

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
}

/** 会话文件写不进去（磁盘满了、文件被换成了目录……）时给人看的一句话：哪个文件、什么错、丢了什么。 */
export function sessionWriteFailure(file: string, error: unknown): string {
  return `会话文件 ${file} 写不进去（${codeOf(error)}）：这次对话没有完整存下来。请腾出磁盘空间，或者用 --session 换一个会话文件。`;
}

/** 模型从哪里来：显式给定的优先，其次是环境变量，最后是不联网的离线模型。 */
export function resolveModel(options: Pick<RuntimeOptions, "model" | "env" | "now">): Model {
  // #region lab 13.2
  if (options.model !== undefined) return options.model;
  const fromEnv = modelFromEnv(options.env ?? process.env);
  if (fromEnv !== undefined) return fromEnv;
  return new OfflineModel(options.now ? { now: options.now } : {});
  // #endregion
}

/** 第 15 章：tiny-pi 交给会话的工具，以及管着 deferred 工具加载与卸载的 ToolActivation。 */
export interface RuntimeTools {
  tools: AgentTool<any>[];
  activation: ToolActivation;
}

/** 四个编码工具照旧直接声明；tool_search 是 model-only；deferred 工具登记在 activation 里，等模型来找。 */
export function runtimeTools(workspace: Workspace): RuntimeTools {
  // #region lab 15.5
  const activation = new ToolActivation([lsTool(workspace)]);
  return { tools: [...codingTools(workspace), toolSearchTool(activation), ...activation.tools], activation };
  // #endregion
}

// ── 关闭 ────────────────────────────────────────────────────────

/**
 * 记下每个部件怎么关。dispose() 按登记的逆序关：后建的部件可能还在用先建的，所以先关它。
 * 一个部件关不掉，不影响其余部件；全部关完后抛出一个点名所有失败的错误。
 */
export class Disposer {
  private readonly parts: { name: string; close: () => void | Promise<void> }[] = [];
  private closing: Promise<void> | undefined;

  add(name: string, close: () => void | Promise<void>): void {
    if (this.closing !== undefined) throw new Error(`运行时已经关闭，不能再登记部件 ${name}。`);
    this.parts.push({ name, close });
  }

  dispose(): Promise<void> {
    // #region lab 13.2
    // 第二次调用拿到第一次的 Promise：每个部件恰好关一次，两个调用方看到同一个结局。
    this.closing ??= this.closeAll();
    return this.closing;
    // #endregion
  }

  // #region lab 13.2 辅助
  private async closeAll(): Promise<void> {
    const failures: { name: string; error: unknown }[] = [];
    for (const part of [...this.parts].reverse()) {
      try {
        await part.close();
      } catch (error) {
        failures.push({ name: part.name, error });
      }
    }
    if (failures.length > 0) throw new DisposeError(failures);
  }
  // #endregion
}

/**
 * 运行时交出去的会话：关闭之后拒绝新的提问。否则一次迟到的 prompt 会照样去问模型、跑工具，
 * 再把结果写进一份已经关掉的会话——花了钱，什么也没留下。
 */
export class RuntimeSession extends AgentSession {
  private closed = false;

  /** 关闭的第一步：从这一刻起不再接新的提问（正在进行的运行由调用方去中止）。 */
  close(): void {
    this.closed = true;
  }

  override async prompt(input: PromptInput, options: { signal?: AbortSignal } = {}): Promise<PromptReport> {
    if (this.closed) throw new RuntimeError("RUNTIME_DISPOSED", "运行时已经关闭，不能再提问：请用 createRuntime 建一个新的运行时。");
    return super.prompt(input, options);
  }
}

/** 运行时关闭之后扩展手里的动作：迟到的 sendMessage / appendEntry 得到一句说明，而不是写进一份已经关掉的会话。 */
const CLOSED_ACTIONS: ExtensionActions = {
  sendMessage() {
    throw new Error("运行时已经关闭：扩展不能再 sendMessage。");
  },
  appendEntry() {
    throw new Error("运行时已经关闭：扩展不能再 appendEntry。");
  },
  toolsChanged() {},
};

// ── 会话文件 ────────────────────────────────────────────────────

/** 文件夹建得出来、也写得进去；否则给出一句能照着做的话。 */
async function prepareSessionFolder(folder: string): Promise<void> {
  try {
    await mkdir(folder, { recursive: true });
    await access(folder, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new RuntimeError(
      "SESSION_DIR_NOT_WRITABLE",
      `会话目录 ${folder} 不能写（${code}）。请用环境变量 PI_COURSE_AGENT_DIR 换一个可写的目录，或者检查这个目录的权限。`,
    );
  }
}

/** 这个项目最近用过的会话：按修改时间，最新的在前；一个都没有就是 undefined。 */
export async function latestSessionFile(folder: string): Promise<string | undefined> {
  const names = (await readdir(folder)).filter((name) => name.endsWith(".jsonl"));
  const files = await Promise.all(names.map(async (name) => ({ file: path.join(folder, name), mtime: (await stat(path.join(folder, name))).mtimeMs })));
  files.sort((a, b) => b.mtime - a.mtime || b.file.localeCompare(a.file));
  return files[0]?.file;
}

async function chooseSessionFile(cwd: string, folder: string, session: string, now: () => number): Promise<string> {
  if (session === "continue") {
    const latest = await latestSessionFile(folder);
    if (latest !== undefined) return latest;
  } else if (session !== "new") {
    return path.resolve(cwd, session);
  }
  return path.join(folder, sessionFileName(now(), randomUUID().slice(0, 8)));
}

/** stat 里看到的文件种类，写进错误消息。 */
function kindOf(info: Stats): string {
  if (info.isDirectory()) return "目录";
  if (info.isFIFO()) return "命名管道（FIFO）";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "设备";
  if (info.isSocket()) return "套接字";
  return "特殊文件";
}

/**
 * 打开会话文件之前先 stat：目录读不出行，FIFO 会让读取一直等下去，设备读不完——都不是会话。
 * 打开失败（第 10 章报告的坏行）时点名文件：-c 自己挑的那一份，人得知道是哪一份。
 */
async function openSessionTree(file: string, openStore: (file: string) => SessionStore, now: () => number): Promise<SessionTree> {
  const info = await stat(file).catch(() => undefined);
  if (info !== undefined && !info.isFile()) {
    throw new RuntimeError("SESSION_NOT_A_FILE", `会话文件 ${file} 不是普通文件（是${kindOf(info)}）：请给 --session 一个 .jsonl 文件的路径，例如 --session ./notes.jsonl。`);
  }
  try {
    return await SessionTree.open(openStore(file), { now });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new RuntimeError("SESSION_UNREADABLE", `会话文件 ${file} 打不开：${reason}。可以不带 -c 开一份新会话，或者用 --session 指定另一份。`);
  }
}

async function checkedCwd(cwd: string): Promise<string> {
  const absolute = path.resolve(cwd);
  const info = await stat(absolute).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) throw new RuntimeError("CWD_NOT_DIRECTORY", `工作目录 ${absolute} 不存在或不是目录。`);
  return absolute;
}

// ── 批准闸门 ────────────────────────────────────────────────────

/** agent 目录里 settings.json 的 allow：每条都按闸门的规则检查，写错了是一句说出文件的错误。没有这个文件就是没有规则。 */
export async function settingsAllow(agentDir: string): Promise<string[]> {
  const file = path.join(agentDir, "settings.json");
  const body = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (body === undefined) return [];
  try {
    const allow = (JSON.parse(body) as { allow?: unknown }).allow ?? [];
    if (!Array.isArray(allow)) throw new Error("allow 应当是一组字符串");
    return allow.map((rule) => parseAllowRule(String(rule)));
  } catch (error) {
    throw new RuntimeError("SETTINGS_INVALID", `设置文件 ${file} 有误：${(error as Error).message}`);
  }
}

/** 第 12 章的闸门接上这次运行：允许规则来自命令行与 settings.json，“以后都可以”存在 agent 目录里。--yolo 时没有闸门。 */
async function approvalExtension(settings: ApprovalSettings, agentDir: string, cwd: string, warn: (message: string) => void): Promise<Extension | undefined> {
  if (settings.off === true) return undefined;
  const allow = [...(settings.allow ?? []), ...(await settingsAllow(agentDir))];
  const store = await PermissionStore.open(permissionsFile(agentDir, cwd));
  return extensionFromFactory("approval-gate", approvalGate({ cwd, allow, store, ask: settings.ask, notify: settings.notify ?? warn }));
}

// ── 项目信任 ────────────────────────────────────────────────────

/** 记着每个项目信任与否的文件：agent 目录里的一个 JSON，键是项目的绝对路径。 */
export function trustFile(agentDir: string): string {
  return path.join(agentDir, "trusted-projects.json");
}

async function readTrust(file: string): Promise<Record<string, boolean>> {
  const body = await readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (body === undefined) return {};
  try {
    const projects = (JSON.parse(body) as { projects?: unknown }).projects;
    if (typeof projects !== "object" || projects === null || Array.isArray(projects)) throw new Error("projects 应当是一个对象");
    return projects as Record<string, boolean>;
  } catch (error) {
    throw new RuntimeError("SETTINGS_INVALID", `信任记录 ${file} 有误（${(error as Error).message}）：修好它，或者删掉它（每个项目会再问一次）。`);
  }
}

/** 没加载项目扩展时给人看的一句：加载了什么、为什么没加载、怎样改。 */
export function untrustedWarning(trust: ProjectTrust): string {
  const files = trust.extensions.join("、");
  return trust.state === "untrusted"
    ? `没有加载项目扩展（${files}）：你以前选了不信任这个项目（记在 ${trust.file}）。加 --trust 只信任这一次。`
    : `没有加载项目扩展（${files}）：这个项目还没有被信任。加 --trust 只信任这一次，或者在交互模式里回答一次。`;
}

/** 这个项目信不信任：没有项目扩展就无所谓；--trust 这一次信任；否则看记下的决定。 */
async function projectTrustOf(options: RuntimeOptions["trust"], agentDir: string, cwd: string, dir: string): Promise<ProjectTrust> {
  const extensions = (await readdir(dir).catch(() => [] as string[])).filter((name) => !name.startsWith(".")).sort();
  const file = trustFile(agentDir);
  const record = async (trusted: boolean) => {
    const projects = { ...(await readTrust(file)), [cwd]: trusted };
    await mkdir(agentDir, { recursive: true });
    await writeFile(`${file}.tmp`, `${JSON.stringify({ projects }, null, 2)}\n`);
    await rename(`${file}.tmp`, file);
  };
  if (options === undefined || options.once === true || extensions.length === 0) return { extensions, state: "trusted", file, record };
  const decided = (await readTrust(file))[cwd];
  return { extensions, state: decided === undefined ? "undecided" : decided ? "trusted" : "untrusted", file, record };
}

// ── 组合根 ──────────────────────────────────────────────────────

/**
 * 按依赖的顺序建出每个部件，每建好一个就登记它怎么关：会话文件 → 扩展 → 会话。
 * 关闭时倒过来：先停下会话（它在用扩展和会话文件），再收回扩展的写权限，最后等会话文件写完。
 * 中途失败时，已经建好的部件按逆序关掉再抛出：调用方拿不到运行时，也就没有别人能替它收拾。
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const env = options.env ?? process.env;
  const now = options.now ?? Date.now;
  const cwd = await checkedCwd(options.cwd);
  const agentDir = options.agentDir ?? defaultAgentDir(env);
  // 第 18 章：没有直接给定模型、agent 目录里又有 models.json 时，模型是目录模型；选择与路由器状态记在会话的当前分支上。
  const catalogFile = options.catalog ?? (options.model === undefined ? await loadCatalogFile(agentDir, env, options.now) : undefined);
  const catalogLedger = new LateLedger();
  const model =
    catalogFile === undefined
      ? resolveModel({ ...options, env })
      : new CatalogModel({ catalog: catalogFile.catalog, ledger: catalogLedger, defaultModel: catalogFile.defaultModel });
  const folder = path.join(agentDir, "sessions", sessionFolderName(cwd));
  const warn = options.onWarning ?? ((message: string) => void process.stderr.write(`${message}\n`));
  const disposer = new Disposer();
  try {
    // #region lab 13.2
    await prepareSessionFolder(folder);
    const sessionFile = await chooseSessionFile(cwd, folder, options.session ?? "new", now);
    const workspace = await Workspace.open(cwd);
    // #endregion
    // #region lab 15.5 扩展
    const exposed = runtimeTools(workspace);
    // #endregion
    // #region lab 16.4 扩展
    // 第 16 章：codemode 的脚本能调用会话里 script 范围能调用的工具（四个编码工具与 deferred 的 ls）。
    if (options.codemode === true) exposed.tools.push(codemodeTool({ tools: () => exposed.tools }));
    // #endregion
    // #region lab 17.4 扩展
    // 第 17 章：mcp.json 里的服务器。它们的工具脚本里也能调用（codemode 每次用到时才读 exposed.tools）。
    // 起不来的只是一条警告；关闭时它们排在会话之后（会话可能还在调用它们的工具）。
    const mcpConfig = await loadMcpConfig({ agentDir, cwd, trusted: await mcpTrusted(options.trust, agentDir, cwd) });
    for (const problem of mcpConfig.problems) warn(problem);
    const mcp = await connectMcpServers(mcpConfig.servers, { cwd, parentEnv: env, onProblem: warn });
    disposer.add("MCP 服务器", () => mcp.close());
    addMcpTools(exposed, mcp.tools());
    // #endregion
    // #region lab 13.2
    const resources = await loadResources({ cwd, stopAt: options.contextStopAt });
    for (const diagnostic of resources.diagnostics) warn(`资源 ${diagnostic.path}：${diagnostic.message}`);
    const tree = await openSessionTree(sessionFile, options.openStore ?? ((file) => new JsonlSessionStore(file)), now);
    disposer.add("会话文件", () => tree.flush());
    // 项目扩展是克隆下来的仓库里的代码：没信任的项目一个都不加载（也就一行都不运行）。
    const extensionDir = path.join(cwd, ".pi", "extensions");
    const projectTrust = await projectTrustOf(options.trust, agentDir, cwd, extensionDir);
    const loaded = projectTrust.state === "trusted" ? await loadExtensions(extensionDir) : { extensions: [], errors: [] };
    for (const error of loaded.errors) warn(extensionWarning(error));
    // 闸门排在最前面：第一个说 block 的处理器拦下调用，人说了“不”，后面的扩展就看不到这次调用。
    const gate = options.approval === undefined ? undefined : await approvalExtension(options.approval, agentDir, cwd, warn);
    const all = gate === undefined ? loaded.extensions : [gate, ...loaded.extensions];
    const extensions = new ExtensionRunner(all, { cwd, onError: (error) => warn(extensionWarning(error)) });
    disposer.add("扩展", () => extensions.bindActions(CLOSED_ACTIONS));
    const session = new RuntimeSession({
      tree,
      model,
      systemPrompt: options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
      // #endregion
      // #region lab 15.5 扩展
      tools: exposed.tools,
      // #endregion
      // #region lab 13.2
      workspace,
      resources,
      extensions,
      now,
      compaction: options.compaction,
    });
    // #endregion
    // #region lab 15.5 扩展
    // 声明看 transcript：续上的会话里已经加载过的 deferred 工具照样算已加载。
    exposed.activation.follow(session.agent);
    // #endregion
    // #region lab 18.4 扩展
    // 第 18 章：树开好了，目录模型从此沿当前分支读写选择与路由器状态。
    catalogLedger.attach(sessionLedger(tree));
    // #endregion
    // #region lab 13.2
    disposer.add("会话", async () => {
      // 先不再接新的提问、停下正在进行的运行，再等排队的扩展事件与写入：关掉之后文件里就是完整的记录。
      session.close();
      session.agent.abort();
      await session.agent.waitForIdle();
      await session.flush();
    });
    // 新会话的第一条（system）现在就落盘：写不进去的会话文件在这里报错，而不是在第一次回答之后。
    await session.flush();
    return { cwd, model, session, resources, extensions, sessionFile, projectTrust, approvalGate: gate !== undefined, dispose: () => disposer.dispose() };
    // #endregion
  } catch (error) {
    await disposer.dispose().catch(() => {});
    throw error;
  }
}

// ── 第 17 章：MCP 服务器的工具 ─────────────────────────────────

/**
 * 第 17 章：把 MCP 服务器的工具加进会话的工具。deferred 的和 ls 登记在同一个 ToolActivation 里
 * （tool_search 检索的是它，所以换一个新的 activation 与 tool_search），别的曝光级别直接加进工具列表。
 */
export function addMcpTools(exposed: RuntimeTools, tools: readonly AgentTool<any>[]): void {
  if (tools.length === 0) return;
  const previous = new Set(exposed.activation.tools);
  const activation = new ToolActivation([...exposed.activation.tools, ...tools.filter((tool) => exposureOf(tool) === "deferred")], {
    maxLoaded: exposed.activation.maxLoaded,
  });
  const kept = exposed.tools.filter((tool) => !previous.has(tool) && tool.name !== TOOL_SEARCH_NAME);
  const others = tools.filter((tool) => exposureOf(tool) !== "deferred");
  exposed.tools = [...kept, ...others, toolSearchTool(activation), ...activation.tools];
  exposed.activation = activation;
}

/** 第 17 章：项目的 .pi/mcp.json 只在明确信任的项目里读（--trust，或者记下的“信任”）。 */
async function mcpTrusted(options: RuntimeOptions["trust"], agentDir: string, cwd: string): Promise<boolean> {
  if (options === undefined) return false;
  if (options.once === true) return true;
  return (await readTrust(trustFile(agentDir)))[cwd] === true;
}
