import { existsSync } from "node:fs";
import path from "node:path";

import { loadChapters } from "./engine/chapters.js";
import { paint, print, runCommandLine, userCwd } from "./engine/cli.js";
import { openProgress } from "./engine/course.js";
import { usageError } from "./engine/errors.js";
import { ensureHistory } from "./engine/history.js";
import { KIT_ROOT, LESSONS_DIR } from "./engine/paths.js";
import { hintCount } from "./engine/progress.js";
import { pad } from "./engine/screen.js";
import { choosePracticeDir } from "./engine/practice.js";
import { courseMap, type MapEntry } from "./engine/course-map.js";

const HELP = `用法：npm start，或 npm run status [-- --json]

课程地图：按部分列出全部章节，verify 通过的章节被点亮（●），
还标出下一章、它的练习目录，以及你用了多少级提示。
点亮的每一章注明是“接着自己的代码”（practice --continue，自第几章起）还是“从课程起点开始”做完的。
地图只读进度文件，从不修改它（文件损坏时只提醒一句、按空白进度显示，文件原样保留）；
只有 npm run verify 看到全部通过时才会点亮一章。
有练习目录、还没 verify 通过的章节标为“进行中”（◐）。
下一章：点亮的最高一章之后第一章没点亮的；后面都亮了就“回头补”：先找进行中的，再找第一章没点亮的。

进度文件默认在 \${XDG_STATE_HOME:-~/.local/state}/pi-course/progress.json
（Windows：%LOCALAPPDATA%\\pi-course\\progress.json），可用环境变量 PI_COURSE_PROGRESS 改到别处。

  --json   以 JSON 输出地图
  --help   显示本说明`;

await runCommandLine(HELP, { json: { type: "boolean" } }, async ({ values, positionals }) => {
  if (positionals.length > 0) throw usageError("TOO_MANY_ARGS", `status 不接受参数，收到了：${positionals.join(" ")}（看单章用 npm run checkpoint -- <章节>）`);
  const chapters = loadChapters(LESSONS_DIR);
  const history = await ensureHistory(KIT_ROOT, chapters);
  const { file, progress } = openProgress();
  const targets = Object.fromEntries(Object.entries(history.chapters).map(([id, commits]) => [id, commits.target]));
  const map = courseMap(chapters, progress, targets);
  const next = map.next;
  const nextDir = next ? choosePracticeDir(KIT_ROOT, next, progress, undefined, userCwd()).dir : undefined;
  const totalHints = Object.keys(progress.hints).reduce((sum, id) => sum + hintCount(progress, id), 0);

  if (values.json) {
    print(
      JSON.stringify(
        {
          progressFile: file,
          lit: map.lit,
          open: map.open,
          planned: map.planned,
          hints: totalHints,
          next: next ? { id: next.id, slug: next.slug, dir: nextDir, dirExists: nextDir !== undefined && existsSync(nextDir) } : null,
          parts: map.parts.map((part) => ({
            title: part.title,
            chapters: part.entries.map(({ chapter: _chapter, ...entry }) => entry),
          })),
        },
        null,
        2,
      ),
    );
    return;
  }

  print(paint("bold", "build-your-own-pi · 学习地图") + `    已点亮 ${map.lit}/${map.open} 章（规划 ${map.planned} 章）`);
  for (const part of map.parts) {
    print("");
    const open = part.entries.some((entry) => entry.state !== "planned");
    print(open ? paint("bold", part.title) : paint("dim", part.title));
    for (const entry of part.entries) print(`  ${entryLine(entry, entry.id === next?.id ? (map.behind ? "← 回头补" : "← 下一章") : undefined)}`);
  }
  print("");
  if (next && nextDir) {
    print(paint("bold", `${map.behind ? "回头补" : "下一章"}：第 ${next.id} 章 · ${next.title}`) + `（${next.mode}，约 ${next.minutes} 分钟）`);
    print(`  ${next.summary}`);
    if (existsSync(nextDir)) {
      print(`  练习目录：${nextDir}`);
      print(`  做完后运行：${paint("cyan", `npm run verify -- ${next.id}`)}    卡住时：${paint("cyan", `npm run hint -- ${next.id}`)}`);
      print(`  边写边看：${paint("cyan", `npm run watch -- ${next.id}`)}`);
    } else {
      print(`  还没有练习目录：${paint("cyan", `npm run practice -- ${next.id}`)}（会创建 ${path.relative(userCwd(), nextDir) || nextDir}）`);
      const previous = chapters[chapters.findIndex((chapter) => chapter.id === next.id) - 1];
      if (previous && progress.verified[previous.id]) {
        print(`  或者接着你第 ${previous.id} 章自己的代码做：${paint("cyan", `npm run practice -- ${next.id} --continue`)}`);
      }
    }
  } else if (map.open > 0) {
    print(paint("green", `已开放的 ${map.open} 章全部点亮。后面的章节还在写，敬请期待。`));
  }
  print(paint("dim", `提示：共展开 ${totalHints} 级 · 进度文件：${file}`));
});

function entryLine(entry: MapEntry, nextMark: string | undefined): string {
  const marker = nextMark ? paint("cyan", nextMark) + "  " : "";
  const hints = entry.hints > 0 ? paint("dim", `提示 ${entry.hints} 级`) : "";
  switch (entry.state) {
    case "lit":
      return `${paint("green", "●")} ${entry.id} ${pad(entry.title, 46)}${paint("green", `已点亮 ${day(entry.verifiedAt)}`)} ${basisLabel(entry)}  ${hints}`.trimEnd();
    case "lit-old":
      return `${paint("green", "●")} ${entry.id} ${pad(entry.title, 46)}${paint("yellow", "已点亮（课程已更新，可重新 verify）")} ${basisLabel(entry)} ${hints}`.trimEnd();
    case "started":
      return `${paint("yellow", "◐")} ${entry.id} ${pad(entry.title, 46)}${paint("yellow", "进行中")}  ${marker}${hints}`.trimEnd();
    case "open":
      return `○ ${entry.id} ${pad(entry.title, 46)}${marker}${hints}`.trimEnd();
    case "planned":
      return paint("dim", `· ${entry.id} ${pad(entry.title, 46)}未开放`);
  }
}

/** 点亮的章节做在谁的代码上：接续目录（practice --continue）接着自己的代码，其余从课程起点开始。 */
function basisLabel(entry: MapEntry): string {
  if (entry.basis === "own") {
    const notes = [
      ...(entry.ownSince && entry.ownSince !== entry.id ? [`自 ${entry.ownSince} 章起`] : []),
      ...(entry.courseFiles ? [`${entry.courseFiles.length} 个文件用了课程的版本`] : []),
    ];
    return paint("cyan", `· 接着自己的代码${notes.length > 0 ? `（${notes.join("，")}）` : ""}`);
  }
  return paint("dim", "· 从课程起点开始");
}

/** 2026-11-30T10:45:04Z → 11-30（本地时间）。 */
function day(iso: string | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return `${String(date.getMonth() + 1).padStart(2, "0")}-${String(date.getDate()).padStart(2, "0")}`;
}
