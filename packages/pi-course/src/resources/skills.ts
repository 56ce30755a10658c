/**
 * 技能与提示模板（实践 12.2）：
 *
 *   技能       .pi/skills/<name>/SKILL.md。system prompt 里只放名字、说明和路径；正文等模型需要时
 *              自己用第 08 章的 read 工具去读，不用的技能不占上下文。
 *   提示模板   .pi/prompts/<name>.md。用户输入 `/name 参数…` 时在本地展开，模型只看到展开后的文字。
 *
 * 两种文件都用上下文文件的读法（先 stat、有上限）；front matter 写坏、缺 description、指到工作区之外、
 * 与先找到的技能同名，都只是一条诊断。
 */

import { readdir, realpath } from "node:fs/promises";
import path from "node:path";

import { DEFAULT_MAX_CONTEXT_BYTES, errorText, readTextFile, type ResourceDiagnostic } from "./context-files.js";

// ── 类型 ────────────────────────────────────────────────────────

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

/**
 * `/name 参数…` 拆成名字（/ 之后、第一个空白之前）与参数文字（其余，两端空白去掉）；不以 / 开头就不是命令。
 * 提示模板与会话的扩展命令（实践 12.6）用同一个拆法。
 */
export function splitSlashCommand(text: string): { name: string; args: string } | undefined {
  if (!text.startsWith("/")) return undefined;
  const space = text.search(/\s/);
  if (space === -1) return { name: text.slice(1), args: "" };
  return { name: text.slice(1, space), args: text.slice(space + 1).trim() };
}

/** `/name 参数…` 且 name 是一个模板：展开它；否则原样交回（包括不认识的 /name）。 */
export function expandPromptTemplate(text: string, templates: readonly PromptTemplate[]): string {
  // #region lab 12.2
  const command = splitSlashCommand(text);
  const template = templates.find((candidate) => candidate.name === command?.name);
  if (command === undefined || template === undefined) return text;
  return substituteArgs(template.content, parseCommandArgs(command.args));
  // #endregion
}

// ── 读文件 ──────────────────────────────────────────────────────

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
