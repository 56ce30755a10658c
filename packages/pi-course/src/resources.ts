/**
 * 资源：从工作目录找到的、写给模型看的材料，一次找齐。三种各在 resources/ 里的一个文件：
 *
 *   context-files.ts   项目上下文（实践 12.1）：AGENTS.md 从根走到 cwd，最近的在后
 *   skills.ts          技能与提示模板（实践 12.2）：技能只交出说明，模板在本地展开
 *   sections.ts        具名段落与补丁（实践 12.3）：重新加载只追加一条补丁
 *
 * 坏材料不让 Agent 停下：任何一份读不了、写坏了，都只是一条诊断。
 */

import { DEFAULT_MAX_CONTEXT_BYTES, loadContextFiles, type ContextFile, type ResourceDiagnostic } from "./resources/context-files.js";
import { loadPromptTemplates, loadSkills, type PromptTemplate, type Skill } from "./resources/skills.js";

export interface Resources {
  contextFiles: ContextFile[];
  skills: Skill[];
  promptTemplates: PromptTemplate[];
  diagnostics: ResourceDiagnostic[];
}

export interface LoadResourcesOptions {
  cwd: string;
  /** 向上找 AGENTS.md 时走到这一层为止（含这一层）；省略时走到文件系统根。 */
  stopAt?: string;
  /** 一份资源文件最多多少字节，默认 64 KiB（见 DEFAULT_MAX_CONTEXT_BYTES）。 */
  maxContextBytes?: number;
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
