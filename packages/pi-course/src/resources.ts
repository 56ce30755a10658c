/**
 * 资源：从工作目录找到的、写给模型看的材料。三种：
 *
 *   项目上下文   AGENTS.md（同一层没有就找 CLAUDE.md），从文件系统根一路走到 cwd，外层在前、最近的在后：
 *                越靠近工作目录的说明越具体，放在后面，模型读到它时前面的总则已经读过了。
 *   技能         .pi/skills/<name>/SKILL.md。system prompt 里只放名字、说明和路径；正文等模型需要时
 *                自己用第 08 章的 read 工具去读，不用的技能不占上下文。
 *   提示模板     .pi/prompts/<name>.md。用户输入 `/name 参数…` 时在本地展开，模型只看到展开后的文字。
 *
 * 前两种各是 system message 里的一个具名段落（第 09 章的 sections）：重新加载时追加一条只含变化的
 * 补丁，写下的 prompt 一个字节都不改。模板不进 system：它在用户这一侧展开，模型不需要知道它存在。
 *
 * 坏材料不让 Agent 停下：读不了、太大、不是 UTF-8、front matter 写坏了，都记成一条诊断，跳过这一份。
 * 三种文件读法相同：先 stat，不是普通文件（FIFO、目录、设备）或超过上限就不读，所以一个 FIFO 卡不住启动。
 */

import { lstat, readdir, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";

import type { SystemMessage } from "./types.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface ContextFile {
  /** 文件的绝对路径。 */
  path: string;
  content: string;
}

export interface Skill {
  name: string;
  description: string;
  /** SKILL.md 的绝对路径。 */
  filePath: string;
  /** 技能所在的目录：正文里的相对路径相对它。 */
  baseDir: string;
}

export interface PromptTemplate {
  name: string;
  description: string;
  /** front matter 之后的正文，里面可以有 $1、$@ 之类的占位。 */
  content: string;
  filePath: string;
}

/** 一份被跳过（或有问题）的材料：说清是哪个文件、为什么。 */
export interface ResourceDiagnostic {
  path: string;
  message: string;
}

export interface Resources {
  contextFiles: ContextFile[];
  skills: Skill[];
  promptTemplates: PromptTemplate[];
  diagnostics: ResourceDiagnostic[];
}

export interface LoadResourcesOptions {
  cwd: string;
  /** 向上找 AGENTS.md 时走到这一层为止（含这一层）；省略时走到文件系统根。测试用它隔开机器上真实的 AGENTS.md。 */
  stopAt?: string;
  /** 一份资源文件（上下文、技能、模板）最多多少字节，默认 64 KiB：上下文每次请求都要发，太大的文件多半是放错了地方。 */
  maxContextBytes?: number;
}

export type ContextFileOptions = Omit<LoadResourcesOptions, "cwd"> & {
  /** 诊断写进这里；省略时静默跳过。 */
  diagnostics?: ResourceDiagnostic[];
};

/** 两个具名段落的名字：重新加载时只比较、只补丁这两段，别人写的段落不碰。 */
export const RESOURCE_SECTIONS = ["project-context", "skills"] as const;
export type ResourceSectionName = (typeof RESOURCE_SECTIONS)[number];

export const DEFAULT_MAX_CONTEXT_BYTES = 64 * 1024;
const CONTEXT_FILE_NAMES = ["AGENTS.md", "CLAUDE.md"];

// ── 纯函数：front matter ────────────────────────────────────────

export interface Frontmatter {
  fields: Record<string, string>;
  body: string;
}

/**
 * 只认最简单的一种 front matter：第一行是 `---`，之后每行 `key: value`，再以一行 `---` 结束。
 * 没有开头的 `---` 就没有 front matter；开了头却没有结尾、或某一行不是 `key: value`，抛出说明。
 */
export function parseFrontmatter(source: string): Frontmatter {
  // #region lab 12.2
  const lines = source.replace(/\r\n/g, "\n").split("\n");
  if (lines[0]?.trim() !== "---") return { fields: {}, body: source };
  const end = lines.findIndex((line, index) => index > 0 && line.trim() === "---");
  if (end === -1) throw new Error("front matter 以 --- 开头，却没有结尾的 ---");
  const fields: Record<string, string> = {};
  for (const line of lines.slice(1, end)) {
    if (line.trim() === "") continue;
    const match = /^([A-Za-z][\w-]*):(.*)$/.exec(line);
    if (match === null) throw new Error(`front matter 里这一行不是 key: value：${line}`);
    fields[match[1]!] = unquote(match[2]!.trim());
  }
  return { fields, body: lines.slice(end + 1).join("\n").replace(/^\n+/, "") };
  // #endregion
}

// #region lab 12.2 辅助
function unquote(value: string): string {
  const quoted = /^(["'])(.*)\1$/.exec(value);
  return quoted === null ? value : quoted[2]!;
}
// #endregion

// ── 纯函数：模板参数 ────────────────────────────────────────────

/** 像 shell 那样切参数：空格或制表符分隔，单引号或双引号包住的一段算一个参数（引号本身不要，空参数不算）。 */
export function parseCommandArgs(input: string): string[] {
  // #region lab 12.2
  const args: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (const char of input) {
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
      else current += char;
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (char === " " || char === "\t") {
      if (current !== "") args.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  if (current !== "") args.push(current);
  return args;
  // #endregion
}

/**
 * 一次扫描替换全部占位：$1 $2 …（缺的参数换成空串）、${@:N}、${@:N:L}、$@ 与 $ARGUMENTS（全部参数用空格连起来）。
 * 只扫一遍，所以参数值里恰好写着 `$1` 也不会被再替换一次。
 */
export function substituteArgs(content: string, args: readonly string[]): string {
  // #region lab 12.2
  return content.replace(/\$\{@:(\d+)(?::(\d+))?\}|\$(\d+)|\$ARGUMENTS|\$@/g, (_all, start, length, index) => {
    if (index !== undefined) return args[Number(index) - 1] ?? "";
    if (start !== undefined) {
      const from = Math.max(Number(start) - 1, 0);
      const picked = length === undefined ? args.slice(from) : args.slice(from, from + Number(length));
      return picked.join(" ");
    }
    return args.join(" ");
  });
  // #endregion
}

/** `/name 参数…` 且 name 是一个模板：展开它；否则原样交回（包括不认识的 /name）。 */
export function expandPromptTemplate(text: string, templates: readonly PromptTemplate[]): string {
  // #region lab 12.2
  if (!text.startsWith("/")) return text;
  const space = text.search(/\s/);
  const name = space === -1 ? text.slice(1) : text.slice(1, space);
  const template = templates.find((candidate) => candidate.name === name);
  if (template === undefined) return text;
  const rest = space === -1 ? "" : text.slice(space + 1);
  return substituteArgs(template.content, parseCommandArgs(rest));
  // #endregion
}

// ── 纯函数：具名段落 ────────────────────────────────────────────

/** 段落要自带标题：补丁替换它时，模型能把新的一段和旧的一段对上。 */
function projectContextSection(files: readonly ContextFile[]): string {
  const parts = files.map((file) => `## ${file.path}\n\n${file.content.trim()}`);
  return ["# 项目上下文", "以下是项目里的说明文件，外层目录在前，离工作目录最近的在最后；有冲突时以靠后的为准。", ...parts].join("\n\n");
}

function skillsSection(skills: readonly Skill[]): string {
  const lines = skills.map((skill) => `- ${skill.name}：${skill.description}（正文：${skill.filePath}）`);
  return ["# 可用的技能", "任务与某个技能的说明相符时，先用 read 工具读它的正文，再按正文去做。", ...lines].join("\n");
}

/** 资源 → 具名段落。没有的资源就没有那一段（而不是一段空的）。 */
export function resourceSections(resources: Resources): Record<string, string> {
  // #region lab 12.3
  const sections: Record<string, string> = {};
  if (resources.contextFiles.length > 0) sections["project-context"] = projectContextSection(resources.contextFiles);
  if (resources.skills.length > 0) sections["skills"] = skillsSection(resources.skills);
  return sections;
  // #endregion
}

/**
 * 重新加载前后的段落 → 一条只写变化的 system 补丁：变了的写新内容，没了的写 null，没变的不写。
 * 什么都没变就没有补丁（undefined）：不为“没有变化”多写一条消息。
 */
export function resourcePatch(
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
  timestamp: number,
): SystemMessage | undefined {
  // #region lab 12.3
  const sections: Record<string, string | null> = {};
  for (const name of RESOURCE_SECTIONS) {
    const old = before[name];
    const next = after[name];
    if (old === next) continue;
    sections[name] = next ?? null;
  }
  if (Object.keys(sections).length === 0) return undefined;
  return { role: "system", content: "", sections, timestamp };
  // #endregion
}

// ── 读文件 ──────────────────────────────────────────────────────

// #region lab 12.1 辅助
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ELOOP") return "符号链接绕成了环";
  return error instanceof Error ? error.message : String(error);
}

/**
 * 读一份资源文件：先 stat（顺着符号链接走：指向自己的链接在这里报 ELOOP），不是普通文件、超过上限就不读。
 * 对 FIFO 调 readFile 会一直等到有人往里写：只有 stat 之后再读，启动才不会卡在一个管道上。
 */
async function readTextFile(file: string, maxBytes: number): Promise<string> {
  const info = await stat(file);
  if (!info.isFile()) throw new Error("不是普通文件");
  if (info.size > maxBytes) throw new Error(`文件有 ${info.size} 字节，超过上限 ${maxBytes} 字节`);
  try {
    return strictUtf8.decode(await readFile(file));
  } catch (error) {
    throw error instanceof TypeError ? new Error("不是有效的 UTF-8 文本") : error;
  }
}

/** 从 dir 往上直到 stop（或根）的每一层，外层在前。 */
function ancestors(dir: string, stop: string | undefined): string[] {
  const chain: string[] = [];
  for (let current = dir; ; current = path.dirname(current)) {
    chain.unshift(current);
    // 根目录的 dirname 是它自己：这是循环一定会停下的地方。
    if (current === stop || current === path.dirname(current)) return chain;
  }
}

/** 一层目录里的上下文文件：AGENTS.md 优先，没有才看 CLAUDE.md。问题记成诊断，交回 undefined。 */
async function contextFileIn(dir: string, maxBytes: number, diagnostics: ResourceDiagnostic[]): Promise<ContextFile | undefined> {
  for (const name of CONTEXT_FILE_NAMES) {
    const file = path.join(dir, name);
    try {
      await lstat(file);
    } catch {
      continue;
    }
    try {
      return { path: file, content: await readTextFile(file, maxBytes) };
    } catch (error) {
      diagnostics.push({ path: file, message: `跳过上下文文件：${errorText(error)}。` });
      return undefined;
    }
  }
  return undefined;
}
// #endregion

/**
 * 从文件系统根（或 stopAt）走到 cwd，收集每一层的 AGENTS.md（没有就 CLAUDE.md），外层在前、最近的在后。
 * cwd 先取真实路径：经符号链接进来的工作目录，走的也是它真正所在的那条路。
 */
export async function loadContextFiles(cwd: string, options: ContextFileOptions = {}): Promise<ContextFile[]> {
  // #region lab 12.1
  const diagnostics = options.diagnostics ?? [];
  const maxBytes = options.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
  const start = await realpath(cwd);
  const stop = options.stopAt === undefined ? undefined : await realpath(options.stopAt);
  const files: ContextFile[] = [];
  for (const dir of ancestors(start, stop)) {
    const file = await contextFileIn(dir, maxBytes, diagnostics);
    if (file !== undefined) files.push(file);
  }
  return files;
  // #endregion
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch {
    return [];
  }
}

// #region lab 12.2 辅助
/** file 是否在 dir 里面（两者都是真实路径）。 */
function isInside(file: string, dir: string): boolean {
  const relative = path.relative(dir, file);
  return relative.split(path.sep)[0] !== ".." && !path.isAbsolute(relative);
}

/** SKILL.md 的真实路径；没有这个文件（或那一项不是目录）交回 undefined：它不是技能，不算问题。 */
async function realSkillFile(filePath: string): Promise<string | undefined> {
  try {
    return await realpath(filePath);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}
// #endregion

/**
 * `<cwd>/.pi/skills/<name>/SKILL.md`，只看一层：不递归，也就不会在符号链接的环里打转。
 * 路径取真实路径：prompt 里写的正文位置要能原样交给 read 工具，而 read 按真实路径判断是否在工作区里；
 * 所以经符号链接指到工作区之外的技能不列出来（列出来模型也读不到正文），记一条诊断。
 * 两个技能同名时模型分不清该读哪一个：先找到的（目录名排在前面的）留下，后来的记一条诊断。
 */
export async function loadSkills(cwd: string, diagnostics: ResourceDiagnostic[] = [], maxBytes = DEFAULT_MAX_CONTEXT_BYTES): Promise<Skill[]> {
  // #region lab 12.2
  const workspace = await realpath(cwd);
  const root = path.join(workspace, ".pi", "skills");
  const skills: Skill[] = [];
  for (const entry of await listDir(root)) {
    const baseDir = path.join(root, entry);
    const filePath = path.join(baseDir, "SKILL.md");
    try {
      const real = await realSkillFile(filePath);
      if (real === undefined) continue;
      if (!isInside(real, workspace)) throw new Error(`它的真实位置 ${real} 在工作区之外，read 工具读不到它的正文`);
      const { fields } = parseFrontmatter(await readTextFile(filePath, maxBytes));
      const description = fields["description"]?.trim() ?? "";
      if (description === "") throw new Error("缺少 description：模型只靠它决定什么时候用这个技能");
      const name = fields["name"]?.trim() || entry;
      const earlier = skills.find((skill) => skill.name === name);
      if (earlier !== undefined) throw new Error(`与 ${earlier.filePath} 同名（${name}），先找到的那个留下`);
      skills.push({ name, description, filePath, baseDir });
    } catch (error) {
      diagnostics.push({ path: filePath, message: `跳过技能：${errorText(error)}。` });
    }
  }
  return skills;
  // #endregion
}

/** `<cwd>/.pi/prompts/<name>.md`；没写 description 就用正文的第一行。 */
export async function loadPromptTemplates(
  cwd: string,
  diagnostics: ResourceDiagnostic[] = [],
  maxBytes = DEFAULT_MAX_CONTEXT_BYTES,
): Promise<PromptTemplate[]> {
  // #region lab 12.2
  const root = path.join(cwd, ".pi", "prompts");
  const templates: PromptTemplate[] = [];
  for (const entry of await listDir(root)) {
    if (!entry.endsWith(".md")) continue;
    const filePath = path.join(root, entry);
    try {
      const { fields, body } = parseFrontmatter(await readTextFile(filePath, maxBytes));
      const firstLine = body.split("\n").find((line) => line.trim() !== "")?.trim() ?? "";
      templates.push({ name: entry.slice(0, -".md".length), description: fields["description"] ?? firstLine, content: body, filePath });
    } catch (error) {
      diagnostics.push({ path: filePath, message: `跳过提示模板：${errorText(error)}。` });
    }
  }
  return templates;
  // #endregion
}

/** 三种资源一次找齐；任何一份坏材料都只是一条诊断。 */
export async function loadResources(options: LoadResourcesOptions): Promise<Resources> {
  const diagnostics: ResourceDiagnostic[] = [];
  const contextFiles = await loadContextFiles(options.cwd, { ...options, diagnostics });
  const maxBytes = options.maxContextBytes ?? DEFAULT_MAX_CONTEXT_BYTES;
  const skills = await loadSkills(options.cwd, diagnostics, maxBytes);
  const promptTemplates = await loadPromptTemplates(options.cwd, diagnostics, maxBytes);
  return { contextFiles, skills, promptTemplates, diagnostics };
}
