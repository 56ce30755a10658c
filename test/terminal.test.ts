import assert from "node:assert/strict";
import { stripVTControlCharacters } from "node:util";
import { after, before, describe, test } from "node:test";

import stringWidth from "string-width";

import { loadChapters } from "../scripts/engine/chapters.ts";
import type { LabResult } from "../scripts/engine/labs.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { fitWatchScreen, hintLine, inlineMarkdown, labLines } from "../scripts/engine/screen.ts";
import { fitLine, terminalColumns } from "../scripts/engine/terminal.ts";
import { startProgress } from "../scripts/progress-line.mjs";
import { KIT, runScript, spawnProcess, tempDir, TSX } from "./helpers.ts";
import { assertFits, widest } from "./terminal-fit.ts";

const plain = (_style: unknown, text: string) => text;
const ansi = (style: unknown, text: string) => (style === "bold" ? `\u001b[1m${text}\u001b[22m` : `\u001b[36m${text}\u001b[39m`);

describe("终端输出适合终端的宽度", () => {
  test("折行只落在空格和中文字符之间：路径与标识符完整，中文两列，行首不放逗号句号", () => {
    const line = "教学文件：packages/pi-course/src/openai-compatible.ts、packages/pi-course/src/sse.ts，以及 toChatRequest() 和 modelFromEnv()。";
    for (const columns of [50, 60, 80]) {
      const rows = fitLine(line, columns);
      assert.ok(rows.every((row) => stringWidth(row) <= columns), rows.join("\n"));
      for (const run of ["packages/pi-course/src/openai-compatible.ts", "packages/pi-course/src/sse.ts", "toChatRequest()", "modelFromEnv()"]) {
        assert.ok(rows.some((row) => row.includes(run)), `${columns} 列：${run} 被折断\n${rows.join("\n")}`);
      }
      assert.ok(rows.slice(1).every((row) => !/^\s*[，。、；：）」]/.test(row)), rows.join("\n"));
      assert.equal(rows.join("").replace(/ /g, ""), line.replace(/ /g, ""), "折行只加换行与缩进，不丢字");
    }
  });

  test("颜色跨行时每行单独闭合、下一行重新打开；管道里（没有终端宽度）不折行", () => {
    const rows = fitLine(`\u001b[1m${"很长的一句中文".repeat(6)}\u001b[22m`, 30);
    assert.ok(rows.length > 1);
    for (const row of rows) assert.ok(row.trimStart().startsWith("\u001b[1m") && /\u001b\[(0|22)m$/.test(row), JSON.stringify(row));
    assert.equal(terminalColumns({ isTTY: false, columns: 80 }, {}), undefined);
    assert.equal(terminalColumns({ isTTY: true, columns: 100 }, {}), 100);
    assert.equal(terminalColumns({ isTTY: false }, { PI_COURSE_COLUMNS: "80" }), 80);
  });

  test("超过一秒的准备工作：终端里先写一行在做什么、做完擦掉；管道里什么也不写", () => {
    const written: string[] = [];
    const done = startProgress("正在构建课程历史", { isTTY: true, write: (text: string) => written.push(text) });
    assert.deepEqual(written, ["正在构建课程历史…"]);
    done();
    done();
    assert.deepEqual(written, ["正在构建课程历史…", "\r\u001b[K"]);
    const piped: string[] = [];
    startProgress("正在构建课程历史", { isTTY: false, write: (text: string) => piped.push(text) })();
    assert.deepEqual(piped, []);
  });

  test("行内代码：终端里上色，管道里去掉反引号", () => {
    assert.equal(inlineMarkdown("写出 `toChatRequest()` 与 `sseField`", plain), "写出 toChatRequest() 与 sseField");
    assert.equal(inlineMarkdown("写出 `x`", ansi), "写出 \u001b[36mx\u001b[39m");
  });

  for (const [command, args] of [
    ["checkpoint", ["05"]],
    ["checkpoint", ["12"]],
    ["status", []],
  ] as const) {
    test(`${command} ${args.join(" ")} 在 80 列和 120 列都不超宽、不折断标识符；管道里原样`, { timeout: 60_000 }, async () => {
      const piped = await runScript(command, args);
      assert.equal(piped.code, 0, piped.stderr);
      for (const columns of [80, 120]) {
        const { code, stdout, stderr } = await runScript(command, args, { env: { PI_COURSE_COLUMNS: String(columns), NO_COLOR: undefined, FORCE_COLOR: "1" } });
        assert.equal(code, 0, stderr);
        assertFits(stdout, piped.stdout, columns, `${command} ${columns} 列`);
        assert.ok(stdout.split("\n").length <= (columns === 120 ? 41 : 60), `${command} 在 ${columns} 列有 ${stdout.split("\n").length} 行`);
      }
    });
  }

  test("checkpoint：每一章的卡片在 120 列的终端里不超过 40 行", { timeout: 120_000 }, async () => {
    for (const chapter of loadChapters(LESSONS_DIR)) {
      const { code, stdout } = await runScript("checkpoint", [chapter.id], { env: { PI_COURSE_COLUMNS: "120" } });
      assert.equal(code, 0);
      assert.ok(stdout.trimEnd().split("\n").length <= 40, `第 ${chapter.id} 章 ${stdout.trimEnd().split("\n").length} 行`);
    }
  });
});

describe("practice 与 verify 的输出一屏放得下", () => {
  const work = tempDir("terminal");
  const dir = `${work.dir}/p05`;
  const env = { PI_COURSE_PROGRESS: `${work.dir}/progress.json` };
  let created = "";
  before(async () => {
    const result = await runScript("practice", ["05", dir], { env: { ...env, PI_COURSE_COLUMNS: "80" } });
    assert.equal(result.code, 0, result.stderr);
    created = result.stdout;
  });
  after(() => work.remove());

  test("practice：80 列里不超宽，红灯只列代表，最后两行是 cd 与第一条命令", () => {
    assert.ok(widest(created) <= 80);
    const lines = created.trimEnd().split("\n");
    assert.ok(lines.length <= 24, `${lines.length} 行`);
    assert.match(created, /另有 \d+ 项失败/);
    assert.ok(lines.slice(-3).some((line) => line.trim() === `cd ${dir}`), lines.slice(-3).join("\n"));
  });

  test("verify：第一处偏差在 80 列和 120 列都不超宽、不折断标识符", { timeout: 120_000 }, async () => {
    const piped = await runScript("verify", ["05", dir], { env });
    for (const columns of [80, 120]) {
      const { stdout } = await runScript("verify", ["05", dir], { env: { ...env, PI_COURSE_COLUMNS: String(columns), NO_COLOR: undefined, FORCE_COLOR: "1" } });
      assert.match(stdout, /第一处偏差/);
      assertFits(stdout, piped.stdout, columns, `verify ${columns} 列`);
    }
  });
});

describe("watch 的一屏", () => {
  const chapter = loadChapters(LESSONS_DIR).find((candidate) => candidate.id === "05");
  assert.ok(chapter);
  const labs: LabResult[] = chapter.labs.map((lab, index) => ({
    lab,
    ok: index === 0,
    runs: lab.runs.map((run) => ({ run, tests: [], passed: index === 0 ? run.expect.pass : 0, ok: index === 0 })),
  }));

  test("80×24：标题、编译行、当前实践和第一处偏差都在屏幕上，实践列表缩成一行", () => {
    const deviation = ["第一处偏差：", ...Array.from({ length: 30 }, (_, index) => `  期望与实际第 ${index} 行 packages/pi-course/src/sse.ts:${index}`)];
    const screen = fitWatchScreen(
      {
        top: ["第 05 章 · 接上真实模型  · watch", "练习目录：/tmp/p05", "", "编译      ✓ 1.20 s"],
        labs,
        body: ["", "当前实践：5.2 · SSE：把字节块切回事件", `  目标：${"把字节块切回事件，".repeat(12)}`, ...deviation],
        bottom: ["", "[12:00:00] 第 1 次运行", "监视中（文件事件）：保存文件即重跑，Ctrl-C 退出"],
      },
      plain,
      80,
      24,
    );
    assert.ok(screen.length <= 24, `${screen.length} 行`);
    assert.ok(screen.every((line) => stringWidth(line) <= 80));
    for (const wanted of ["· watch", "编译", "当前实践：5.2", "第一处偏差：", "期望与实际第 0 行", "监视中"]) {
      assert.ok(screen.some((line) => line.includes(wanted)), `缺少 ${wanted}\n${screen.join("\n")}`);
    }
    assert.ok(screen.some((line) => line.includes("✓5.1") && line.includes("✗5.2")));
  });

  test("屏幕够高时列出每个实践；计数长短不一时标题一栏对齐；提示行的按键写在同一对括号里", () => {
    const lines = labLines(labs, plain);
    const columnOf = (line: string, title: string) => stringWidth(line.slice(0, line.indexOf(title)));
    const columns = lines.map((line, index) => columnOf(line, labs[index]?.lab.title ?? ""));
    assert.equal(new Set(columns).size, 1, lines.join("\n"));
    const lab = labs[1]?.lab;
    assert.ok(lab);
    const hint = hintLine(chapter, lab, 2, plain, "h");
    assert.match(hint, /（第 3 级 · 伪代码；或按 h）$/);
    assert.doesNotMatch(hint, /）（/);
  });
});

test("checkpoint：课文里的行内代码不原样印出反引号；终端里像 status、verify 一样上色", { timeout: 30_000 }, async () => {
  const piped = await runScript("checkpoint", ["12"]);
  assert.equal(piped.code, 0, piped.stderr);
  assert.match(piped.stdout, /（\/name 参数 在本地展开）/);
  assert.doesNotMatch(piped.stdout, /`/);
  assert.doesNotMatch(piped.stdout, /\u001b\[/);
  const colored = await runScript("checkpoint", ["12"], { env: { NO_COLOR: undefined, FORCE_COLOR: "1" } });
  assert.match(colored.stdout, /^\u001b\[1m第 12 章/);
  assert.match(colored.stdout, /\u001b\[36m\/name 参数\u001b\[39m/);
  assert.match(colored.stdout, /\u001b\[36mnpm run practice -- 12\u001b\[39m/);
  assert.equal(stripVTControlCharacters(colored.stdout), piped.stdout);
});

describe("小处", () => {
  test("许多 git 命令共用一个中止信号（practice --continue 的样子）：不打出 MaxListenersExceededWarning", { timeout: 30_000 }, async () => {
    const script = `import { gitAt } from ${JSON.stringify(`${KIT}/scripts/engine/git.ts`)};
await Promise.all(Array.from({ length: 20 }, () => gitAt(${JSON.stringify(KIT)}).revparse(["HEAD"])));
console.log("ok");`;
    const { code, stdout, stderr } = await spawnProcess(process.execPath, ["--import", TSX, "--input-type=module", "-e", script], { cwd: KIT });
    assert.equal(code, 0, stderr);
    assert.equal(stdout.trim(), "ok");
    assert.doesNotMatch(stderr, /MaxListenersExceededWarning/);
  });

  test("bench --help 不引用仓库里没有的设计文档", async () => {
    const { code, stdout } = await runScript("bench", ["--help"]);
    assert.equal(code, 0);
    assert.doesNotMatch(stdout, /DESIGN/);
  });
});
