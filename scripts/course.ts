import path from "node:path";

import { openEditWorktree, exportCourse } from "./engine/authoring.js";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";

import { findChapter, loadChapters, type Chapter } from "./engine/chapters.js";
import { selfCheckChapter } from "./engine/contract.js";
import type { SelfCheckContext } from "./engine/selfcheck.js";
import { lintCourse } from "./engine/lint.js";
import { sweepMutants } from "./engine/mutant-sweep.js";
import { findCatchers, writeCatchers } from "./engine/caught-by.js";
import { checkChain } from "./engine/chain.js";
import { describeMutantReport } from "./engine/mutant-report.js";
import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { CourseError, usageError } from "./engine/errors.js";
import { ensureHistory, shortHash, type CourseHistory } from "./engine/history.js";
import { EDIT_BRANCH, KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";

const HELP = `用法：npm run course -- <子命令>

课程作者的工具。课程代码的唯一来源是 lessons/NN-slug/chapter.patch。

  history            构建（或从缓存取出）课程历史，列出每章的起点与目标
  edit [目录]        在 ${EDIT_BRANCH} 分支上打开课程历史的 worktree（默认 ../pi-course-edit），
                     用普通 git 改写：git commit --fixup、git rebase -i --autosquash <空白起点>
  export [--from 修订]
                     把编辑分支（默认 ${EDIT_BRANCH}）写回 lessons/*/chapter.patch 与步骤补丁，
                     重建历史、重新给课文盖哈希，并同步 packages/pi-course
  lint [章节…]       静态检查（不编译、几秒钟）：变异、故障实验与编译失败用例的原文在目标里恰好一次，
                     占位代码与实践区域对得上，点名的测试存在，课文命令被接受；export 完成后也会运行
  check [章节…]      对指定章节（默认全部）逐条运行课程自检，任何承诺被打破时以非零状态退出
  chain [章节…]      静态检查 DESIGN §5 的规则“一章从不在学习者背后改写前面实践的代码”：用一位写法处处不同的
                     学习者的上一章代码与本章的脚手架三方合并，列出冲突的文件（它们要改成本章的扩展区域）
  mutants <章节> [--json]
                     在本章实践区域的代码上逐个施加生成的小变异（运算符互换、边界差一、条件取反、
                     删掉一条调用），报告聚焦测试抓住了哪些、哪些活了下来，以及变异得分；
                     活下来的要么补测试，要么写进 chapter.json 的 equivalentMutants（带理由）
  caught-by [章节…]  逐条施加 chapter.json 的 mutations，把每条第一项变红的测试写进它的 caughtBy
                     （写明哪项测试守着这条规则；自检先单独跑那一项，不必等排在前面的测试）
  --help             显示本说明`;

await runCommandLine(HELP, { from: { type: "string" }, json: { type: "boolean" } }, async ({ values, positionals }) => {
  const [sub, ...rest] = positionals;
  if (sub === undefined) {
    // 没写子命令是用法错误：照样给出说明，但以 2 退出。
    console.log(HELP);
    process.exitCode = 2;
    return;
  }
  if (sub === "history") {
    const chapters = loadChapters(LESSONS_DIR);
    const history = await ensureHistory(KIT_ROOT, chapters);
    console.log(`课程分支 ${history.branch}：${shortHash(history.base)} 空白起点 → ${shortHash(history.tip)}`);
    for (const chapter of chapters) {
      const commits = history.chapters[chapter.id];
      if (commits) console.log(`  ${chapter.id} ${chapter.slug.padEnd(22)} ${shortHash(commits.parent)} → ${shortHash(commits.target)}`);
    }
    return;
  }
  if (sub === "edit") {
    const chapters = loadChapters(LESSONS_DIR);
    const history = await ensureHistory(KIT_ROOT, chapters);
    const dir = path.resolve(userCwd(), rest[0] ?? path.join(path.dirname(KIT_ROOT), "pi-course-edit"));
    const { created } = await openEditWorktree(KIT_ROOT, dir, history.tip);
    console.log(paint("green", `${created ? "已创建" : "已重新打开"} ${EDIT_BRANCH} 的 worktree：${dir}`));
    console.log(`空白起点是 ${shortHash(history.base)}；改写示例：git rebase -i --autosquash ${shortHash(history.base)}`);
    console.log("改完后回到课程套件运行：npm run course -- export");
    return;
  }
  if (sub === "export") {
    const summary = await exportCourse(KIT_ROOT, LESSONS_DIR, values.from);
    console.log(paint("green", `已从 ${summary.from} 导出 ${summary.chapters.length} 章：${summary.chapters.join("、")}`));
    console.log(`课程历史末端：${shortHash(summary.history.tip)}；课文哈希与 packages/pi-course 已同步`);
    await lint(loadChapters(LESSONS_DIR), summary.history);
    return;
  }
  if (sub === "lint") {
    const chapters = loadChapters(LESSONS_DIR);
    const selected = rest.length === 0 ? chapters : rest.map((input) => findChapter(chapters, input));
    await lint(chapters, await ensureHistory(KIT_ROOT, chapters), selected);
    return;
  }
  if (sub === "check") {
    const chapters = loadChapters(LESSONS_DIR);
    const selected = rest.length === 0 ? chapters : rest.map((input) => findChapter(chapters, input));
    let broken = 0;
    await withScratchContext(chapters, "check", async (ctx) => {
      for (const chapter of selected) {
        for (const report of await selfCheckChapter(ctx, chapter)) {
          const ok = report.problems.length === 0;
          if (!ok) broken++;
          console.log(`${ok ? paint("green", "✓") : paint("red", "✗")} 第 ${chapter.id} 章 · 承诺 ${report.promise}`);
          for (const problem of report.problems) console.log(`    ${problem}`);
        }
      }
    });
    if (broken > 0) throw new CourseError("SELF_CHECK_FAILED", `课程自检发现 ${broken} 条承诺被打破（见上）`);
    console.log(paint("green", `课程自检通过：${selected.map((chapter) => chapter.id).join("、")}`));
    return;
  }
  if (sub === "chain") {
    const chapters = loadChapters(LESSONS_DIR);
    const selected = rest.length === 0 ? chapters : rest.map((input) => findChapter(chapters, input));
    const findings = await checkChain(KIT_ROOT, chapters, await ensureHistory(KIT_ROOT, chapters), selected);
    const conflicts = findings.filter((finding) => !finding.clean);
    for (const finding of conflicts) console.log(`${paint("red", "✗")} 第 ${finding.chapter} 章改写了前面实践的代码：${finding.file}（做成本章的扩展区域）`);
    if (conflicts.length > 0) throw new CourseError("CHAIN_CONFLICT", `${conflicts.length} 个文件接续时会冲突（见上）`);
    console.log(paint("green", `接续检查通过：${findings.length} 个被后面章节改动的文件都能干净地接上学习者自己的写法`));
    return;
  }
  if (sub === "mutants") {
    if (rest.length !== 1) throw usageError("MUTANTS_USAGE", "用法：npm run course -- mutants <章节> [--json]，一次一章");
    const chapters = loadChapters(LESSONS_DIR);
    const chapter = findChapter(chapters, rest[0] ?? "");
    await withScratchContext(chapters, "mutants", async (ctx) => {
      const report = await sweepMutants(ctx, chapter, (outcome, done, total) => {
        if (!values.json && process.stderr.isTTY) process.stderr.write(`\r  ${done}/${total} ${outcome.mutant.file}:${outcome.mutant.line}`.padEnd(70));
      });
      if (!values.json && process.stderr.isTTY) process.stderr.write("\r".padEnd(72) + "\r");
      if (values.json) console.log(JSON.stringify(report, null, 2));
      else for (const line of describeMutantReport(report, chapter)) console.log(line);
    });
    return;
  }
  if (sub === "caught-by") {
    const chapters = loadChapters(LESSONS_DIR);
    const selected = rest.length === 0 ? chapters : rest.map((input) => findChapter(chapters, input));
    let missing = 0;
    await withScratchContext(chapters, "caught-by", async (ctx) => {
      for (const chapter of selected) {
        const catchers = await findCatchers(ctx, chapter);
        writeCatchers(chapter, catchers);
        const found = catchers.filter((catcher) => catcher.by !== undefined).length;
        console.log(`第 ${chapter.id} 章：${found}/${catchers.length} 条变异写明了抓住它的测试`);
        for (const catcher of catchers) {
          if (catcher.problem === undefined) continue;
          missing++;
          console.log(`  ${paint("red", "✗")} mutations[${catcher.index}]（${catcher.rule}）：${catcher.problem}`);
        }
      }
    });
    if (missing > 0) throw new CourseError("MUTATIONS_UNCAUGHT", `${missing} 条变异没有找到抓住它的测试（见上）`);
    return;
  }
  throw usageError("UNKNOWN_SUBCOMMAND", `未知子命令「${sub}」；可用：history、edit、export、lint、check、chain、mutants、caught-by`);
});

/** 自检引擎的上下文：课程历史，加上一个用完就删的临时目录（check、mutants、caught-by 共用）。 */
async function withScratchContext(chapters: Chapter[], name: string, use: (ctx: SelfCheckContext) => Promise<void>): Promise<void> {
  const history = await ensureHistory(KIT_ROOT, chapters);
  const workRoot = mkdtempSync(path.join(os.tmpdir(), `pi-course-${name}-`));
  try {
    await use({ kitRoot: KIT_ROOT, chapters, history, workRoot });
  } finally {
    rmSync(workRoot, { recursive: true, force: true });
  }
}

/** 静态检查这些章节（默认全部）：每个问题一行，指到 chapter.json 的字段；有问题时以非零状态退出。 */
async function lint(chapters: Chapter[], history: CourseHistory, selected: readonly Chapter[] = chapters): Promise<void> {
  const problems = await lintCourse(KIT_ROOT, chapters, history, selected);
  for (const problem of problems) console.log(`${paint("red", "✗")} ${problem}`);
  if (problems.length > 0) throw new CourseError("LINT_FAILED", `课程静态检查发现 ${problems.length} 处问题（见上）`);
  console.log(paint("green", `课程静态检查通过：${selected.map((chapter) => chapter.id).join("、")}`));
}
