import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { conflictReport, mergeThreeWay, planContinue } from "../scripts/engine/continue.ts";
import { ensureHistory } from "../scripts/engine/history.ts";
import { KIT_ROOT, LESSONS_DIR } from "../scripts/engine/paths.ts";
import { hasPty, KIT, runInTerminal, runScript, tempDir } from "./helpers.ts";
import { card, readProgress, show } from "./learner.ts";

const work = tempDir("continue");
after(() => work.remove());

/** util-linux 的 script 给子进程一个伪终端：reset 的确认只在终端里问。 */

const FIXTURES = path.join(KIT, "test", "fixtures");
const SRC = "packages/pi-course/src";

/** 把夹具里一位学习者的解答（与课程答案写法不同）放进练习目录。 */
function solveWithOwn(fixture: "own-03" | "own-04", dir: string): void {
  for (const name of readdirSync(path.join(FIXTURES, fixture))) {
    writeFileSync(path.join(dir, SRC, name), readFileSync(path.join(FIXTURES, fixture, name)));
  }
}

function own(fixture: string, name: string): string {
  return readFileSync(path.join(FIXTURES, fixture, name), "utf8");
}

function marker(dir: string): { chapter: string; origin?: { from: string; chapter: string; ownSince: string; own: string[]; merged: string[]; course: string[]; mine: string[] } } {
  return JSON.parse(readFileSync(path.join(dir, ".pi-course-practice.json"), "utf8"));
}

/**
 * 像学习者那样走完整条路：第 03 章用自己的写法做完 → --continue 进第 04 章 → 第 04 章也用自己的写法做完 →
 * verify → status；途中每一种拒绝都试一次。所有命令都是真实的子进程，进度写进这里自己的文件。
 */
describe("practice --continue：接着自己的代码做下一章", () => {
  const root = path.join(work.dir, "journey");
  const progress = path.join(root, "progress.json");
  const ch03 = path.join(root, "mine-03");
  const ch04 = path.join(root, "mine-04");
  const run = (script: string, ...args: string[]) => runScript(script, args, { env: { PI_COURSE_PROGRESS: progress } });

  before(async () => {
    mkdirSync(root, { recursive: true });
    const created = await run("practice", "03", ch03);
    assert.equal(created.code, 0, created.stderr);
  });

  test("上一章还没 verify 通过：一行中文拒绝，退出码 1，给出 verify 与普通 practice 两条路，什么也不建", async () => {
    const { code, stdout, stderr } = await run("practice", "04", ch04, "--continue");
    assert.equal(code, 1, stdout + stderr);
    assert.equal(stdout, "");
    assert.equal(stderr.trim().split("\n").length, 1);
    assert.match(stderr, /^错误：第 03 章还没有 verify 通过，不能接着它的代码做第 04 章：先运行 npm run verify -- 03，或者从课程起点开始：npm run practice -- 04/);
    assert.ok(!existsSync(ch04));
  });

  test("第 03 章用与课程不同的写法做完，verify 点亮（记作从课程起点开始）", { timeout: 120_000 }, async () => {
    solveWithOwn("own-03", ch03);
    const { teachingFiles } = await card("03");
    for (const file of teachingFiles) {
      assert.notEqual(readFileSync(path.join(ch03, file), "utf8"), await show((await card("03")).commits.target, file), `${file} 应当与课程答案逐字不同`);
    }
    const { code, stdout, stderr } = await run("verify", "03", ch03);
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /想接着你自己的代码做：npm run practice -- 04 --continue/);
    assert.equal(readProgress(progress).verified["03"]?.dir, ch03);
    assert.equal((readProgress(progress).verified["03"] as { basis?: string }).basis, "course");
  });

  test("上一章的代码在 verify 之后改过、现在没通过更早的测试：重跑一遍，一行说出第一处失败，给出普通 practice，什么也不建", { timeout: 120_000 }, async () => {
    const file = path.join(ch03, SRC, "types.ts");
    const good = readFileSync(file, "utf8");
    writeFileSync(file, good.replace('.join("\\n");\n}', '.join("");\n}'));
    try {
      const { code, stdout, stderr } = await run("practice", "04", ch04, "--continue");
      assert.equal(code, 1, stdout + stderr);
      assert.equal(stderr.trim().split("\n").length, 1, stderr);
      assert.match(stderr, /^错误：你在 .*mine-03 里的代码现在没通过第 03 章及更早章节的测试（第一处：第 03 章的测试「文本投影有损，但不修改原 content」没通过）/);
      assert.match(stderr, /或者从课程起点开始：npm run practice -- 04\n$/);
      assert.ok(!existsSync(ch04));
    } finally {
      writeFileSync(file, good);
    }
  });

  test("上一章的目录不是第 03 章的：用法错误，退出码 2", async () => {
    const other = path.join(root, "mine-02");
    assert.equal((await run("practice", "02", other)).code, 0);
    for (const args of [["04", ch04, "--continue", other], ["04", "--use-course", "types.ts", ch04, "--continue", other]]) {
      const { code, stderr } = await run("practice", ...args);
      assert.equal(code, 2, stderr);
      assert.match(stderr, /是第 02 章的练习目录，不是第 03 章的/, "紧跟在 --continue 后面的是上一章的目录");
      assert.ok(!existsSync(ch04));
    }
  });

  test("接续：带上自己的教学文件（逐字节），加上第 04 章的聚焦测试；没有答案；目录记下来历与起点快照", { timeout: 120_000 }, async () => {
    const { code, stdout, stderr } = await run("practice", "04", ch04, "--continue", ch03);
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /已接着你第 03 章的代码创建第 04 章练习目录/);
    assert.match(stdout, /原样带来你的：.*types\.ts/);
    // 上一项测试改坏又改回了 types.ts：内容与 verify 时相同，那次的全部通过仍然算数
    assert.match(stdout, /那个目录自第 03 章 verify 通过以来一个文件都没变，没有再跑一遍测试/);
    for (const name of ["types.ts", "event-stream.ts"]) {
      assert.equal(readFileSync(path.join(ch04, SRC, name), "utf8"), own("own-03", name), `${name} 应当是学习者自己的版本`);
      assert.equal(readFileSync(path.join(ch04, ".pi-course/start", SRC, name), "utf8"), own("own-03", name), "起点快照");
    }
    const { commits, teachingFiles } = await card("04");
    const focused = "packages/pi-course/test/04-scripted-model.test.ts";
    assert.equal(readFileSync(path.join(ch04, focused), "utf8"), await show(commits.target, focused));
    for (const file of teachingFiles) assert.ok(!existsSync(path.join(ch04, file)), `${file} 是本章的答案，不该出现`);
    assert.ok(!existsSync(path.join(ch04, ".git")));
    assert.ok(existsSync(path.join(ch04, "node_modules", "typescript")));
    assert.match(readFileSync(path.join(ch04, "LEARNING.md"), "utf8"), /## 这个目录接着你自己的代码\n\n它由 `npm run practice -- 04 --continue` 从你第 03 章的目录/);
    const { origin } = marker(ch04);
    assert.equal(origin?.from, ch03);
    assert.equal(origin?.chapter, "03");
    assert.equal(origin?.ownSince, "03");
    assert.ok(origin?.own.includes(`${SRC}/types.ts`));
    assert.equal(readProgress(progress).practiceDirs["04"], ch04);
  });

  test("第 04 章也用自己的写法做完：verify 的检查照旧，点亮并记作自己的代码；status 分得清两种", { timeout: 120_000 }, async () => {
    const before = await run("verify", "04");
    assert.equal(before.code, 1, "还没写 scripted-model.ts");
    assert.match(before.stdout, /接着你自己的代码做的（自第 03 章起/);
    assert.match(before.stdout, /TS2307/);

    solveWithOwn("own-04", ch04);
    const { code, stdout, stderr } = await run("verify", "04");
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /更早章节\s+✓ 00 4\/4 · 01 4\/4 · 02 6\/6 · 03 4\/4/);
    const entry = readProgress(progress).verified["04"] as { basis?: string; ownSince?: string; dir: string };
    assert.equal(entry.basis, "own");
    assert.equal(entry.ownSince, "03");
    assert.equal(entry.dir, ch04);

    const status = await run("status");
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /● 03 .*已点亮 \d\d-\d\d · 从课程起点开始/);
    assert.match(status.stdout, /● 04 .*已点亮 \d\d-\d\d · 接着自己的代码（自 03 章起）/);
    assert.match(status.stdout, /或者接着你第 04 章自己的代码做：npm run practice -- 05 --continue/);
    const json = JSON.parse((await run("status", "--json")).stdout) as { parts: Array<{ chapters: Array<{ id: string; basis?: string }> }> };
    const entries = json.parts.flatMap((part) => part.chapters);
    assert.equal(entries.find((chapter) => chapter.id === "04")?.basis, "own");
    assert.equal(entries.find((chapter) => chapter.id === "03")?.basis, "course");
  });

  test("第 05 章要改学习者自己的 types.ts、三方合并不干净：逐个文件说明怎么办，退出码 1，什么也不建、不留临时目录", { timeout: 120_000 }, async () => {
    const ch05 = path.join(root, "mine-05");
    const { code, stdout, stderr } = await run("practice", "05", ch05, "--continue");
    assert.equal(code, 1, stdout + stderr);
    assert.match(stderr, /第 05 章的改动有 1 个文件套不上你在 .*mine-04 里的代码，所以什么也没有创建/);
    assert.match(stderr, /packages\/pi-course\/src\/types\.ts：这是你自己写的教学文件/);
    assert.match(stderr, /git -C .* diff [0-9a-f]{8} [0-9a-f]{8} -- packages\/pi-course\/src\/types\.ts/);
    assert.match(stderr, /--keep-mine packages\/pi-course\/src\/types\.ts/);
    assert.match(stderr, /--use-course packages\/pi-course\/src\/types\.ts/);
    assert.match(stderr, /或者不接续，从课程起点开始：npm run practice -- 05/);
    assert.match(stderr, /错误：第 05 章的改动套不上你的 1 个文件/);
    assert.ok(!existsSync(ch05));
    assert.deepEqual(readdirSync(root).filter((name) => name.includes("partial")), []);

    // 学习者选了：types.ts 用课程的版本；其余仍是自己的
    const chosen = await run("practice", "05", ch05, "--continue", "--use-course", "types.ts");
    assert.equal(chosen.code, 0, chosen.stdout + chosen.stderr);
    assert.match(chosen.stdout, /换成了课程的版本：types\.ts/);
    const target05 = (await card("05")).commits.target;
    assert.equal(readFileSync(path.join(ch05, SRC, "types.ts"), "utf8"), await show(target05, `${SRC}/types.ts`));
    assert.equal(readFileSync(path.join(ch05, SRC, "scripted-model.ts"), "utf8"), own("own-04", "scripted-model.ts"));
    assert.equal(readFileSync(path.join(ch05, SRC, "event-stream.ts"), "utf8"), own("own-03", "event-stream.ts"));
    assert.match(readFileSync(path.join(ch05, SRC, "openai-compatible.ts"), "utf8"), /尚未实现/, "本章的新文件从目标切出");
    const { origin } = marker(ch05);
    assert.deepEqual(origin?.course, [`${SRC}/types.ts`]);
    assert.equal(origin?.ownSince, "03", "链条从第 03 章起");

    // 做完本章：verify 与 status 照实说哪个文件是课程的版本，不把它算作自己的代码
    const { teachingFiles } = await card("05");
    for (const file of teachingFiles.filter((name) => name !== `${SRC}/types.ts`)) writeFileSync(path.join(ch05, file), await show(target05, file));
    const verified = await run("verify", "05", ch05);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /其中 packages\/pi-course\/src\/types\.ts 是接续时按 --use-course 换成的课程版本，不是你自己的代码/);
    assert.deepEqual((readProgress(progress).verified["05"] as { courseFiles?: string[] }).courseFiles, [`${SRC}/types.ts`]);
    const status = await run("status");
    assert.match(status.stdout, /● 05 .*已点亮 \d\d-\d\d · 接着自己的代码（自 03 章起，1 个文件用了课程的版本）/);
  });

  test("reset：不在终端里又没有 --yes 就不动；--yes 时先备份再放回起点（接续目录的起点是学习者自己的代码）", { timeout: 60_000 }, async () => {
    const file = path.join(ch04, SRC, "types.ts");
    const edited = `${own("own-03", "types.ts")}\nexport const scratch = 1;\n`;
    writeFileSync(file, edited);

    const refused = await run("reset", "04", "types.ts", ch04);
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr.trim().split("\n").length, 1);
    assert.match(refused.stderr, /不在终端里，没法确认：packages\/pi-course\/src\/types\.ts 原样未动；确定要还原就加 --yes/);
    assert.equal(readFileSync(file, "utf8"), edited);

    const done = await run("reset", "04", "types.ts", ch04, "--yes");
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /已把 packages\/pi-course\/src\/types\.ts 还原到本章起点/);
    assert.equal(readFileSync(file, "utf8"), own("own-03", "types.ts"), "接续目录的起点是学习者自己的 types.ts，不是课程的");
    const backups = readdirSync(path.join(ch04, ".pi-course/backup"));
    assert.equal(backups.length, 1);
    assert.match(backups[0]!, /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/);
    assert.equal(readFileSync(path.join(ch04, ".pi-course/backup", backups[0]!, SRC, "types.ts"), "utf8"), edited);

    const again = await run("reset", "04", "types.ts", ch04, "--yes");
    assert.equal(again.code, 0);
    assert.match(again.stdout, /已经是本章起点的样子，什么也没做/);
    assert.equal(readdirSync(path.join(ch04, ".pi-course/backup")).length, 1, "没有改动就不做备份");

    // 起点时还没有的文件：还原后不在了，学习者的版本在备份里
    const mine = path.join(ch04, SRC, "scripted-model.ts");
    const removed = await run("reset", "04", mine, "--yes");
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /起点时还没有这个文件，现在它不在了/);
    assert.ok(!existsSync(mine));
    const kept = readdirSync(path.join(ch04, ".pi-course/backup")).map((stamp) => path.join(ch04, ".pi-course/backup", stamp, SRC, "scripted-model.ts"));
    assert.ok(kept.some((candidate) => existsSync(candidate) && readFileSync(candidate, "utf8") === own("own-04", "scripted-model.ts")));
  });
});

describe("从观察章接续", () => {
  test("第 00 章（观察章）verify 之后接续第 01 章：自己的代码从第 01 章算起", { timeout: 120_000 }, async () => {
    const root = path.join(work.dir, "from-00");
    const progress = path.join(root, "progress.json");
    const run = (script: string, ...args: string[]) => runScript(script, args, { env: { PI_COURSE_PROGRESS: progress } });
    mkdirSync(root, { recursive: true });
    assert.equal((await run("practice", "00", path.join(root, "c00"))).code, 0);
    assert.equal((await run("verify", "00")).code, 0);
    const { code, stdout, stderr } = await run("practice", "01", path.join(root, "c01"), "--continue");
    assert.equal(code, 0, stdout + stderr);
    assert.match(stdout, /自第 01 章起/);
    assert.equal(marker(path.join(root, "c01")).origin?.ownSince, "01");
  });

  test("第 00 章前面没有章节：用法错误", async () => {
    const { code, stderr } = await runScript("practice", ["00", path.join(work.dir, "never-00"), "--continue"]);
    assert.equal(code, 2);
    assert.match(stderr, /第 00 章前面没有章节，无从接续/);
  });
});

describe("reset：普通练习目录与错误的输入", () => {
  const root = path.join(work.dir, "reset");
  const progress = path.join(root, "progress.json");
  const dir = path.join(root, "pi-practice-05");
  const run = (...args: string[]) => runScript("reset", args, { env: { PI_COURSE_PROGRESS: progress } });

  before(async () => {
    mkdirSync(root, { recursive: true });
    const created = await runScript("practice", ["05", dir], { env: { PI_COURSE_PROGRESS: progress } });
    assert.equal(created.code, 0, created.stderr);
  });

  test("普通练习目录：放回从目标切出的脚手架；省略目录时用 practice 记下的；相对路径按当前目录解析", async () => {
    const file = path.join(dir, SRC, "sse.ts");
    const starter = readFileSync(file, "utf8");
    writeFileSync(file, "// 我写坏了\n");
    const { code, stdout, stderr } = await runScript("reset", ["05", "src/sse.ts", "--yes"], {
      cwd: path.join(dir, "packages/pi-course"),
      env: { PI_COURSE_PROGRESS: progress },
    });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /已把 packages\/pi-course\/src\/sse\.ts 还原到本章起点/);
    assert.equal(readFileSync(file, "utf8"), starter);
  });

  test("不是教学文件、没写文件、多余的参数：退出码 2，一行中文，什么也不动", async () => {
    const test05 = path.join(dir, "packages/pi-course/test/05-provider-adapter.test.ts");
    const before = readFileSync(test05, "utf8");
    const backups = () => (existsSync(path.join(dir, ".pi-course/backup")) ? readdirSync(path.join(dir, ".pi-course/backup")).length : 0);
    const backupsBefore = backups();
    const cases: Array<[string[], RegExp]> = [
      [["05", "05-provider-adapter.test.ts", dir, "--yes"], /不是第 05 章能还原的教学文件；本章的教学文件：openai-compatible\.ts、sse\.ts、types\.ts/],
      [["05"], /请写出要还原的文件/],
      [["05", "sse.ts", dir, "extra"], /最多三个参数/],
      [["05", "sse.ts", path.join(root, "nowhere"), "--yes"], /不存在：检查路径是否写对/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await run(...args);
      assert.equal(code, 2, `${JSON.stringify(args)}：${stderr}`);
      assert.equal(stderr.trim().split("\n").length, 1);
      assert.match(stderr, message);
    }
    assert.equal(readFileSync(test05, "utf8"), before);
    assert.equal(backups(), backupsBefore, "没有动过任何文件，也就没有新的备份");
  });

  test("在终端里先问一句：回答 n 什么也不动，回答 y 才还原", { skip: hasPty ? false : "需要 util-linux 的 script 命令来提供伪终端", timeout: 60_000 }, async () => {
    const file = path.join(dir, SRC, "sse.ts");
    const starter = readFileSync(file, "utf8");
    const mine = "// 我的第二版\n";
    writeFileSync(file, mine);
    const ask = async (answer: string) => {
      const { child, closed, output, waitFor } = runInTerminal("reset", ["05", "sse.ts", dir], { PI_COURSE_PROGRESS: progress });
      await waitFor(/（y\/N）/, 30_000);
      assert.match(output(), /把 packages\/pi-course\/src\/sse\.ts 还原到本章起点？你现在的版本会先移到练习目录的 \.pi-course\/backup\/ 里，不会丢。/);
      child.stdin.write(`${answer}\r`);
      assert.equal(await closed, 0);
      return output();
    };
    assert.match(await ask("n"), /没有还原，文件原样未动/);
    assert.equal(readFileSync(file, "utf8"), mine);
    assert.match(await ask("y"), /已把 packages\/pi-course\/src\/sse\.ts 还原到本章起点/);
    assert.equal(readFileSync(file, "utf8"), starter);
  });

  test("--help 说明备份的位置与 --yes", async () => {
    const { code, stdout } = await run("--help");
    assert.equal(code, 0);
    assert.match(stdout, /用法：npm run reset -- <章节> <文件> \[目录\] \[--yes\]/);
    assert.match(stdout, /\.pi-course\/backup/);
  });
});

describe("接续的合并规则（不经命令行）", () => {
  test("学习者改过的地方与本章的改动不重叠：三方合并干净，两边的改动都在", () => {
    const base = "a\nb\nc\nd\ne\nf\ng\n";
    const ours = "a\nb\nc\nd\ne\nf\ng\nmine\n";
    const theirs = "a\nchapter\nb\nc\nd\ne\nf\ng\n";
    assert.equal(mergeThreeWay(ours, base, theirs), "a\nchapter\nb\nc\nd\ne\nf\ng\nmine\n");
    assert.equal(mergeThreeWay("a\nX\nc\nd\ne\nf\ng\n", base, "a\nY\nc\nd\ne\nf\ng\n"), undefined, "同一处两样改法：冲突");
  });

  test("课程写法的 types.ts 加上学习者自己的辅助函数：第 05 章的改动织进去，记作 merged；--keep-mine 原样保留", { timeout: 60_000 }, async () => {
    const chapters = loadChapters(LESSONS_DIR);
    const history = await ensureHistory(KIT_ROOT, chapters);
    const chapter = chapters.find((candidate) => candidate.id === "05")!;
    const source = path.join(work.dir, "unit-04");
    const runner = await runScript("practice", ["04", source]);
    assert.equal(runner.code, 0, runner.stderr);
    const target04 = history.chapters["04"]!.target;
    for (const file of ["types.ts", "event-stream.ts", "scripted-model.ts"]) {
      writeFileSync(path.join(source, SRC, file), await show(target04, `${SRC}/${file}`));
    }
    const extra = "\n/** 我自己加的小工具。 */\nexport function lastOf<T>(items: readonly T[]): T | undefined {\n  return items[items.length - 1];\n}\n";
    writeFileSync(path.join(source, SRC, "types.ts"), (await show(target04, `${SRC}/types.ts`)) + extra);

    const plan = await planContinue({ kitRoot: KIT_ROOT, chapters, chapter, history, source });
    assert.deepEqual(plan.conflicts, []);
    assert.deepEqual(plan.origin.merged, [`${SRC}/types.ts`]);
    const merged = plan.files.get(`${SRC}/types.ts`)!.toString("utf8");
    assert.ok(merged.includes("export interface ToolDefinition"), "第 05 章的改动织进来了");
    assert.ok(merged.endsWith(extra), "学习者自己的辅助函数原样保留");
    assert.ok(plan.origin.own.includes(`${SRC}/scripted-model.ts`));

    const kept = await planContinue({ kitRoot: KIT_ROOT, chapters, chapter, history, source, keepMine: [`${SRC}/types.ts`] });
    assert.deepEqual(kept.origin.merged, []);
    assert.equal(kept.files.get(`${SRC}/types.ts`)!.toString("utf8"), readFileSync(path.join(source, SRC, "types.ts"), "utf8"));

    // 学习者自己有一个与本章新文件同名的文件，又删掉了本章要改的 types.ts：两个都逐个说明，什么也不写
    writeFileSync(path.join(source, SRC, "sse.ts"), "// 我自己的 sse 小工具\n");
    rmSync(path.join(source, SRC, "types.ts"));
    const blocked = await planContinue({ kitRoot: KIT_ROOT, chapters, chapter, history, source });
    assert.deepEqual(
      blocked.conflicts.map(({ file, kind, reason }) => `${file} ${kind} ${reason}`),
      [`${SRC}/sse.ts course taken`, `${SRC}/types.ts teaching deleted`],
    );
    const report = conflictReport(blocked.conflicts, { kitRoot: KIT_ROOT, chapter, history, source }).join("\n");
    assert.match(report, /sse\.ts：本章要新建（或删掉）这个文件，而你那里已经有一个自己的同名文件。/);
    assert.match(report, /types\.ts：你删掉了这个文件（或给它改了名），而本章要改它。/);
    assert.match(report, /加 --use-course packages\/pi-course\/src\/sse\.ts/);
    assert.match(report, /用课程的版本：加 --use-course packages\/pi-course\/src\/types\.ts；或者先在 .* 里把它放回来/);
    assert.doesNotMatch(report, /--keep-mine/, "删掉的文件没有“你的版本”可保留");
  });
});
