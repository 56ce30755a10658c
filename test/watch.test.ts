import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { stripVTControlCharacters } from "node:util";

import stringWidth from "string-width";

import { findChapter, loadChapters } from "../scripts/engine/chapters.ts";
import { LESSONS_DIR } from "../scripts/engine/paths.ts";
import { watchFooter } from "../scripts/engine/screen.ts";
import { isEditorNoise } from "../scripts/engine/watch/file-events.ts";
import { hasPty, KIT, kitScriptArgs, runCommandInTerminal, runInTerminal, runScript, tempDir } from "./helpers.ts";
import { applyFault, card, practice, show, solveTo } from "./learner.ts";

const work = tempDir("watch");
after(() => work.remove());

const SCREEN_END = /监视中（(文件事件|轮询)）：保存文件即重跑，Ctrl-C 退出\n/;

/** 像学习者那样在终端外启动 watch，收集输出，按“第几屏”等待。 */
class WatchProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = "";
  stderr = "";
  readonly closed: Promise<number | null>;

  constructor(args: string[], progress: string) {
    this.child = spawn(process.execPath, [...kitScriptArgs("watch"), ...args], {
      cwd: KIT,
      env: { ...process.env, NO_COLOR: "1", INIT_CWD: KIT, PI_COURSE_PROGRESS: progress },
    });
    this.child.stdout.on("data", (chunk: Buffer) => (this.stdout += chunk.toString("utf8")));
    this.child.stderr.on("data", (chunk: Buffer) => (this.stderr += chunk.toString("utf8")));
    this.closed = new Promise((resolve) => this.child.on("close", resolve));
  }

  screens(): string[] {
    return this.stdout.split("─".repeat(60)).filter((screen) => SCREEN_END.test(screen));
  }

  /** 等到第 n 屏画完，返回它。 */
  async screen(n: number, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const screens = this.screens();
      if (screens.length >= n) return screens[n - 1]!;
      if (this.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`等不到第 ${n} 屏。stdout：\n${this.stdout}\nstderr：\n${this.stderr}`);
  }

  /** 等到 from（stdout 里的位置）之后出现一屏先行画出的结论（以“其余测试还在运行”结束），返回它。 */
  async pendingScreen(from: number, timeoutMs = 20_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const pending = this.stdout.slice(from).split("─".repeat(60)).find((screen) => screen.includes("其余测试还在运行，跑完后这一屏会更新\n"));
      if (pending !== undefined) return pending;
      if (this.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`等不到先行的一屏。stdout：\n${this.stdout}\nstderr：\n${this.stderr}`);
  }

  async interrupt(): Promise<number | null> {
    this.child.kill("SIGINT");
    return this.closed;
  }
}

describe("watch：保存即重跑，一屏看清当前实践", () => {
  const progress = path.join(work.dir, "progress.json");
  const dir = path.join(work.dir, "pi-practice-03");

  before(async () => {
    await practice("03", dir, progress);
    await solveTo("03", dir, "3.1");
  });

  for (const mode of ["events", "poll"] as const) {
    test(mode === "events" ? "文件事件：第一屏 → 保存 → 下一屏 → Ctrl-C 干净退出" : "--poll：轮询也能发现保存", { timeout: 60_000 }, async () => {
      await solveTo("03", dir, "3.1");
      const args = mode === "events" ? ["03", dir] : ["03", dir, "--poll", "--interval", "100"];
      const watch = new WatchProcess(args, progress);
      try {
        const first = await watch.screen(1);
        assert.match(first, /第 03 章 · 保存一次完整的工具往返/);
        assert.match(first, /实践 3\.1\s+✓ 1\/1 · 2\/2/);
        assert.match(first, /当前实践：3\.2 · 让 error 自己结束消息流/);
        assert.match(first, /先预测（课文「实践 3\.2」一节）：改完以后/);
        assert.match(first, /第一处偏差：\n\s+✗ 「error 终态自行结束流/);
        assert.match(first, /提示：实践 3\.2 还有 4 级可看 → npm run hint -- 03 3\.2/);
        assert.match(first, mode === "events" ? /监视中（文件事件）/ : /监视中（轮询）/);

        const { target } = (await card("03")).commits;
        const file = "packages/pi-course/src/event-stream.ts";
        writeFileSync(path.join(dir, file), await show(target, file));
        const second = await watch.screen(2);
        assert.match(second, /实践 3\.2\s+✓ 全部 4\/4/);
        assert.match(second, /✓ 聚焦测试全部通过（4\/4）/);
        assert.match(second, /npm run verify -- 03/);
        assert.match(second, /触发：packages\/pi-course\/src\/event-stream\.ts/);
        assert.match(second, /第 2 次运行/);
      } finally {
        const code = await watch.interrupt();
        assert.equal(code, 0, watch.stderr);
        assert.match(watch.stdout, /已停止监视。\n$/);
        assert.equal(watch.stderr, "");
      }
    });
  }

  test("编译输出（dist/）的变化不会触发重跑", { timeout: 60_000 }, async () => {
    const watch = new WatchProcess(["03", dir], progress);
    try {
      await watch.screen(1);
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // 第一次编译写 dist/ 的事件都已过去
      assert.equal(watch.screens().length, 1);
    } finally {
      assert.equal(await watch.interrupt(), 0);
    }
  });
});

describe("watch：编辑器的临时文件、一串保存、旧的编译输出", () => {
  const progress = path.join(work.dir, "noise-progress.json");
  const dir = path.join(work.dir, "pi-practice-03-noise");
  const src = path.join(dir, "packages/pi-course/src");

  before(async () => {
    await practice("03", dir, progress);
    await solveTo("03", dir, "target");
  });

  test("临时文件不触发运行也不出现在“触发”里；一串保存只运行一次；保存到结果有时限；删掉或编译失败的文件不由旧输出顶替", { timeout: 90_000 }, async () => {
    const { target } = (await card("03")).commits;
    const types = await show(target, "packages/pi-course/src/types.ts");
    const stream = await show(target, "packages/pi-course/src/event-stream.ts");
    const watch = new WatchProcess(["03", dir], progress);
    const settle = () => new Promise((resolve) => setTimeout(resolve, 1_500));
    try {
      assert.match(await watch.screen(1), /✓ 聚焦测试全部通过（4\/4）/);

      // vim 的交换文件、备份与探测文件，sed -i 的临时文件，JetBrains 的安全写入，emacs 的锁与自动保存
      const noise = ["types.ts.swp", ".types.ts.swx", "types.ts~", "4913", "sedAb12Cd", "types.ts___jb_tmp___", "types.ts___jb_old___", ".#types.ts", "#types.ts#"];
      for (const name of noise) writeFileSync(path.join(src, name), "// 临时\n");
      for (const name of noise) rmSync(path.join(src, name), { force: true });
      await settle();
      assert.equal(watch.screens().length, 1, "临时文件触发了运行");

      // 一串保存（像“全部保存”，中间夹着编辑器的临时文件）：只运行一次，触发里只有真正的文件
      writeFileSync(path.join(src, "types.ts___jb_tmp___"), types);
      renameSync(path.join(src, "types.ts___jb_tmp___"), path.join(src, "types.ts"));
      writeFileSync(path.join(src, "sedXy34Zw"), `${stream}\n// 改过\n`);
      renameSync(path.join(src, "sedXy34Zw"), path.join(src, "event-stream.ts"));
      const second = await watch.screen(2);
      assert.match(second, /触发：packages\/pi-course\/src\/event-stream\.ts、packages\/pi-course\/src\/types\.ts\n/);
      await settle();
      assert.equal(watch.screens().length, 2, "一串保存运行了不止一次");

      // 保存到结果：真实的数字在 npm run bench 里；这里的上限宽到繁忙的 CI 机器也够
      const saved = performance.now();
      writeFileSync(path.join(src, "types.ts"), types.replace('return texts.join("\\n");', 'return texts.join(" ");'));
      const third = await watch.screen(3);
      const latency = performance.now() - saved;
      assert.ok(latency < 5_000, `保存到结果用了 ${Math.round(latency)} ms`);
      assert.match(third, /实践 3\.1\s+✗/);
      assert.match(third, /期望：'先读取\\n再回答'/);

      // 编译失败的文件：测的是它这一次的输出（tsc 出错也照样写出），不是上一次编译通过的旧版本
      writeFileSync(path.join(src, "types.ts"), types.replace('return texts.join("\\n");', "return texts.length;"));
      const fourth = await watch.screen(4);
      assert.match(fourth, /编译\s+✗ 1 条 tsc 错误/);
      assert.match(fourth, /TS2322/);
      assert.match(fourth, /实践 3\.1\s+✗/);

      // 删掉源文件：dist/ 里它的旧 .js 不能让测试照样通过
      writeFileSync(path.join(src, "types.ts"), types);
      assert.match(await watch.screen(5), /✓ 聚焦测试全部通过（4\/4）/);
      rmSync(path.join(src, "types.ts"));
      const sixth = await watch.screen(6);
      assert.match(sixth, /编译\s+✗/);
      assert.doesNotMatch(sixth, /实践 3\.\d\s+✓/);
      assert.doesNotMatch(sixth, /聚焦测试全部通过/);
      writeFileSync(path.join(src, "types.ts"), types);
      assert.match(await watch.screen(7), /✓ 聚焦测试全部通过（4\/4）/);
    } finally {
      assert.equal(await watch.interrupt(), 0, watch.stderr);
    }
  });
});

test("有测试失败时不等整个文件跑完：第一处偏差一确定就先画一屏，其余测试跑完再画完整的一屏（第 08 章的故障实验）", { timeout: 90_000 }, async () => {
  const progress = path.join(work.dir, "progress-08.json");
  const dir = path.join(work.dir, "pi-practice-08");
  await practice("08", dir, progress);
  await solveTo("08", dir, "target");
  const watch = new WatchProcess(["08", dir], progress);
  try {
    // 计数取自 chapter.json：第 08 章加了测试，这里不必跟着改
    const { focusedTest } = findChapter(loadChapters(LESSONS_DIR), "08");
    assert.ok((await watch.screen(1)).includes(`✓ 聚焦测试全部通过（${focusedTest.count}/${focusedTest.count}）`));
    const from = watch.stdout.length;
    const saved = performance.now();
    await applyFault("08", dir); // 弄坏第 2 项测试（8.1）；后面还有几十项，其中几项要等计时器
    const pending = await watch.pendingScreen(from);
    const latency = performance.now() - saved;
    const complete = await watch.screen(2);

    // 先行的一屏已经说清楚了：当前实践、第一处偏差和它的断言信息
    for (const screen of [pending, complete]) {
      assert.match(screen, /当前实践：8\.1/);
      assert.match(screen, /第一处偏差：[\s\S]*指向工作区外的符号链接被拒绝/);
      assert.match(screen, /指向工作区外的符号链接必须被拒绝/);
    }
    assert.ok(watch.stdout.indexOf(pending) < watch.stdout.indexOf(complete), "先行的一屏应当画在完整的一屏之前");
    assert.doesNotMatch(pending, /监视中/, "先行的一屏不是这次运行的最后一屏");
    // 真实的数字在 npm run bench 里；这里的上限宽到繁忙的 CI 机器也够
    assert.ok(latency < 5_000, `保存到第一处偏差用了 ${Math.round(latency)} ms`);
  } finally {
    assert.equal(await watch.interrupt(), 0, watch.stderr);
  }
});

test("编辑器临时文件的名字", () => {
  for (const name of ["a.ts.swp", "a.ts.swo", ".a.ts.swx", "a.ts~", "4913", "5036", "sedAb12Cd", "a.ts___jb_tmp___", "a.ts___jb_old___", ".#a.ts", "#a.ts#", "x.tmp"]) {
    assert.equal(isEditorNoise(`src/${name}`), true, name);
  }
  for (const name of ["types.ts", "sed.ts", "sedimentary", "v4913.ts", "notes.md", "a.swp.ts"]) assert.equal(isEditorNoise(`src/${name}`), false, name);
});

test("页脚：在终端里列出按键，管道里只说保存即重跑、Ctrl-C 退出", () => {
  assert.equal(watchFooter("events", true), "监视中（文件事件）：保存文件即重跑 · 按键：r 重跑、h 下一级提示、x 还原文件、q 退出");
  assert.equal(watchFooter("poll", false), "监视中（轮询）：保存文件即重跑，Ctrl-C 退出");
});

describe("watch：在终端里按键", { skip: hasPty ? false : "需要 util-linux 的 script 命令来提供伪终端" }, () => {
  const progress = path.join(work.dir, "pty-progress.json");
  const dir = path.join(work.dir, "pi-practice-03-pty");

  before(async () => {
    await practice("03", dir, progress);
    await solveTo("03", dir, "target");
  });

  test("80×24 的真终端里：一屏不超过 24 行、每行不超过 80 列，有标题、进度行和编译行", { timeout: 60_000 }, async () => {
    const command = [process.execPath, ...kitScriptArgs("watch"), "03", dir].map((part) => `'${part}'`).join(" ");
    const terminal = runCommandInTerminal(["sh", "-c", `stty cols 80 rows 24 && exec ${command}`], KIT, { PI_COURSE_PROGRESS: progress });
    try {
      await terminal.waitFor(/按键：r 重跑/);
      const screen = stripVTControlCharacters(terminal.output().split("\u001b[2J\u001b[3J\u001b[H").at(-1) ?? "").replace(/\r/g, "").trimEnd();
      const lines = screen.split("\n");
      assert.ok(lines.length <= 24, `${lines.length} 行：\n${screen}`);
      assert.ok(lines.every((line) => stringWidth(line) <= 80), screen);
      for (const wanted of [/第 03 章 .*· watch/, /进度：本章实践 2\/2 通过/, /编译\s+✓/]) assert.match(screen, wanted);
      terminal.child.stdin.write("q");
      assert.equal(await terminal.closed, 0);
    } finally {
      terminal.child.kill();
    }
  });

  test("全部通过时按 h：一行说不需要提示；q 退出", { timeout: 60_000 }, async () => {
    const { child, closed, output, waitFor } = runInTerminal("watch", ["03", dir], { PI_COURSE_PROGRESS: progress });
    try {
      await waitFor(/保存文件即重跑 · 按键：r 重跑、h 下一级提示、x 还原文件、q 退出/);
      assert.match(output(), /✓ 聚焦测试全部通过（4\/4）/);
      child.stdin.write("h");
      await waitFor(/聚焦测试全部通过，不需要提示。/);
      child.stdin.write("q");
      assert.equal(await closed, 0);
      assert.match(output(), /已停止监视。/);
    } finally {
      child.kill();
    }
  });

  test("按 x 还原一个教学文件：先选文件、再确认（与 npm run reset 问同一句），其他键取消；你的版本先进备份", { timeout: 90_000 }, async () => {
    const terminal = runInTerminal("watch", ["03", dir], { PI_COURSE_PROGRESS: progress });
    const { child, closed, output, clear } = terminal;
    const waitFor = (pattern: RegExp) => terminal.waitFor(pattern, 30_000);
    const file = path.join(dir, "packages/pi-course/src/event-stream.ts");
    const solved = readFileSync(file, "utf8");
    try {
      await waitFor(/✓ 聚焦测试全部通过（4\/4）/);
      child.stdin.write("x");
      await waitFor(/还原哪个文件到本章起点？按数字选择，其他键取消：/);
      assert.match(output(), /2  packages\/pi-course\/src\/event-stream\.ts/);
      child.stdin.write("2");
      await waitFor(/把 packages\/pi-course\/src\/event-stream\.ts 还原到本章起点？你现在的版本会先移到练习目录的 \.pi-course\/backup\/ 里，不会丢。/);
      child.stdin.write("n");
      await waitFor(/没有还原，文件原样未动。/);
      assert.equal(readFileSync(file, "utf8"), solved);
      child.stdin.write("x");
      clear();
      await waitFor(/按数字选择/);
      child.stdin.write("2");
      await waitFor(/按 y 确认，其他键取消。/);
      child.stdin.write("y");
      await waitFor(/已把 packages\/pi-course\/src\/event-stream\.ts 还原到本章起点。/);
      await waitFor(/TS2305/); // 保存即重跑：还原之后回到本章的红灯
      assert.equal(readFileSync(file, "utf8"), await show((await card("03")).commits.parent, "packages/pi-course/src/event-stream.ts"));
      const [stamp] = readdirSync(path.join(dir, ".pi-course/backup"));
      assert.equal(readFileSync(path.join(dir, ".pi-course/backup", stamp!, "packages/pi-course/src/event-stream.ts"), "utf8"), solved);
      child.stdin.write("q");
      assert.equal(await closed, 0);
    } finally {
      child.kill();
    }
  });
});

describe("watch：错误的输入", () => {
  const progress = path.join(work.dir, "bad-progress.json");
  const watch = (...args: string[]) => runScript("watch", args, { env: { PI_COURSE_PROGRESS: progress } });

  test("不是练习目录、写出的目录不存在、--interval 不带 --poll、--interval 越界、未知章节：退出码 2，一行中文", async () => {
    const plain = path.join(work.dir, "plain");
    mkdirSync(plain);
    const cases: Array<[string[], RegExp]> = [
      [["03", plain], /不是练习目录/],
      [["03", plain, "--interval", "100"], /--interval 只和 --poll 一起使用/],
      [["03", plain, "--poll", "--interval", "10"], /--interval 应当是 50 到 60000 之间的毫秒数/],
      [["99"], /可选章节/],
      [["03", "--bogus"], /不认识的选项 --bogus/],
      [["03", path.join(work.dir, "nowhere")], /不存在：检查路径是否写对/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await watch(...args);
      assert.equal(code, 2, `参数 ${JSON.stringify(args)}：${stderr}`);
      assert.equal(stderr.trim().split("\n").length, 1);
      assert.match(stderr, message);
    }
  });

  test("--help 说明 --poll 用于 WSL 与网络盘", async () => {
    const { code, stdout } = await watch("--help");
    assert.equal(code, 0);
    assert.match(stdout, /用法：npm run watch -- <章节> \[目录\] \[--poll\]/);
    assert.match(stdout, /WSL/);
  });
});
