import { appendFileSync, existsSync } from "node:fs";
import path from "node:path";

import { watchLatency } from "./bench-watch.js";
import {
  benchWorkRoot,
  compileOnce,
  documentedLoop,
  focusedTestOnce,
  freshClone,
  median,
  runKitScript,
  solvedPractice,
  spawnChecked,
  nodeStartOnce,
  TARGETS,
  type Target,
  timed,
  typescript59Modules,
  useModules,
} from "./bench.js";
import { floorRow, row, type Row } from "./bench-rows.js";
import type { Chapter } from "./chapters.js";
import { ensureHistory } from "./history.js";
import { KIT_ROOT } from "./paths.js";

const TS59 = path.join(KIT_ROOT, "node_modules", "typescript-5.9", "bin", "tsc");

export interface BenchOptions {
  chapters: readonly Chapter[];
  /** 学习循环测哪一章（也是 verify 的第一章）。 */
  chapter: Chapter;
  /** 写出了 --chapter：watch 与 verify 也只测这一章。 */
  explicitChapter: boolean;
  runs: number;
  full: boolean;
  /** 进度说明（写到 stderr）。 */
  say: (text: string) => void;
}

/** 对照用的 TypeScript 5.9 装了没有（学习循环要拿它比）。 */
export function typescript59Installed(): boolean {
  return existsSync(TS59);
}

/**
 * 依次测量每一项性能目标，交回表格的各行。全部在一个临时目录里做（做完的练习目录、新克隆、进度文件），
 * 测完删掉；不碰学习者的进度。
 */
export async function measureTargets(options: BenchOptions): Promise<Row[]> {
  const { chapters, chapter, explicitChapter, runs, say } = options;
  const history = await ensureHistory(KIT_ROOT, chapters);
  const work = benchWorkRoot();
  const progress = path.join(work.dir, "progress.json");
  const env = { PI_COURSE_PROGRESS: progress };
  const rows: Row[] = [];
  // 做完的练习目录，每章每种用途一个（watch 会改动并还原文件，不与 verify 共用）
  const solved = async (of: Chapter, use = "done"): Promise<string> => {
    const solvedDir = path.join(work.dir, `${use}-${of.id}`);
    if (!existsSync(solvedDir)) await solvedPractice(KIT_ROOT, of, history, solvedDir);
    return solvedDir;
  };

  try {
    say(`准备：做完的第 ${chapter.id} 章练习目录（TS 7 与 TS 5.9 各一个），每项测 ${runs} 次…`);
    const dir = path.join(work.dir, "loop");
    const dir59 = path.join(work.dir, "loop-ts59");
    await solvedPractice(KIT_ROOT, chapter, history, dir);
    await solvedPractice(KIT_ROOT, chapter, history, dir59);
    useModules(dir59, typescript59Modules(KIT_ROOT, work.dir));
    await documentedLoop(dir, chapter); // 预热：让两边都读过一次磁盘缓存
    await documentedLoop(dir59, chapter);
    const ts7 = { total: [] as number[], build: [] as number[], test: [] as number[] };
    const ts59 = { total: [] as number[], build: [] as number[], test: [] as number[] };
    const tsc7: number[] = [];
    const tsc59: number[] = [];
    const testOnly: number[] = [];
    const testOwn: number[] = [];
    const nodeStart: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`学习循环 ${run}/${runs}`);
      const a = await documentedLoop(dir, chapter);
      const b = await documentedLoop(dir59, chapter);
      for (const [into, from] of [[ts7, a], [ts59, b]] as const) {
        into.total.push(from.totalMs);
        into.build.push(from.buildMs);
        into.test.push(from.testMs);
      }
      tsc7.push(await compileOnce(dir));
      tsc59.push(await compileOnce(dir, TS59));
      const once = await focusedTestOnce(dir, chapter);
      testOnly.push(once.wallMs);
      testOwn.push(once.ownMs);
      nodeStart.push(await nodeStartOnce());
    }
    rows.push(row("loop-ts7", `学习循环 · TS 7（第 ${chapter.id} 章，课文的命令）`, ts7.total));
    rows.push(row("loop-ts7-build", "  其中 npm run build -w @pi/course", ts7.build));
    rows.push(row("loop-ts7-tsc", "    其中 tsc 本身（直接运行原生编译器）", tsc7));
    rows.push(row("loop-ts7-test", "  其中 node --test 聚焦测试", ts7.test));
    rows.push(floorRow("loop-floor", "  下限：tsc + 测试自己的用时 + 启动一次 node", tsc7, testOwn, nodeStart));
    rows.push(row("loop-ts59", "学习循环 · TS 5.9（同一命令、同一测试）", ts59.total));
    rows.push(row("loop-ts59-build", "  其中 npm run build -w @pi/course", ts59.build));
    rows.push(row("loop-ts59-tsc", "    其中 tsc 本身", tsc59));
    rows.push(row("test-runner", "聚焦测试单独直接运行（verify 与 watch 的方式）", testOnly));
    rows.push(row("test-own", "  其中各项测试自己的用时（node:test 报告的之和）", testOwn));
    const ratios = ts59.total.map((value, index) => value / (ts7.total[index] ?? Number.NaN));
    rows.push({ id: "loop-ratio", label: "TS 5.9 ÷ TS 7（学习循环，只报告）", samples: ratios, value: median(ts59.total) / median(ts7.total), unit: "x" });

    if (options.full) {
      // 每个重建章的学习循环与它的下限（只用 TS 7）：看哪一章的循环离下限最远
      for (const other of chapters.filter((candidate) => candidate.mode === "重建" && candidate.id !== chapter.id)) {
        say(`学习循环（第 ${other.id} 章）…`);
        const otherDir = await solved(other);
        await documentedLoop(otherDir, other); // 预热
        const total: number[] = [];
        const tsc: number[] = [];
        const own: number[] = [];
        const start: number[] = [];
        for (let run = 1; run <= runs; run++) {
          total.push((await documentedLoop(otherDir, other)).totalMs);
          tsc.push(await compileOnce(otherDir));
          own.push((await focusedTestOnce(otherDir, other)).ownMs);
          start.push(await nodeStartOnce());
        }
        rows.push(row(`loop-${other.id}`, `学习循环（第 ${other.id} 章）`, total));
        rows.push(floorRow(`loop-${other.id}-floor`, "  下限", tsc, own, start));
      }
    }

    for (const watched of explicitChapter ? [chapter] : watchChapters(chapters, chapter)) {
      say(`watch 保存 → 结果（第 ${watched.id} 章）…`);
      const samples = await watchLatency(KIT_ROOT, watched, await solved(watched, "watch"), runs, env);
      rows.push(row(`watch-${watched.id}`, `watch 保存 → 偏差（第 ${watched.id} 章）`, samples.failing, TARGETS.watch));
      rows.push(row(`watch-${watched.id}-pass`, "  改回去 → 全部通过", samples.passing));
    }

    const last = chapters.filter((candidate) => candidate.mode === "重建").at(-1);
    const verified = explicitChapter || !last || last.id === chapter.id ? [chapter] : [chapter, last];
    for (const checked of verified) {
      const checkedDir = checked.id === chapter.id ? dir : await solved(checked);
      const samples: number[] = [];
      let failure = "";
      for (let run = 1; run <= runs; run++) {
        say(`verify（第 ${checked.id} 章）${run}/${runs}`);
        samples.push(
          await timed(() =>
            runKitScript(KIT_ROOT, "verify", [checked.id, checkedDir], env).catch((error: Error) => {
              failure = error.message; // 做完的目录没通过：多半是机器忙到章节测试超时；照实记下
            }),
          ),
        );
      }
      // ≤ 1.2 s 是对第 08 章定的，≤ 2.5 s 对最后一章；其余的章只报告
      const target = checked.id === "08" ? TARGETS.verify : checked.id === last?.id ? TARGETS.verifyLast : undefined;
      const verifyRow = row(checked.id === chapter.id ? "verify" : `verify-${checked.id}`, `verify（第 ${checked.id} 章，连同更早章节）`, samples, target);
      if (failure) {
        verifyRow.pass = false;
        verifyRow.note = `有一次没有通过：${failure.slice(0, 120)}`;
      }
      rows.push(verifyRow);
    }

    const practiceSamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`practice ${run}/${runs}`);
      const target = path.join(work.dir, `practice-${run}`);
      practiceSamples.push(await timed(() => runKitScript(KIT_ROOT, "practice", [chapter.id, target], env)));
    }
    rows.push(row("practice", `practice（历史已缓存，第 ${chapter.id} 章）`, practiceSamples, TARGETS.practice));

    const historySamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`首次构建课程历史 ${run}/${runs}（克隆不计时）`);
      const clone = await freshClone(KIT_ROOT, work.dir);
      historySamples.push(await timed(() => runKitScript(clone, "course", ["history"], env)));
    }
    rows.push(row("history", `首次构建课程历史（全部 ${chapters.length} 章）`, historySamples, TARGETS.history));

    const lintSamples: number[] = [];
    for (let run = 1; run <= runs; run++) {
      say(`course lint ${run}/${runs}`);
      lintSamples.push(await timed(() => runKitScript(KIT_ROOT, "course", ["lint"], env)));
    }
    rows.push(row("lint", `course lint（全部 ${chapters.length} 章的静态检查）`, lintSamples, TARGETS.lint));

    if (options.full) {
      // 在 HEAD 的一个新克隆里、用一个空的缓存目录（CI 不设）：第一次是冷的（什么也取不到，通过的结果照常记下）；
      // 第二次什么也没改；第三次只改了最后一章课文的一句话，看改一章之后要多久
      const clone = await freshClone(KIT_ROOT, work.dir);
      const cacheEnv = { ...env, CI: "", PI_COURSE_SELFCHECK_CACHE: "", PI_COURSE_SELFCHECK_CACHE_DIR: path.join(work.dir, "npm-test-cache") };
      const last = chapters.at(-1);
      const lessonEdit = () => {
        if (last) appendFileSync(path.join(clone, "lessons", last.dirName, "lesson.md"), "\n（这一句由 npm run bench 临时加上。）\n");
      };
      const steps: Array<[string, string, () => void, Target]> = [
        ["npm-test", "npm test（新克隆，缓存是空的）", () => {}, TARGETS.npmTest],
        ["npm-test-warm", "npm test 第二次（什么也没改）", () => {}, TARGETS.npmTestWarm],
        ["npm-test-lesson", `npm test（改了第 ${last?.id ?? "?"} 章课文的一句话）`, lessonEdit, TARGETS.npmTestWarm],
      ];
      for (const [id, label, prepare, target] of steps) {
        say(`${label}（只跑一次）…`);
        prepare();
        let ok = true;
        const ms = await timed(() =>
          spawnChecked("npm", ["test"], clone, cacheEnv).catch(() => {
            ok = false;
          }),
        );
        const full = row(id, label, [ms], target);
        if (!ok) {
          full.pass = false;
          full.note = "npm test 失败了";
        }
        rows.push(full);
      }
    } else {
      rows.push({ id: "npm-test", label: "npm test（全部，含每章自检）", samples: [], value: Number.NaN, unit: "ms", target: TARGETS.npmTest, note: "未测：加 --full" });
    }
  } finally {
    work.remove();
  }
  return rows;
}

/** watch 测哪几章：第 03 章、学习循环那一章、代码最多的第 12、13 章，以及第 15 章起的每一章。 */
function watchChapters(chapters: readonly Chapter[], chapter: Chapter): Chapter[] {
  const wanted = (id: string) => id === "03" || id === chapter.id || id === "12" || id === "13" || id >= "15";
  return chapters.filter((candidate) => candidate.mode === "重建" && wanted(candidate.id));
}
