/**
 * 资源的具名段落（实践 12.3）：项目上下文与技能各是 system message 里的一段（第 09 章的 sections）。
 * 重新加载时追加一条只含变化的补丁，写下的 prompt 一个字节都不改。模板不进 system：它在用户这一侧展开，
 * 模型不需要知道它存在。
 */

import type { SystemMessage } from "../types.js";
import type { ContextFile } from "./context-files.js";
import type { Skill } from "./skills.js";

/** 段落从这两样资源做出。 */
export interface SectionSources {
  contextFiles: readonly ContextFile[];
  skills: readonly Skill[];
}

/** 两个具名段落的名字：重新加载时只比较、只补丁这两段，别人写的段落不碰。 */
export const RESOURCE_SECTIONS = ["project-context", "skills"] as const;
export type ResourceSectionName = (typeof RESOURCE_SECTIONS)[number];

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
export function resourceSections(resources: SectionSources): Record<string, string> {
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
