import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { runScript, tempDir } from "./helpers.ts";
import { card, show } from "./learner.ts";
import { reword } from "../scripts/engine/reword.ts";
import { continueChain } from "../scripts/engine/chain.ts";
import { elsewhereSkip } from "../scripts/ci/node-lines.ts";

const work = tempDir("chain");
after(() => work.remove());

const CHAIN = continueChain(loadChapters(LESSONS_DIR));
// CI 的其余 Node 版本线上登记为跳过（理由见 scripts/ci/node-lines.ts 开头）；本机的 npm test 照常全做
const skip = elsewhereSkip("接续链");

describe("一位写法处处与课程不同的学习者，从第 03 章一路 --continue 到最后一章：没有一次冲突、不用 --use-course，每章都 verify 通过", () => {
  const root = path.join(work.dir, "learner");
  const progress = path.join(root, "progress.json");
  mkdirSync(root, { recursive: true });
  const run = (script: string, ...args: string[]) => runScript(script, args, { env: { PI_COURSE_PROGRESS: progress } });
  let previous: string | undefined;

  for (const id of CHAIN) {
    test(`第 ${id} 章：接着自己上一章的代码建目录、写完本章、verify 点亮`, { timeout: 180_000, ...(skip === undefined ? {} : { skip }) }, async () => {
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
