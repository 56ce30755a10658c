import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { findRegions } from "../scripts/engine/regions.ts";
import { runScript, tempDir } from "./helpers.ts";
import { card, show } from "./learner.ts";

const work = tempDir("chain");
after(() => work.remove());

/**
 * 一位学习者的写法：课程答案的每个实践区域都换个样子——区域开头和结尾各多一行自己的注释，
 * 区域里每一行代码后面带一段行尾注释。意思不变，但区域里没有一行与课程的答案逐字相同，
 * 所以后面哪一章若是改了前面实践的代码（而不是把它当作本章的实践），三方合并就一定冲突。
 */
export function reword(source: string, file: string): string {
  const lines = source.split("\n");
  const regions = findRegions(source, file);
  const inside = new Set(regions.flatMap((region) => Array.from({ length: region.end - region.start - 1 }, (_, index) => region.start + 1 + index)));
  let template = false;
  const out: string[] = [];
  lines.forEach((line, index) => {
    const region = regions.find((candidate) => candidate.start === index);
    if (region !== undefined) {
      out.push(line, `${region.indent}// 我自己的写法（${region.lab}）`);
      return;
    }
    if (regions.some((candidate) => candidate.end === index)) {
      out.push(`${regions.find((candidate) => candidate.end === index)!.indent}// 写完了`, line);
      return;
    }
    const wasTemplate = template;
    // 反引号成对出现；还在模板字符串里的行不加注释（那是字符串的内容）
    template = (line.match(/(?<!\\)`/g)?.length ?? 0) % 2 === 1 ? !template : template;
    if (inside.has(index) && !wasTemplate && !template && /[;{}),]$/.test(line) && !/\/\/|\/\*/.test(line)) out.push(`${line} // 我的`);
    else out.push(line);
  });
  return out.join("\n");
}

const CHAIN = loadChapters(LESSONS_DIR)
  .filter((chapter) => chapter.mode === "重建" && Number(chapter.id) >= 3)
  .map((chapter) => chapter.id);

describe("一位写法处处与课程不同的学习者，从第 03 章一路 --continue 到最后一章：没有一次冲突、不用 --use-course，每章都 verify 通过", () => {
  const root = path.join(work.dir, "learner");
  const progress = path.join(root, "progress.json");
  mkdirSync(root, { recursive: true });
  const run = (script: string, ...args: string[]) => runScript(script, args, { env: { PI_COURSE_PROGRESS: progress } });
  let previous: string | undefined;

  for (const id of CHAIN) {
    test(`第 ${id} 章：接着自己上一章的代码建目录、写完本章、verify 点亮`, { timeout: 180_000 }, async () => {
      const dir = path.join(root, `own-${id}`);
      const made = previous === undefined ? await run("practice", id, dir) : await run("practice", id, dir, "--continue", previous);
      assert.equal(made.code, 0, `practice 没有干净地接上：\n${made.stdout}\n${made.stderr}`);
      assert.doesNotMatch(made.stdout, /换成了课程的版本/);
      const { teachingFiles, commits } = await card(id);
      for (const file of teachingFiles) writeFileSync(path.join(dir, file), reword(await show(commits.target, file), file));
      const verified = await run("verify", id, dir);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
      if (previous !== undefined) assert.match(verified.stdout, /接着你自己的代码做的（自第 03 章起/);
      assert.doesNotMatch(verified.stdout, /课程的版本/);
      previous = dir;
    });
  }
});
