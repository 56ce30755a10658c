import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import { applyAnchored } from "../scripts/engine/regions.ts";
import { KIT, runScript, spawnProcess } from "./helpers.ts";

/**
 * 学习者视角的测试夹具：用真实的 practice 命令建练习目录，
 * 再用课程历史里的某个提交（起点、步骤、目标）替换教学文件，模拟“做到哪一步”。
 */
export interface ChapterCommits {
  parent: string;
  target: string;
  steps: Record<string, string>;
}

interface CardJson {
  teachingFiles: string[];
  commits: ChapterCommits;
  fault: { mutations: Array<{ file: string; find: string; replace: string }> };
  labs: Array<{ id: string; hints: Record<string, string> }>;
}

const cards = new Map<string, CardJson>();

export async function card(chapter: string): Promise<CardJson> {
  let found = cards.get(chapter);
  if (!found) {
    const result = await runScript("checkpoint", [chapter, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    found = JSON.parse(result.stdout) as CardJson;
    cards.set(chapter, found);
  }
  return found;
}

/** 运行 practice 命令创建练习目录（进度写进 progress）。 */
export async function practice(chapter: string, dir: string, progress: string): Promise<void> {
  const result = await runScript("practice", [chapter, dir], { env: { PI_COURSE_PROGRESS: progress } });
  assert.equal(result.code, 0, result.stderr);
}

/** 把教学文件换成某个提交里的版本：step 写 "target" 或步骤 id（例如 3.1）。 */
export async function solveTo(chapter: string, dir: string, step: "target" | string): Promise<void> {
  const { teachingFiles, commits } = await card(chapter);
  const commit = step === "target" ? commits.target : commits.steps[step];
  assert.ok(commit, `第 ${chapter} 章没有步骤 ${step}`);
  for (const file of teachingFiles) writeFileSync(path.join(dir, file), await show(commit, file));
}

/** git show 提交:文件，原样返回（不去掉结尾换行）。 */
export async function show(commit: string, file: string): Promise<string> {
  const result = await spawnProcess("git", ["show", `${commit}:${file}`], { cwd: KIT });
  assert.equal(result.code, 0, result.stderr);
  return result.stdout;
}

/** 对练习目录应用某一章声明的故障实验（用来制造回归）。 */
export async function applyFault(chapter: string, dir: string): Promise<void> {
  const { fault } = await card(chapter);
  for (const mutation of fault.mutations) {
    const file = path.join(dir, mutation.file);
    const source = readFileSync(file, "utf8");
    writeFileSync(file, applyAnchored(source, mutation));
  }
}

export function readProgress(file: string): {
  verified: Record<string, { target: string; dir: string; verifiedAt: string }>;
  hints: Record<string, Record<string, number>>;
  practiceDirs: Record<string, string>;
} {
  if (!existsSync(file)) return { verified: {}, hints: {}, practiceDirs: {} };
  return JSON.parse(readFileSync(file, "utf8"));
}
