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
import { cacheEnabled, kitCheckKey, noteCacheUse, readCached, writeCached } from "../scripts/engine/check-cache.ts";
import { KIT } from "./helpers.ts";

const work = tempDir("chain");
after(() => work.remove());

const CHAIN = continueChain(loadChapters(LESSONS_DIR));
// CI 的其余 Node 版本线上登记为跳过（理由见 scripts/ci/node-lines.ts 开头）；本机的 npm test 照常全做
const skip = elsewhereSkip("接续链");
// 整条链的结论只取决于课程内容与套件（见 kitCheckKey）：npm test 第二次起，输入没变就用上次整条链通过的记录；
// CI=true 与 npm test -- --no-cache 照样从头走一遍。缓存只存整条链都通过的结果。
const key = cacheEnabled() ? kitCheckKey(KIT, "continue-chain", ["test/continue-chain.test.ts", "test/learner.ts"]) : undefined;
const cached = key === undefined ? undefined : readCached(KIT, key);

describe("一位写法处处与课程不同的学习者，从第 03 章一路 --continue 到最后一章：没有一次冲突、不用 --use-course，每章都 verify 通过", () => {
  const root = path.join(work.dir, "learner");
  const progress = path.join(root, "progress.json");
  mkdirSync(root, { recursive: true });
  const run = (script: string, ...args: string[]) => runScript(script, args, { env: { PI_COURSE_PROGRESS: progress } });
  let previous: string | undefined;
  let started: number | undefined;
  let completed = 0;

  for (const id of CHAIN) {
    test(`第 ${id} 章：接着自己上一章的代码建目录、写完本章、verify 点亮`, { timeout: 180_000, ...(skip === undefined ? {} : { skip }) }, async (t) => {
      if (cached !== undefined) {
        noteCacheUse("hit", process.env, "接续链");
        t.diagnostic(`来自缓存：${cached.at} 同样的输入整条链通过（用时 ${(cached.durationMs / 1000).toFixed(1)} 秒）`);
        return;
      }
      started ??= Date.now();
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
      noteCacheUse("run", process.env, "接续链");
      completed++;
      if (completed === CHAIN.length && key !== undefined) {
        writeCached(KIT, key, { chapter: id, check: "continue-chain", durationMs: Date.now() - started, at: new Date().toISOString() });
      }
    });
  }
});
