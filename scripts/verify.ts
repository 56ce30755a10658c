
import { chapterAndDir, paint, print, runCommandLine, warn } from "./engine/cli.js";
import { readLearnerTree, treeFingerprint } from "./engine/continue.js";
import { openChapter, openPracticeSession } from "./engine/course.js";
import { CourseError } from "./engine/errors.js";
import { practiceStart, shortHash } from "./engine/history.js";
import { currentLab } from "./engine/labs.js";
import { withPracticeLock } from "./engine/practice-lock.js";
import { KIT_ROOT } from "./engine/paths.js";
import { hintsShown } from "./engine/progress.js";
import { checkLines, deviationLines, hintLine, seconds, type Painter } from "./engine/screen.js";
import type { TestOutcome } from "./engine/runner.js";
import { isBehind, nextChapter } from "./engine/course-map.js";
import { checkPractice, recordCheck, type PracticeCheck } from "./engine/verify.js";

const HELP = `用法：npm run verify -- <章节> [目录] [--json]

构建练习目录，运行本章的聚焦测试和每一章更早的测试（回归会显出来），
按实践报告结果，只指出第一处偏差：第一条失败断言的期望与实际，或第一条 tsc 错误的文件与行号。
全部通过时把本章记为已完成，在 npm run status 的地图上点亮。
已经点亮的章节这次没通过时仍然保持点亮（记录来自之前那次通过，verify 从不抹掉它）；
修好后再 verify 一次即可。

practice --continue 接着你自己的代码建的目录，检查与从课程起点开始的目录完全相同；
点亮时记下这一章是“接着自己的代码”做完的（npm run status 会标出来，--json 里是 basis: own / course）。

<章节> 可以写 3、03 或 message-ir。
[目录] 默认是 practice 为本章创建的练习目录（通常是套件旁边的 ../pi-practice-NN）。
进度文件的位置见 npm run status；可用环境变量 PI_COURSE_PROGRESS 改到别处。

什么样的通过才算数：测试文件和 packages/pi-course/tsconfig.json 必须与课程版本一致
（tsconfig 决定 dist/test 里实际跑的是哪份测试）；每个实践的测试数必须对得上，
所以提前 process.exit(0) 少跑的测试算没通过；node:assert 在你的代码运行之前就被冻结。
挡不住的：你的代码和测试在同一个进程里运行，存心的破坏（改写 node:test、Error 之类的全局对象）
总还有办法骗过它。verify 守护的是“我真的做完了”这件事本身，骗过它只是骗了自己。

把 --json 的输出存成文件时加 -s，否则 npm 会先打印一行命令横幅：
  npm run -s verify -- 03 --json > result.json

  --json   以 JSON 输出结果（给导师或工具读取）
  --help   显示本说明`;

const color: Painter = (style, text) => paint(style, text);

await runCommandLine(HELP, { json: { type: "boolean" } }, async ({ values, positionals }) => {
  const [chapterInput, dirInput] = chapterAndDir(positionals);
  const { chapters, chapter, history } = await openChapter(chapterInput);
  const session = openPracticeSession(chapter, dirInput);
  const { dir, marker, file } = session;

  // 指纹在检查之前取：记下的是这次检查真正看到的代码（检查途中的保存不算）
  const fingerprint = treeFingerprint(readLearnerTree(dir));
  const check = await withPracticeLock(dir, () => checkPractice({ dir, chapter, chapters, scope: "all", integrity: { kitRoot: KIT_ROOT, history } }));
  const target = history.chapters[chapter.id]?.target ?? "";

  const saved = recordCheck(file, { chapter, check, marker, target, dir, now: new Date(), fingerprint });
  warn(saved?.warning);
  const progress = saved?.progress ?? session.progress;
  // 没通过不会抹掉之前的点亮：记录的是那一次亲眼看到的全部通过
  const earlierPass = check.passed ? undefined : progress.verified[chapter.id];

  if (values.json) {
    console.log(JSON.stringify(toJson(check, target, progress.verified[chapter.id] !== undefined, marker.origin ? "own" : "course"), jsonValue, 2));
    if (!check.passed) process.exitCode = 1;
    return;
  }

  print(paint("bold", `第 ${chapter.id} 章 · ${chapter.title}`) + paint("dim", `  验证 ${dir}`));
  if (marker.origin) {
    print(paint("dim", `接着你自己的代码做的（自第 ${marker.origin.ownSince} 章起，上一章的目录是 ${marker.origin.from}）；检查与从课程起点开始的目录完全相同。`));
    if (marker.origin.course.length > 0) {
      print(paint("dim", `其中 ${marker.origin.course.join("、")} 是接续时按 --use-course 换成的课程版本，不是你自己的代码。`));
    }
  }
  if (marker.start !== practiceStart(chapter, history)) {
    print(
      paint("yellow", `这个练习目录取自旧版本的课程（${shortHash(marker.start)}）；课程已更新，起点现在是 ${shortHash(practiceStart(chapter, history))}。`),
    );
  }
  print("");
  for (const line of checkLines(check, color)) print(line);
  print(paint("dim", `用时：编译 ${seconds(check.buildMs)} · 测试 ${seconds(check.testMs)}`));

  if (check.passed) {
    const next = nextChapter(chapters, progress);
    const tests = check.earlier.length > 0 ? `${check.focused.length} 项聚焦测试和更早章节的测试` : `${check.focused.length} 项聚焦测试`;
    print("");
    print(paint("green", `✓ 第 ${chapter.id} 章已点亮：编译干净，${tests}全部通过。`));
    print("别忘了本章的故障实验和验收问题（见练习目录的 LEARNING.md）。");
    if (next) {
      // 已经做到了最后（点亮的最高一章在它之后）：它是回头补的一章，与 status 的说法一致
      const label = isBehind(chapters, progress, next) ? "回头补" : "下一章";
      print(`${label}：第 ${next.id} 章 · ${next.title} → ${paint("cyan", `npm run practice -- ${next.id}`)}`);
      if (isNextInLine(chapters, chapter, next)) {
        print(`  想接着你自己的代码做：${paint("cyan", `npm run practice -- ${next.id} --continue`)}（何时接续、何时从头开始见 LEARNING.md）`);
      }
    }
    else print("已开放的章节全部点亮。npm run status 查看整张地图。");
    return;
  }

  print("");
  if (check.deviation) {
    print(paint("bold", "第一处偏差："));
    for (const line of deviationLines(check.deviation, { kitRoot: KIT_ROOT, dir }, color)) print(`  ${line}`);
  }
  const failing = currentLab(check.labs);
  if (failing) {
    print("");
    print(hintLine(chapter, failing.lab, hintsShown(session.progress, chapter.id, failing.lab.id), color));
  }
  if (earlierPass) {
    print("");
    print(
      paint("yellow", `第 ${chapter.id} 章仍然保持点亮：那是 ${earlierPass.verifiedAt.slice(0, 10)} 那次通过记下的，这次没通过不会抹掉它；修好后再 verify 一次即可。`),
    );
  }
  throw new CourseError("VERIFY_FAILED", `第 ${chapter.id} 章还没有通过${failing ? `：从实践 ${failing.lab.id} 开始` : ""}（第一处偏差见上）`);
});

/** 下一章紧接着这一章：这时才能用 --continue 接着这个目录做。 */
function isNextInLine(chapters: readonly { id: string }[], chapter: { id: string }, next: { id: string }): boolean {
  const index = chapters.findIndex((other) => other.id === chapter.id);
  return chapters[index + 1]?.id === next.id;
}

function toJson(check: PracticeCheck, target: string, lit: boolean, basis: "own" | "course") {
  return {
    chapter: check.chapter.id,
    dir: check.dir,
    target,
    passed: check.passed,
    /** 进度里本章是否点亮：这次通过，或者之前通过过（没通过不会抹掉之前的点亮）。 */
    lit,
    /** 练习目录是接着学习者自己的代码建的（own），还是从课程起点开始的（course）。 */
    basis,
    build: { ok: check.build.ok, errors: check.build.errors, ms: Math.round(check.buildMs) },
    labs: check.labs.map((result) => ({
      id: result.lab.id,
      ok: result.ok,
      runs: result.runs.map((run) => ({
        pattern: run.run.pattern ?? null,
        expect: run.run.expect,
        selected: run.tests.length,
        passed: run.passed,
      })),
    })),
    earlier: check.earlier.map((result) => ({ chapter: result.chapter.id, ok: result.ok, passed: result.passed, total: result.tests.length })),
    tests: check.focused.map(({ name, ok, message }) => ({ name, ok, ...(message === undefined ? {} : { message }) })),
    missing: check.missing,
    modified: check.modified,
    deviation: check.deviation ? jsonDeviation(check.deviation) : null,
  };
}

function jsonDeviation(deviation: NonNullable<PracticeCheck["deviation"]>) {
  switch (deviation.kind) {
    case "test":
      return {
        kind: deviation.kind,
        chapter: deviation.chapter.id,
        lab: deviation.lab?.id ?? null,
        test: withoutStack(deviation.test),
        location: deviation.location ?? null,
      };
    case "load":
      return { kind: deviation.kind, chapter: deviation.chapter.id, lab: null, test: withoutStack(deviation.test), location: null };
    case "count":
      return { kind: deviation.kind, lab: deviation.lab.id, selected: deviation.result.tests.length, passed: deviation.result.passed, expect: deviation.result.run.expect };
    default:
      return deviation;
  }
}

/** 原始堆栈很长，而且 location 已经给出了要看的那一帧。 */
function withoutStack({ stack: _stack, ...test }: TestOutcome): Omit<TestOutcome, "stack"> {
  return test;
}

/** 断言值里 JSON 表达不了的：正则写成 /模式/标志，bigint 写成文字，Map / Set 写成数组。 */
function jsonValue(_key: string, value: unknown): unknown {
  if (value instanceof RegExp || typeof value === "bigint") return String(value);
  if (value instanceof Map) return [...value];
  if (value instanceof Set) return [...value];
  return value;
}
