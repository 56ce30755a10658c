import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { constants, existsSync, readdirSync } from "node:fs";
import { chmod, link, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, symlink, truncate, unlink, writeFile } from "node:fs/promises";
import { getEventListeners } from "node:events";
import os from "node:os";
import path from "node:path";
import test from "node:test";

import { runAgentLoop } from "../src/agent-loop.js";
import { readFileWindow, writeFileAtomic } from "../src/file-io.js";
import {
  bashTool,
  codingTools,
  DEFAULT_LIMITS,
  editTool,
  readTool,
  writeTool,
  type CodingToolLimits,
} from "../src/coding-tools.js";
import { MutationQueue } from "../src/mutation-queue.js";
import { ScriptedModel, type ScriptedTurn } from "../src/scripted-model.js";
import { runCommand, type CommandResult } from "../src/shell.js";
import { executeToolCall, ToolRegistry, type AgentTool } from "../src/tools.js";
import { collectWindow, tailOfBytes } from "../src/truncate.js";
import { text, textOf, userMessage, type ToolCall, type ToolResultMessage } from "../src/types.js";
import { Workspace, WorkspaceError } from "../src/workspace.js";

// ── 临时工作区 ──────────────────────────────────────────────────

interface Sandbox {
  /** 工作区根目录（真实路径）。 */
  root: string;
  /** 与工作区并列的“外面”：符号链接越界时指向这里。 */
  outside: string;
  workspace: Workspace;
}

/** 每个测试一个新的临时目录，结束时连同“外面”一起删掉。 */
async function withSandbox(body: (sandbox: Sandbox) => Promise<void>): Promise<void> {
  const base = await mkdtemp(path.join(os.tmpdir(), "pi-course-08-"));
  try {
    await mkdir(path.join(base, "ws"));
    await mkdir(path.join(base, "outside"));
    const workspace = await Workspace.open(path.join(base, "ws"));
    await body({ root: workspace.root, outside: path.join(base, "outside"), workspace });
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

/** 走第 06 章的真实契约：参数检查、异常变成 isError 的结果。 */
function call(tool: AgentTool<any>, args: unknown, signal = new AbortController().signal): Promise<ToolResultMessage> {
  const registry = new ToolRegistry([tool]);
  return executeToolCall(registry, { type: "toolCall", id: "call_1", name: tool.name, arguments: args }, { signal, now: () => 0 });
}

/** 成功结果的文字；失败时把工具说的原因当作断言信息。 */
function okText(result: ToolResultMessage): string {
  assert.equal(result.isError, false, textOf(result));
  return textOf(result);
}

function errorText(result: ToolResultMessage): string {
  assert.equal(result.isError, true, `应当是错误结果，实际成功：${textOf(result)}`);
  return textOf(result);
}

/** promise 必须以指定 code 的 WorkspaceError 失败；message 说明为什么必须失败。 */
async function rejectsWith(promise: Promise<unknown>, code: string, message: string): Promise<void> {
  const check = (error: unknown) => {
    assert.ok(error instanceof WorkspaceError, `应当抛出 WorkspaceError，实际是 ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  };
  await assert.rejects(promise, check, message);
}

/** count 行文字，每行由 line(i) 给出（i 从 1 起），末尾带换行。 */
function linesOf(count: number, line: (i: number) => string = (i) => `line ${i}`): string {
  return Array.from({ length: count }, (_, index) => `${line(index + 1)}\n`).join("");
}

/** bash 的上限：测试只改关心的那一项。 */
function bashLimits(overrides: Partial<CodingToolLimits> = {}): CodingToolLimits {
  return { ...DEFAULT_LIMITS, bashTimeoutMs: 5_000, bashMaxOutputBytes: 4_096, ...overrides };
}

/** 本进程此刻打开着几个文件描述符（Linux 的 /proc/self/fd，macOS 的 /dev/fd）：忘了 close 的句柄会让它变多。 */
function openDescriptors(): number {
  return readdirSync(existsSync("/proc/self/fd") ? "/proc/self/fd" : "/dev/fd").length;
}

// ── 实践 8.1 ────────────────────────────────────────────────────

test("8.1 `..` 与绝对路径越出工作区就被拒绝，留在工作区里的 `..` 照常折叠", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside, workspace }) => {
    await writeFile(path.join(root, "a.txt"), "inside\n");
    await writeFile(path.join(root, "..notes"), "名字以两个点开头，但仍在工作区里\n");
    await writeFile(path.join(outside, "secret.txt"), "top secret\n");

    assert.equal(workspace.lexicalPath("sub/../a.txt"), path.join(root, "a.txt"));
    assert.equal(await workspace.resolveExisting("./sub/../a.txt"), path.join(root, "a.txt"));
    assert.equal(await workspace.resolveExisting("..notes"), path.join(root, "..notes"));
    assert.throws(() => workspace.lexicalPath("../outside/secret.txt"), /在工作区之外/);
    await rejectsWith(workspace.resolveExisting("../outside/secret.txt"), "OUTSIDE_WORKSPACE", "`..` 越界必须被拒绝");
    await rejectsWith(workspace.resolveExisting(path.join(outside, "secret.txt")), "OUTSIDE_WORKSPACE", "绝对路径越界必须被拒绝");
    await rejectsWith(workspace.resolveExisting("missing.txt"), "NOT_FOUND", "不存在的文件应当报 NOT_FOUND");
  });
});

test("8.1 指向工作区外的符号链接被拒绝；新文件检查最近的已存在父目录的真实位置", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside, workspace }) => {
    await writeFile(path.join(outside, "secret.txt"), "top secret\n");
    await writeFile(path.join(root, "a.txt"), "inside\n");
    await symlink(path.join(outside, "secret.txt"), path.join(root, "leak.txt"));
    await symlink(outside, path.join(root, "door"));
    await symlink(path.join(root, "a.txt"), path.join(root, "alias.txt"));

    await rejectsWith(workspace.resolveExisting("leak.txt"), "OUTSIDE_WORKSPACE", "指向工作区外的符号链接必须被拒绝");
    await rejectsWith(workspace.resolveWritable("door/new/file.txt"), "OUTSIDE_WORKSPACE", "父目录经符号链接通到外面，新文件也必须被拒绝");
    await rejectsWith(workspace.resolveWritable("leak.txt"), "OUTSIDE_WORKSPACE", "覆盖指向外面的链接同样越界");
    // 链接留在工作区里就没问题：交出的是它指向的真实文件。
    assert.equal(await workspace.resolveExisting("alias.txt"), path.join(root, "a.txt"));
    assert.equal(await workspace.resolveWritable("fresh/deep/file.txt"), path.join(root, "fresh", "deep", "file.txt"));
  });
});

test("8.1 read 按 offset/limit 取一段整行，没读完时告诉模型用哪个 offset 继续", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await writeFile(path.join(root, "notes.txt"), linesOf(5));
    const read = readTool(workspace);

    const middle = okText(await call(read, { path: "notes.txt", offset: 2, limit: 2 }));
    assert.equal(middle, "line 2\nline 3\n\n[已显示第 2-3 行（文件共 35 字节）。用 offset=4 继续读取。]");

    const rest = okText(await call(read, { path: "notes.txt", offset: 4 }));
    assert.equal(rest, "line 4\nline 5", "读到文件末尾时不附加续读说明");
  });
});

test("8.1 read 的字节上限按 UTF-8 计，只在行与行之间截断，续读说明也算在上限里", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    // 每行 "第N行：你好" 是 16 字节（第10行起 17 字节），续读说明 105 字节。上限 140 恰好放得下
    // 两行加说明（16 + 1 + 16 + 2 + 105 = 140），放不下三行（157）；不算说明的话能放下八行。
    await writeFile(path.join(root, "zh.txt"), linesOf(20, (i) => `第${i}行：你好`));
    const read = readTool(workspace, 140);

    const first = okText(await call(read, { path: "zh.txt" }));
    const [body = "", notice = ""] = first.split("\n\n");
    assert.deepEqual(body.split("\n"), ["第1行：你好", "第2行：你好"]);
    assert.ok(Buffer.byteLength(first, "utf8") <= 140, "正文加续读说明不能超过字节上限");
    assert.equal(notice, "[已显示第 1-2 行（文件共 351 字节，达到 140 字节上限）。用 offset=3 继续读取。]");

    await writeFile(path.join(root, "wide.txt"), `${"长".repeat(60)}\nshort\n`);
    const wide = okText(await call(read, { path: "wide.txt" }));
    assert.match(wide, /第 1 行超过 140 字节的单次读取上限，无法整行显示/);
    assert.ok(!wide.includes("长"), "放不下的一行整行略过，不交出半行");
  });
});

test("8.1 越界路径、不存在的文件和超出末尾的 offset 都变成说明原因的错误结果", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside, workspace }) => {
    await writeFile(path.join(outside, "secret.txt"), "top secret\n");
    await writeFile(path.join(root, "short.txt"), linesOf(3));
    const read = readTool(workspace);

    const escaped = errorText(await call(read, { path: "../outside/secret.txt" }));
    assert.match(escaped, /在工作区之外/);
    assert.ok(!escaped.includes("top secret"), "越界文件的内容一个字也不能出现");
    assert.match(errorText(await call(read, { path: "nope.txt" })), /文件 nope\.txt 不存在/);
    assert.match(errorText(await call(read, { path: "short.txt", offset: 9 })), /offset=9 超出了文件末尾：文件只有 3 行/);
  });
});

test("8.1 read 只打开普通文件：FIFO 立即被拒绝，检查之后被换成符号链接的文件不跟随", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside, workspace }) => {
    // 没有写入方的 FIFO：普通的 open 会在这里一直等下去。
    const fifo = path.join(root, "pipe");
    assert.equal(spawnSync("mkfifo", [fifo]).status, 0, "需要 mkfifo 命令来造一个 FIFO");
    // 保险：300 毫秒后以写方打开一次，卡在 open 里的实现会读到空内容，测试照样失败，而不是整个进程挂住。
    const unblock = setTimeout(() => void open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then((handle) => handle.close(), () => {}), 300);
    const result = await call(readTool(workspace), { path: "pipe" });
    clearTimeout(unblock);
    assert.match(errorText(result), /pipe 不是普通文件/);

    // 检查时还是普通文件，打开前被换成指向外面的链接。
    await writeFile(path.join(outside, "secret.txt"), "top secret\n");
    await writeFile(path.join(root, "a.txt"), "inside\n");
    const checked = await workspace.resolveExisting("a.txt");
    await unlink(checked);
    await symlink(path.join(outside, "secret.txt"), checked);
    await assert.rejects(readFileWindow(checked, { maxBytes: 1_024 }, "a.txt"), /a\.txt 在检查之后被换成了别的东西/);
  });
});

/**
 * 开头 5 行文字（35 字节），再用 truncate 把文件撑到 2 GiB：多出来的是没有换行的 0 字节，构成第 6 行。
 * 稀疏文件不占磁盘。2 GiB 也超过了 Node 的 readFile 一次能读的上限：先整个读进来的实现在这里直接失败。
 */
async function hugeSparseFile(root: string, name: string): Promise<void> {
  const file = path.join(root, name);
  await writeFile(file, linesOf(5));
  await truncate(file, 2 ** 31);
}

test("8.1 read 一块一块地读、窗口满了就停：2 GiB 的文件也立即交出开头几行，超长的一行不攒进内存", { timeout: 5_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await hugeSparseFile(root, "huge.bin");
    const read = readTool(workspace);
    // 保险：把整行攒进内存的实现 1.5 秒后被取消，测试照样失败，而不是吃掉几 GB 内存。
    const guard = AbortSignal.timeout(1_500);
    const rssBefore = process.memoryUsage().rss;
    const started = Date.now();

    const head = okText(await call(read, { path: "huge.bin", limit: 3 }, guard));
    assert.equal(head, "line 1\nline 2\nline 3\n\n[已显示第 1-3 行（文件共 2147483648 字节）。用 offset=4 继续读取。]");
    // 第 6 行有 2 GiB 减 35 字节长：攒到超出上限就知道它放不下，不必读完它。
    const wide = okText(await call(read, { path: "huge.bin", offset: 6 }, guard));
    assert.equal(wide, "\n\n[第 6 行超过 32768 字节的单次读取上限，无法整行显示；可以用 bash 截取这一行的一部分。]");

    const elapsed = Date.now() - started;
    const grownMb = (process.memoryUsage().rss - rssBefore) / 2 ** 20;
    assert.ok(elapsed < 2_000, `窗口满了就该停下，两次读取却用了 ${elapsed} 毫秒`);
    assert.ok(grownMb < 64, `内存只该跟窗口和一块的大小有关，实际涨了 ${grownMb.toFixed(0)} MB`);
  });
});

test("8.1 offset 可以指向大文件深处：之前的行只数换行、不留下，读到的仍是准确的那几行", { timeout: 10_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    // 30 万行、每行 64 字节的填充，一共 19.2 MB（比整个读进内存的旧做法的 16 MB 上限还大），后面跟两行正文，
    // 最后一行没有换行。填充用 Buffer.alloc 的重复图样一次生成，不必拼 30 万个字符串。
    const filler = Buffer.alloc(300_000 * 64, `${".".repeat(63)}\n`);
    await writeFile(path.join(root, "deep.txt"), Buffer.concat([filler, Buffer.from("目标行\n最后一行", "utf8")]));
    const read = readTool(workspace);

    assert.equal(
      okText(await call(read, { path: "deep.txt", offset: 300_001, limit: 1 })),
      "目标行\n\n[已显示第 300001-300001 行（文件共 19200022 字节）。用 offset=300002 继续读取。]",
    );
    assert.equal(okText(await call(read, { path: "deep.txt", offset: 300_002 })), "最后一行");
    assert.match(errorText(await call(read, { path: "deep.txt", offset: 300_003 })), /offset=300003 超出了文件末尾：文件只有 300002 行/);
  });
});

/** 把几段字节当作文件的一块块交出，并记下被要走了几块。 */
function countedChunks(pieces: readonly Uint8Array[]): { chunks: AsyncIterable<Uint8Array>; taken: () => number } {
  let taken = 0;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    for (const piece of pieces) {
      taken += 1;
      yield piece;
    }
  }
  return { chunks: chunks(), taken: () => taken };
}

function repeated(text: string, times: number): Buffer[] {
  return Array.from({ length: times }, () => Buffer.from(text, "utf8"));
}

test("8.1 collectWindow 一满就不再要下一块：凑满 limit 时如此，当前行超出剩余预算时也如此", { timeout: 2_000 }, async () => {
  // 要知道第 2 行之后还有没有内容，得看到第 3 行的第一个字节：所以恰好要走 3 块。
  const byLimit = countedChunks(repeated("a\n", 1_000));
  assert.deepEqual(await collectWindow(byLimit.chunks, { limit: 2, maxBytes: 100 }), { lines: ["a", "a"], firstLine: 1, stoppedBy: "limit" });
  assert.equal(byLimit.taken(), 3, "凑满 limit 之后还在往下读");

  // 一行 10 000 字节、没有换行；攒到第 6 块（60 字节）就超出了 50 字节的上限。
  const byBytes = countedChunks(repeated("x".repeat(10), 1_000));
  assert.deepEqual(await collectWindow(byBytes.chunks, { maxBytes: 50 }), { lines: [], firstLine: 1, stoppedBy: "bytes" });
  assert.equal(byBytes.taken(), 6, "放不下的一行还在往内存里攒");

  // 凑满 limit 时文件恰好结束，就是读到了末尾；没有换行的最后一行也是一行。
  assert.equal((await collectWindow(countedChunks(repeated("a\n", 2)).chunks, { limit: 2, maxBytes: 100 })).stoppedBy, "end");
  const tail = await collectWindow(countedChunks([Buffer.from("a\nb\nc")]).chunks, { offset: 3, maxBytes: 100 });
  assert.deepEqual(tail, { lines: ["c"], firstLine: 3, stoppedBy: "end" });
});

test("8.1 read 整行解码：跨块的多字节字符完整无缺；不是 UTF-8 的字节显示成 U+FFFD，上限按显示出来的字节算", { timeout: 3_000 }, async () => {
  // "a你" 的 4 个字节被块的边界切成 2 + 2。
  const split = Buffer.from("a你\n", "utf8");
  const joined = await collectWindow(countedChunks([split.subarray(0, 2), split.subarray(2)]).chunks, { maxBytes: 100 });
  assert.deepEqual(joined.lines, ["a你"]);

  // 每行 4 个 0xE9（Latin-1 的 é），显示成 4 个 U+FFFD，共 12 字节：30 字节放得下两行（12 + 1 + 12），
  // 按原始字节（4 + 1 + 4 …）算会放下六行，交出的文字就超过上限了。
  const latin1 = Buffer.from([0xe9, 0xe9, 0xe9, 0xe9, 0x0a]);
  const shown = await collectWindow(countedChunks(Array.from({ length: 10 }, () => latin1)).chunks, { maxBytes: 30 });
  assert.deepEqual(shown, { lines: ["\uFFFD".repeat(4), "\uFFFD".repeat(4)], firstLine: 1, stoppedBy: "bytes" });

  await withSandbox(async ({ root, workspace }) => {
    // 9 万字节的一行跨过 64 KB 的块边界，65 536 不是 3 的倍数，边界正好切在一个汉字中间。
    const long = "长".repeat(30_000);
    await writeFile(path.join(root, "long.txt"), `${long}\n`);
    await writeFile(path.join(root, "latin1.txt"), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x3d, 0x20, 0x31, 0x0a]));
    const read = readTool(workspace, 100_000);

    assert.equal(okText(await call(read, { path: "long.txt" })), long);
    assert.equal(okText(await call(read, { path: "latin1.txt" })), "caf\uFFFD = 1");
  });
});

test("8.1 读取途中被取消：read 在两块之间停下，报告被取消", { timeout: 5_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await hugeSparseFile(root, "huge.bin");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    // offset=7 要数完 2 GiB 里的换行，才知道它超出了末尾（文件只有 6 行）。
    const result = await call(readTool(workspace), { path: "huge.bin", offset: 7 }, controller.signal);

    assert.match(errorText(result), /读取 huge\.bin 时调用被取消了/);
    assert.ok(Date.now() - started < 1_000, `取消后还读了 ${Date.now() - started} 毫秒`);
  });
});

test("8.1 穿过普通文件的路径也算不存在；新文件最近的已存在祖先是悬空的符号链接时按越界拒绝", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await writeFile(path.join(root, "a.txt"), "inside\n");
    await symlink(path.join(root, "gone", "target"), path.join(root, "dangling"));

    // realpath 在这里报 ENOTDIR：a.txt 是文件，不是目录，它下面什么也没有。
    await rejectsWith(workspace.resolveExisting("a.txt/inner.txt"), "NOT_FOUND", "穿过普通文件的路径应当报 NOT_FOUND");
    await rejectsWith(workspace.resolveWritable("dangling"), "OUTSIDE_WORKSPACE", "看不见悬空链接指向哪里，就不能放行");
    await rejectsWith(workspace.resolveWritable("dangling/new.txt"), "OUTSIDE_WORKSPACE", "经悬空链接写新文件同样不能放行");
  });
});

test("8.1 offset 与 limit 必须是不小于 1 的整数；空文件是 0 行，只有一行的文件 offset=2 就超出末尾", { timeout: 2_000 }, async () => {
  const from = (text: string, request: { offset?: number; limit?: number }) =>
    collectWindow(countedChunks(text === "" ? [] : [Buffer.from(text, "utf8")]).chunks, { maxBytes: 100, ...request });

  await assert.rejects(from("a\n", { offset: 0 }), { name: "RangeError", message: "offset 必须是不小于 1 的整数，实际是 0。" });
  await assert.rejects(from("a\n", { offset: -2 }), { name: "RangeError", message: "offset 必须是不小于 1 的整数，实际是 -2。" });
  await assert.rejects(from("a\n", { limit: 0 }), { name: "RangeError", message: "limit 必须是不小于 1 的整数，实际是 0。" });

  assert.deepEqual(await from("", {}), { lines: [], firstLine: 1, stoppedBy: "end" }, "空文件一行也没有");
  await assert.rejects(from("", { offset: 2 }), { message: "offset=2 超出了文件末尾：文件只有 0 行。" });
  assert.deepEqual(await from("a\n", { offset: 1 }), { lines: ["a"], firstLine: 1, stoppedBy: "end" });
  await assert.rejects(from("a\n", { offset: 2 }), { message: "offset=2 超出了文件末尾：文件只有 1 行。" });
});

test("8.1 字节上限恰好用满：行间换行算一个字节，恰好放得下的一行收下，续读说明恰好放得下也收下", { timeout: 2_000 }, async () => {
  // "aa\nbb\ncc" 是 2 + 1 + 2 + 1 + 2 = 8 字节：上限 7 放两行，上限 8 放三行。
  const window = async (maxBytes: number) => (await collectWindow(countedChunks([Buffer.from("aa\nbb\ncc\ndd\n")]).chunks, { maxBytes })).lines;
  assert.deepEqual(await window(7), ["aa", "bb"]);
  assert.deepEqual(await window(8), ["aa", "bb", "cc"]);

  await withSandbox(async ({ root, workspace }) => {
    // 读到末尾、没有续读说明时，正文恰好等于上限就整个交出。
    await writeFile(path.join(root, "two.txt"), "aa\nbb\n");
    assert.equal(okText(await call(readTool(workspace, 5), { path: "two.txt" })), "aa\nbb");

    // 每行 16 字节，续读说明 105 字节：一行加说明是 16 + 2 + 105 = 123 字节，两行是 140 字节。
    await writeFile(path.join(root, "zh.txt"), linesOf(20, (i) => `第${i}行：你好`));
    const oneLine = (cap: number) => `第1行：你好\n\n[已显示第 1-1 行（文件共 351 字节，达到 ${cap} 字节上限）。用 offset=2 继续读取。]`;
    assert.equal(okText(await call(readTool(workspace, 139), { path: "zh.txt" })), oneLine(139), "两行加说明是 140 字节，超过 139");
    assert.equal(okText(await call(readTool(workspace, 123), { path: "zh.txt" })), oneLine(123), "一行加说明恰好 123 字节");
    const tooSmall = okText(await call(readTool(workspace, 122), { path: "zh.txt" }));
    assert.ok(Buffer.byteLength(tooSmall, "utf8") <= 122, `一行加说明放不下 122 字节时一行也不给，实际 ${Buffer.byteLength(tooSmall, "utf8")} 字节`);
    assert.ok(!tooSmall.includes("第1行：你好"));
  });
});

test("8.1 read 用完就关掉文件：读成功、读到目录、offset 超出末尾之后，打开的文件描述符一个不多", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await writeFile(path.join(root, "notes.txt"), linesOf(3));
    await mkdir(path.join(root, "docs"));
    const read = readTool(workspace);
    const before = openDescriptors();

    for (let round = 0; round < 3; round += 1) {
      okText(await call(read, { path: "notes.txt" }));
      assert.match(errorText(await call(read, { path: "docs" })), /docs 不是普通文件/);
      assert.match(errorText(await call(read, { path: "notes.txt", offset: 9 })), /offset=9 超出了文件末尾/);
    }
    assert.equal(openDescriptors(), before, "每次读取打开的文件都要关掉，出错时也一样");
  });
});

// ── 实践 8.2 ────────────────────────────────────────────────────

test("8.2 write 自动创建父目录、可以覆盖；越界的写入在外面什么也不留下", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside, workspace }) => {
    const write = writeTool(workspace, new MutationQueue());
    await symlink(outside, path.join(root, "door"));

    assert.equal(okText(await call(write, { path: "docs/plan/todo.md", content: "- 读代码\n" })), "已写入 docs/plan/todo.md（12 字节）。");
    okText(await call(write, { path: "docs/plan/todo.md", content: "- 改代码\n" }));
    assert.equal(await readFile(path.join(root, "docs/plan/todo.md"), "utf8"), "- 改代码\n");

    assert.match(errorText(await call(write, { path: "../escape.txt", content: "x" })), /在工作区之外/);
    assert.match(errorText(await call(write, { path: "door/sub/escape.txt", content: "x" })), /在工作区之外/);
    assert.equal(existsSync(path.join(outside, "..", "escape.txt")), false);
    assert.equal(existsSync(path.join(outside, "sub")), false, "越界的写入连父目录都不能在外面创建");
  });
});

test("8.2 edit 的多处替换都在原文里定位，一次写回", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const file = path.join(root, "greet.ts");
    await writeFile(file, 'const name = "pi";\nconsole.log("hello " + name);\n');
    const edit = editTool(workspace, new MutationQueue());

    const result = await call(edit, {
      path: "greet.ts",
      edits: [
        { oldText: '"hello "', newText: '"你好，"' },
        { oldText: '"pi"', newText: '"tiny-pi"' },
      ],
    });

    assert.equal(okText(result), "已在 greet.ts 里替换 2 处。");
    assert.equal(await readFile(file, "utf8"), 'const name = "tiny-pi";\nconsole.log("你好，" + name);\n');
  });
});

/** 用一组会失败的 edits 调用 edit：文件必须逐字节不变，交回错误文字。 */
async function failedEdit(sandbox: Sandbox, edits: unknown): Promise<string> {
  const file = path.join(sandbox.root, "config.txt");
  const original = Buffer.from("mode = fast\nretries = 3\nmode = fast\n", "utf8");
  await writeFile(file, original);
  const result = await call(editTool(sandbox.workspace, new MutationQueue()), { path: "config.txt", edits });
  assert.deepEqual(await readFile(file), original, "失败的 edit 不能改动文件的任何一个字节");
  return errorText(result);
}

test("8.2 有一处 oldText 找不到，整个 edit 都不生效", { timeout: 2_000 }, async () => {
  await withSandbox(async (sandbox) => {
    const message = await failedEdit(sandbox, [
      { oldText: "retries = 3", newText: "retries = 5" },
      { oldText: "timeout = 10", newText: "timeout = 20" },
    ]);
    assert.match(message, /config\.txt 没有改动：edits\[1\] 的 oldText 在文件里找不到/);
  });
});

test("8.2 oldText 出现不止一次就拒绝猜测，文件不变", { timeout: 2_000 }, async () => {
  await withSandbox(async (sandbox) => {
    const message = await failedEdit(sandbox, [{ oldText: "mode = fast", newText: "mode = safe" }]);
    assert.match(message, /edits\[0\] 的 oldText 在文件里出现了 2 次/);
  });
});

test("8.2 两处编辑的匹配区域重叠就拒绝，文件不变", { timeout: 2_000 }, async () => {
  await withSandbox(async (sandbox) => {
    const message = await failedEdit(sandbox, [
      { oldText: "retries = 3\nmode", newText: "retries = 4\nmode" },
      { oldText: "fast\nretries", newText: "slow\nretries" },
    ]);
    assert.match(message, /edits\[0\] 与 edits\[1\] 的匹配区域重叠/);
  });
});

test("8.2 MutationQueue：同一个 key 按调用顺序一个接一个，不同 key 不互相等待，失败不堵住队伍", { timeout: 2_000 }, async () => {
  const queue = new MutationQueue();
  const log: string[] = [];
  let releaseFirst = () => {};
  const gate = new Promise<void>((resolve) => (releaseFirst = resolve));

  const first = queue.run("a.txt", async () => {
    log.push("a1 开始");
    await gate;
    log.push("a1 结束");
    throw new Error("a1 失败");
  });
  const second = queue.run("a.txt", async () => {
    log.push("a2 开始");
    return "a2";
  });
  const other = queue.run("b.txt", async () => {
    log.push("b1 开始");
    return "b1";
  });

  assert.equal(await other, "b1");
  assert.deepEqual(log, ["a1 开始", "b1 开始"], "a2 必须等 a1 结束；b1 不必等");
  releaseFirst();
  await assert.rejects(first, /a1 失败/);
  assert.equal(await second, "a2");
  assert.deepEqual(log, ["a1 开始", "b1 开始", "a1 结束", "a2 开始"]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(queue.size, 0, "队伍走空后不再记着这些 key");
});

test("8.2 同一文件上两次并发的 edit 都生效，并且按调用顺序生效", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const file = path.join(root, "counter.txt");
    await writeFile(file, "count = 1\n");
    const edit = editTool(workspace, new MutationQueue());

    // 第二次编辑要找的 "count = 2" 只在第一次编辑之后才存在。
    const [first, second] = await Promise.all([
      call(edit, { path: "counter.txt", edits: [{ oldText: "count = 1", newText: "count = 2" }] }),
      call(edit, { path: "./counter.txt", edits: [{ oldText: "count = 2", newText: "count = 3" }] }),
    ]);

    okText(first);
    okText(second);
    assert.equal(await readFile(file, "utf8"), "count = 3\n");
  });
});

test("8.2 write 与 edit 原子地替换文件：经同目录的临时文件 rename 到位，保留权限位，不留临时文件；硬链接的另一个名字保留旧内容", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const queue = new MutationQueue();
    const script = path.join(root, "check.sh");
    await writeFile(script, "echo old\n");
    await chmod(script, 0o755);
    await link(script, path.join(root, "check-copy.sh"));
    const before = await stat(script);

    okText(await call(writeTool(workspace, queue), { path: "check.sh", content: "echo new\n" }));
    const afterWrite = await stat(script);
    assert.notEqual(afterWrite.ino, before.ino, "新内容应当是 rename 到位的另一个文件，而不是原地截断重写");
    assert.equal(afterWrite.mode & 0o777, 0o755, "覆盖可执行脚本之后它仍然可执行");
    assert.equal(await readFile(path.join(root, "check-copy.sh"), "utf8"), "echo old\n", "硬链接的另一个名字仍指向旧内容");

    okText(await call(editTool(workspace, queue), { path: "check.sh", edits: [{ oldText: "new", newText: "edited" }] }));
    assert.notEqual((await stat(script)).ino, afterWrite.ino, "edit 同样经临时文件 rename 到位");
    assert.equal(await readFile(script, "utf8"), "echo edited\n");
    assert.deepEqual((await readdir(root)).sort(), ["check-copy.sh", "check.sh"], "不留下临时文件");

    // 新文件用默认权限：与 writeFile 新建的文件一样，不会多出执行位。
    await writeFile(path.join(root, "reference.txt"), "x");
    okText(await call(writeTool(workspace, queue), { path: "fresh.txt", content: "x" }));
    assert.equal((await stat(path.join(root, "fresh.txt"))).mode & 0o777, (await stat(path.join(root, "reference.txt"))).mode & 0o777);
  });
});

test("8.2 edit 拒绝不是有效 UTF-8 的文件，一个字节也不改", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    // Latin-1 写的 "café = 1"：0xE9 单独出现不是合法的 UTF-8。
    const original = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x3d, 0x20, 0x31, 0x0a]);
    await writeFile(path.join(root, "latin1.txt"), original);

    const result = await call(editTool(workspace, new MutationQueue()), { path: "latin1.txt", edits: [{ oldText: "1", newText: "2" }] });
    assert.match(errorText(result), /latin1\.txt 没有改动：文件不是有效的 UTF-8 文本/);
    assert.deepEqual(await readFile(path.join(root, "latin1.txt")), original);
  });
});

test("8.2 edit 要把整个文件读进内存，超过单文件上限的文件被拒绝，一个字节也不改", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const original = linesOf(200);
    await writeFile(path.join(root, "big.log"), original);
    const edits = [{ oldText: "line 1\n", newText: "" }];

    const refused = errorText(await call(editTool(workspace, new MutationQueue(), 1_000), { path: "big.log", edits }));
    assert.match(refused, /big\.log 有 \d+ 字节，超过单个文件 1000 字节的上限/);
    assert.match(refused, /用 read 分段查看，用 bash 修改/);
    assert.equal(await readFile(path.join(root, "big.log"), "utf8"), original);
    // 恰好等于上限不算超过。
    okText(await call(editTool(workspace, new MutationQueue(), Buffer.byteLength(original)), { path: "big.log", edits }));
    assert.equal(await readFile(path.join(root, "big.log"), "utf8"), original.slice("line 1\n".length));
  });
});

test("8.2 同一文件的两个名字（符号链接）排在同一条队伍里，并发的 edit 都生效", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await writeFile(path.join(root, "counter.txt"), "count = 1\n");
    await symlink(path.join(root, "counter.txt"), path.join(root, "alias.txt"));
    const edit = editTool(workspace, new MutationQueue());

    const [first, second] = await Promise.all([
      call(edit, { path: "counter.txt", edits: [{ oldText: "count = 1", newText: "count = 2" }] }),
      call(edit, { path: "alias.txt", edits: [{ oldText: "count = 2", newText: "count = 3" }] }),
    ]);
    okText(first);
    okText(second);
    assert.equal(await readFile(path.join(root, "counter.txt"), "utf8"), "count = 3\n");
  });
});

test("8.2 检查之后父目录被换成指向外面的链接：写入时再确认，外面什么也不留下", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, outside }) => {
    await mkdir(path.join(root, "notes"));
    // resolveWritable("notes/todo.md") 检查时交出的就是这个真实路径。
    const checked = path.join(root, "notes", "todo.md");
    await rename(path.join(root, "notes"), path.join(root, "notes-old"));
    await symlink(outside, path.join(root, "notes"));

    await assert.rejects(writeFileAtomic(checked, "- 越界\n", "notes/todo.md"), /notes\/todo\.md 在检查之后被换成了别的东西/);
    assert.deepEqual(await readdir(outside), [], "外面不能留下目标文件或临时文件");
  });
});

test("8.2 edits 为空或 oldText 是空串都整体拒绝；newText 为空串就是删除；write 不能覆盖目录", { timeout: 2_000 }, async () => {
  await withSandbox(async (sandbox) => {
    assert.match(await failedEdit(sandbox, []), /config\.txt 没有改动：edits 是空数组/);
    assert.match(await failedEdit(sandbox, [{ oldText: "", newText: "x" }]), /config\.txt 没有改动：edits\[0\] 的 oldText 是空串/);

    const { root, workspace } = sandbox;
    const queue = new MutationQueue();
    okText(await call(editTool(workspace, queue), { path: "config.txt", edits: [{ oldText: "retries = 3\n", newText: "" }] }));
    assert.equal(await readFile(path.join(root, "config.txt"), "utf8"), "mode = fast\nmode = fast\n");

    await mkdir(path.join(root, "docs"));
    await writeFile(path.join(root, "docs", "keep.md"), "keep\n");
    const refused = errorText(await call(writeTool(workspace, queue), { path: "docs", content: "x" }));
    assert.match(refused, /docs 不是普通文件/);
    assert.ok(!refused.includes("    at "), "错误结果里不能有调用栈");
    assert.deepEqual(await readdir(path.join(root, "docs")), ["keep.md"], "目录和它里面的文件都不受影响");
  });
});

test("8.2 在 “aaa” 里找 “aa” 算两处；首尾相接的两处编辑不算重叠；文件开头的 BOM 原样保留", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const edit = editTool(workspace, new MutationQueue());
    await writeFile(path.join(root, "a.txt"), "aaa\n");
    assert.match(errorText(await call(edit, { path: "a.txt", edits: [{ oldText: "aa", newText: "b" }] })), /edits\[0\] 的 oldText 在文件里出现了 2 次/);
    assert.equal(await readFile(path.join(root, "a.txt"), "utf8"), "aaa\n");

    await writeFile(path.join(root, "pair.txt"), "abcd\n");
    const result = await call(edit, {
      path: "pair.txt",
      edits: [
        { oldText: "cd", newText: "Y" },
        { oldText: "ab", newText: "X" },
      ],
    });
    assert.equal(okText(result), "已在 pair.txt 里替换 2 处。");
    assert.equal(await readFile(path.join(root, "pair.txt"), "utf8"), "XY\n");

    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    await writeFile(path.join(root, "bom.txt"), Buffer.concat([bom, Buffer.from("name = pi\n")]));
    okText(await call(edit, { path: "bom.txt", edits: [{ oldText: "pi", newText: "tiny-pi" }] }));
    assert.deepEqual(await readFile(path.join(root, "bom.txt")), Buffer.concat([bom, Buffer.from("name = tiny-pi\n")]), "BOM 必须原样写回");
  });
});

test("8.2 queueKey 是真实路径：经目录链接的新文件与直接给出的同一个文件是同一条队伍；解析出错（链接成环）就用字面路径", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    await mkdir(path.join(root, "dir"));
    await symlink(path.join(root, "dir"), path.join(root, "link"));
    await symlink(path.join(root, "dir", "loop"), path.join(root, "dir", "loop"));

    // new.txt 还不存在：key 是最近的已存在祖先的真实路径，接上还不存在的那一段。
    assert.equal(workspace.queueKey("link/new.txt"), path.join(root, "dir", "new.txt"));
    assert.equal(workspace.queueKey("dir/sub/new.txt"), path.join(root, "dir", "sub", "new.txt"));
    // 报的不是“不存在”而是 ELOOP：不再往上找，这样的路径 resolveExisting 也会拒绝。
    assert.equal(workspace.queueKey("link/loop/x.txt"), path.join(root, "link", "loop", "x.txt"));
  });
});

test("8.2 write 与 edit 用完就关掉文件：写入、编辑、超过上限被拒绝之后，打开的文件描述符一个不多", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const queue = new MutationQueue();
    const write = writeTool(workspace, queue);
    const edit = editTool(workspace, queue, 100);
    await writeFile(path.join(root, "big.txt"), linesOf(50));
    const before = openDescriptors();

    for (let round = 0; round < 3; round += 1) {
      okText(await call(write, { path: "note.txt", content: `round ${round}\n` }));
      okText(await call(edit, { path: "note.txt", edits: [{ oldText: `round ${round}`, newText: "done" }] }));
      assert.match(errorText(await call(edit, { path: "big.txt", edits: [{ oldText: "line 1\n", newText: "" }] })), /超过单个文件 100 字节的上限/);
    }
    assert.equal(openDescriptors(), before, "每次写入和编辑打开的文件都要关掉，被拒绝时也一样");
  });
});

// ── 实践 8.3（需要 POSIX shell：/bin/sh）────────────────────────

const quick = { timeoutMs: 5_000, maxOutputBytes: 4_096 };

/** bash 结果里给程序看的那几项：成功和失败都应当有。 */
function commandDetails(result: ToolResultMessage): Pick<CommandResult, "status" | "exitCode" | "truncated"> {
  const details = result.details as Partial<CommandResult> | undefined;
  return { status: details?.status as CommandResult["status"], exitCode: details?.exitCode ?? null, truncated: details?.truncated ?? false };
}

test("8.3 bash 在工作区根目录里运行并报告退出码，非零退出码是错误结果", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const bash = bashTool(workspace, bashLimits());

    assert.equal(okText(await call(bash, { command: "pwd" })), `${root}\n\n[退出码 0]`);
    const failedResult = await call(bash, { command: "echo 检查没通过 >&2; exit 3" });
    const failed = errorText(failedResult);
    assert.match(failed, /检查没通过/);
    assert.match(failed, /\[退出码 3\]$/);
    assert.deepEqual(commandDetails(failedResult), { status: "exited", exitCode: 3, truncated: false }, "失败的结果也带着结构化的 details");
  });
});

test("8.3 bash 不继承凭据：名字含 KEY、TOKEN、SECRET、PASSWORD 的变量与 PI_COURSE_ 开头的变量都不给命令；它在工作区里启动，却不被关在里面", { timeout: 3_000 }, async () => {
  const planted: Record<string, string> = {
    PI_COURSE_API_KEY: "sk-course-planted-1",
    PI_COURSE_BASE_URL: "http://user:pw-planted-2@127.0.0.1:9/v1",
    OPENAI_API_KEY: "sk-openai-planted-3",
    GITHUB_TOKEN: "ghp-planted-4",
    AWS_SECRET_ACCESS_KEY: "aws-planted-5",
    PGPASSWORD: "pg-planted-6",
    COURSE_PROBE_COLOR: "blue",
  };
  const saved = Object.keys(planted).map((name) => [name, process.env[name]] as const);
  Object.assign(process.env, planted);
  try {
    await withSandbox(async ({ workspace, outside }) => {
      const bash = bashTool(workspace, bashLimits({ bashMaxOutputBytes: 64 * 1024 }));
      const env = okText(await call(bash, { command: "env" }));
      for (const [name, value] of Object.entries(planted)) {
        if (name === "COURSE_PROBE_COLOR") continue;
        assert.ok(!env.includes(value) && !env.includes(`${name}=`), `${name} 进了命令的环境：模型会在输出里读到它`);
      }
      assert.match(env, /^COURSE_PROBE_COLOR=blue$/m, "与凭据无关的变量照常继承");
      assert.match(env, /^PATH=/m, "PATH 照常继承，命令才找得到程序");

      // 起点是工作区，边界却不在：sh 读得到外面的文件。
      await writeFile(path.join(outside, "elsewhere.txt"), "工作区外面\n");
      assert.match(okText(await call(bash, { command: `cat ${JSON.stringify(path.join(outside, "elsewhere.txt"))}` })), /工作区外面/);
    });
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
});

test("8.3 输出超过上限时只留结尾的完整字符，并写明一共多少字节", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const command = 'i=1; while [ $i -le 500 ]; do echo "第 $i 行"; i=$((i+1)); done';
    const result = await runCommand(command, { ...quick, cwd: root, maxOutputBytes: 100 });

    assert.equal(result.status, "exited");
    assert.equal(result.exitCode, 0);
    assert.equal(result.truncated, true);
    assert.ok(result.totalBytes > 5_000, `应当统计全部输出，实际 ${result.totalBytes}`);
    assert.ok(Buffer.byteLength(result.output, "utf8") <= 100, "保留的输出不能超过上限");
    assert.ok(result.output.endsWith("第 500 行\n"), "保留的是输出的结尾");
    assert.ok(!result.output.includes("\uFFFD"), "截断点不能切开多字节字符");

    const bash = bashTool(await Workspace.open(root), bashLimits({ bashMaxOutputBytes: 200 }));
    const toolResult = await call(bash, { command });
    const report = okText(toolResult);
    assert.match(report, /\[输出共 \d+ 字节，连同说明超过 200 字节上限，只保留了结尾部分。\]/);
    assert.ok(Buffer.byteLength(report, "utf8") <= 200, `截断说明也算在上限里，实际 ${Buffer.byteLength(report, "utf8")} 字节`);
    assert.ok(!report.includes("\uFFFD"), "截断点不能切开多字节字符");
    assert.deepEqual(commandDetails(toolResult), { status: "exited", exitCode: 0, truncated: true });
  });
});

test("8.3 超时终止整个进程组：留在后台的孙进程不会拖住结果", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const bash = bashTool(workspace, bashLimits({ bashTimeoutMs: 100 }));
    // 两次运行互不相干，同时进行：等待时间只算一次。
    const [result, toolResult] = await Promise.all([
      // sh 派生的两个 sleep 都握着输出管道；只杀 sh，管道要等 5 秒才关闭。
      runCommand("echo 开始; sleep 5 & sleep 5", { ...quick, cwd: root, timeoutMs: 100 }),
      call(bash, { command: "sleep 5" }),
    ]);
    assert.equal(result.status, "timedOut");
    assert.equal(result.exitCode, null);
    assert.equal(result.output, "开始\n");
    assert.match(errorText(toolResult), /命令超过 100 毫秒仍未结束，已终止它的整个进程组/);
    assert.deepEqual(commandDetails(toolResult), { status: "timedOut", exitCode: null, truncated: false });
  });
});

test("8.3 tailOfBytes 只留结尾的完整字符：起点落在多字节字符中间，就挪到下一个字符的开头", { timeout: 2_000 }, () => {
  // "你好" 是 e4 bd a0 e5 a5 bd：只留 5、4 字节时，起点分别落在“你”的第二、第三个字节上。
  const hello = Buffer.from("你好", "utf8");
  assert.equal(tailOfBytes(hello, 6), "你好");
  assert.equal(tailOfBytes(hello, 5), "好");
  assert.equal(tailOfBytes(hello, 4), "好");
  assert.equal(tailOfBytes(hello, 3), "好");
  assert.equal(tailOfBytes(hello, 2), "");
  // 四字节的 emoji 有三个后续字节。
  const smile = Buffer.from("a😀b", "utf8");
  assert.equal(tailOfBytes(smile, 4), "b");
  assert.equal(tailOfBytes(smile, 5), "😀b");
});

test("8.3 totalBytes 是收到的全部字节，恰好等于上限不算截断；分几次到达的输出也留下完整的结尾", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const exact = await runCommand("printf 12345", { ...quick, cwd: root, maxOutputBytes: 5 });
    assert.deepEqual([exact.output, exact.totalBytes, exact.truncated], ["12345", 5, false]);

    // 每次 printf 之间睡一会儿，输出就分成几块先后到达；收集器丢旧块时不能多丢。
    const pieces = (...parts: string[]) => parts.map((part) => `printf ${part}`).join("; sleep 0.05; ");
    const first = await runCommand(pieces("ABCDEFGH", "x", "y"), { ...quick, cwd: root, maxOutputBytes: 3 });
    assert.deepEqual([first.output, first.totalBytes, first.truncated], ["Hxy", 10, true]);
    const second = await runCommand(pieces("a", "BBBBBBBB", "c", "DD"), { ...quick, cwd: root, maxOutputBytes: 10 });
    assert.deepEqual([second.output, second.totalBytes, second.truncated], ["BBBBBBBcDD", 12, true]);
  });
});

test("8.3 bash 的结果文字：恰好等于上限的原样交出；截断了就写明总字节数，输出留到恰好填满上限；连说明都放不下时不留输出", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ workspace }) => {
    const bash = (cap: number) => bashTool(workspace, bashLimits({ bashMaxOutputBytes: cap }));

    // 49 个 x、空行、13 字节的 "[退出码 0]"：恰好 64 字节，没截断，原样交出。
    const fits = okText(await call(bash(64), { command: "printf '%049d' 0 | tr 0 x" }));
    assert.equal(fits, `${"x".repeat(49)}\n\n[退出码 0]`);

    // 500 个换行：去掉末尾空白后什么也不剩，可输出确实被截断了，说明照样要写。
    assert.match(okText(await call(bash(200), { command: "printf '%0500d' 0 | tr 0 '\\n'" })), /^\n\n\[输出共 500 字节，连同说明超过 200 字节上限/);

    const full = okText(await call(bash(200), { command: "printf '%01000d' 0 | tr 0 x" }));
    assert.equal(Buffer.byteLength(full, "utf8"), 200, "截断时输出的结尾留到恰好填满上限");
    assert.match(full, /^x+\n\n\[输出共 1000 字节，连同说明超过 200 字节上限，只保留了结尾部分。\]\n\n\[退出码 0\]$/);

    const tiny = okText(await call(bash(40), { command: "printf '%01000d' 0 | tr 0 x" }));
    assert.ok(tiny.startsWith("\n\n[输出共 1000 字节，连同说明超过 40 字节上限"), `上限连说明都放不下时一个字节的输出也不留：${tiny}`);
  });
});

test("8.3 收集器边收边丢：命令吐出 100 MB，交出结果时内存里没有攒下这些输出", { timeout: 10_000 }, async () => {
  await withSandbox(async ({ root }) => {
    // Buffer 的字节记在 arrayBuffers 里：攒下全部块的实现在这里至少涨上 100 MB（拼接时还要再复制一份）；
    // 边收边丢的实现只多出几十 MB 还没被回收的旧块。
    const before = process.memoryUsage().arrayBuffers;
    const result = await runCommand("head -c 100000000 /dev/zero", { ...quick, cwd: root, maxOutputBytes: 4_096 });
    const grownMb = (process.memoryUsage().arrayBuffers - before) / 2 ** 20;

    assert.deepEqual([result.totalBytes, result.output], [100_000_000, "\0".repeat(4_096)]);
    assert.ok(grownMb < 80, `内存里最多是上限再加一块，实际涨了 ${grownMb.toFixed(0)} MB`);
  });
});

/** 50 毫秒后按下取消，模拟用户在命令运行途中打断。 */
function cancelSoon(): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 50);
  return controller.signal;
}

test("8.3 取消与超时是两种结局：取消同样终止进程组，结果写明是被取消", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const bash = bashTool(workspace, bashLimits());
    const [result, toolResult] = await Promise.all([
      runCommand("sleep 5 & sleep 5", { ...quick, cwd: root, signal: cancelSoon() }),
      call(bash, { command: "sleep 5" }, cancelSoon()),
    ]);
    assert.equal(result.status, "cancelled");
    assert.equal(result.spawned, true);
    assert.equal(result.exitCode, null);
    assert.match(errorText(toolResult), /命令被取消，已终止它的整个进程组/);
    assert.deepEqual(commandDetails(toolResult), { status: "cancelled", exitCode: null, truncated: false });
  });
});

/** 等命令在工作区里写出 name 这个文件（它借此说“我准备好了”），交回文件内容。 */
async function readyFile(root: string, name: string): Promise<string> {
  const file = path.join(root, name);
  for (;;) {
    const content = existsSync(file) ? await readFile(file, "utf8") : "";
    if (content !== "") return content;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test("8.3 取消与超时先发 SIGTERM 让命令收尾；不理会 SIGTERM 的命令过了宽限期被 SIGKILL", { timeout: 8_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const controller = new AbortController();
    const base = { ...quick, cwd: root, signal: controller.signal };
    // 两条命令都先装好 trap，再写下 ready 文件：信号一定在 trap 之后才到。
    // 守规矩的那条宽限期和排空窗口都给足：机器再忙，它也来得及接住 SIGTERM、写完那一行；
    // 收到 SIGKILL 才会丢掉那一行，宽限期长短不影响这个判断。
    const polite = runCommand('trap "echo 收到 TERM，正在收尾; exit 0" TERM; echo 1 > polite.ready; sleep 5 & wait', { ...base, killGraceMs: 3_000, drainMs: 1_000 });
    const stubborn = runCommand('trap "" TERM; echo 1 > stubborn.ready; sleep 5', { ...base, killGraceMs: 50, drainMs: 30 });
    await Promise.all([readyFile(root, "polite.ready"), readyFile(root, "stubborn.ready")]);
    const started = Date.now();
    controller.abort();

    const [politeResult, stubbornResult] = await Promise.all([polite, stubborn]);
    assert.equal(politeResult.status, "cancelled");
    assert.match(politeResult.output, /收到 TERM，正在收尾/, "第一下应当是 SIGTERM，命令有机会收尾");
    assert.equal(stubbornResult.status, "cancelled");
    // 不被 SIGKILL 的话它要睡满 5 秒；2.5 秒的上限留给忙碌的机器。
    assert.ok(Date.now() - started < 2_500, `忽略 SIGTERM 的命令应当在宽限期后被 SIGKILL，实际用了 ${Date.now() - started} 毫秒`);
  });
});

test("8.3 sh 退出后管道只再等一小会儿：换了进程组、握着管道的孙进程拖不住结果", { timeout: 8_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const controller = new AbortController();
    // perl 的 setpgrp 与 setsid 同理：孙进程离开命令的进程组，组信号到不了它；它继承了输出管道，
    // 写下自己的 pid 之后睡 5 秒。
    const holder = `perl -e 'setpgrp(0, 0); open(my $f, ">", shift) or die; print $f $$; close $f; exec @ARGV' holder.pid sleep 5 &`;
    // 先跑一条命令：第一次启动子进程时 libuv 会为自己多开一个描述符，不该算在这里。
    await runCommand("true", { ...quick, cwd: root });
    const descriptors = openDescriptors();
    const running = runCommand(`${holder} sleep 5`, { ...quick, cwd: root, drainMs: 30, signal: controller.signal });
    const holderPid = Number(await readyFile(root, "holder.pid"));
    const started = Date.now();
    controller.abort();

    const result = await running;
    const elapsed = Date.now() - started;
    const leaked = openDescriptors() - descriptors;
    process.kill(holderPid, "SIGKILL");
    assert.equal(leaked, 0, "排空窗口过后两根管道都由我们关掉，不等握着它的孙进程");
    assert.equal(result.status, "cancelled");
    // 不关管道的话要等孙进程睡满 5 秒；2.5 秒的上限留给忙碌的机器。
    assert.ok(elapsed < 2_500, `握着管道的孙进程还要睡 5 秒，结果却等了 ${elapsed} 毫秒`);
  });
});

/** 此刻事件循环里有几个计时器，signal 上还挂着几个 abort 监听：调用结束后都该回到调用之前。 */
function leftovers(signal: AbortSignal): { timers: number; listeners: number } {
  return { timers: process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length, listeners: getEventListeners(signal, "abort").length };
}

test("8.3 调用结束不留下计时器和监听：正常退出时立即交出，取消与启动失败之后也一样", { timeout: 6_000 }, async () => {
  await withSandbox(async ({ root }) => {
    // 正常退出：管道随 sh 一起关闭，不必白等 3 秒的排空窗口；超时计时器、排空计时器和 abort 监听都已撤掉。
    const exited = new AbortController();
    const before = leftovers(exited.signal);
    const started = Date.now();
    const result = await runCommand("echo done", { ...quick, cwd: root, drainMs: 3_000, signal: exited.signal });
    assert.equal(result.output, "done\n");
    assert.ok(Date.now() - started < 1_500, `管道已经关闭，结果却等了 ${Date.now() - started} 毫秒`);
    assert.deepEqual(leftovers(exited.signal), before);

    // 取消：sh 收到 SIGTERM 就退出了，5 秒后的 SIGKILL 升级也要撤掉。
    const cancelled = new AbortController();
    const running = runCommand("sleep 5", { ...quick, cwd: root, killGraceMs: 5_000, signal: cancelled.signal });
    await new Promise((resolve) => setTimeout(resolve, 50));
    cancelled.abort();
    assert.equal((await running).status, "cancelled");
    assert.deepEqual(leftovers(cancelled.signal), before);

    // 启动失败（cwd 不存在）：以 spawn 的错误拒绝；失败之前就按下的取消也不留下升级计时器。
    const failed = new AbortController();
    const broken = runCommand("true", { ...quick, cwd: path.join(root, "missing"), killGraceMs: 5_000, signal: failed.signal });
    failed.abort();
    await assert.rejects(broken, { code: "ENOENT" });
    assert.deepEqual(leftovers(failed.signal), before);
  });
});

/** 进程已经不在运行：kill(pid, 0) 报 ESRCH，或者只剩等待回收的僵尸（ps 显示 Z）。 */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = spawnSync("ps", ["-o", "stat=", "-p", String(pid)], { encoding: "utf8" }).stdout.trim();
  return state !== "" && !state.startsWith("Z");
}

async function stopsRunningSoon(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt += 1) {
    if (!isRunning(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}

test("8.3 命令正常退出后，它留在进程组里的后台进程也被结束", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const result = await runCommand("sleep 5 >/dev/null 2>&1 & echo $!", { ...quick, cwd: root, drainMs: 50 });
    const pid = Number(result.output.trim());

    assert.equal(result.exitCode, 0);
    assert.ok(Number.isInteger(pid) && pid > 0, `应当打印后台进程的 pid，实际输出 ${result.output}`);
    const stopped = await stopsRunningSoon(pid);
    if (!stopped) process.kill(pid, "SIGKILL");
    assert.ok(stopped, "调用已经交出结果，它启动的 sleep 还在后台运行");
  });
});

test("8.3 开始前就已取消的调用不启动进程", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root }) => {
    const controller = new AbortController();
    controller.abort();
    const result = await runCommand("touch started.txt", { ...quick, cwd: root, signal: controller.signal });

    assert.deepEqual(result, { status: "cancelled", exitCode: null, output: "", totalBytes: 0, truncated: false, spawned: false });
    assert.equal(existsSync(path.join(root, "started.txt")), false, "已取消的调用留下了副作用");
  });
});

// ── 实践 8.4 ────────────────────────────────────────────────────

function toolCall(id: string, name: string, args: unknown): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

/** 先读、再改、再跑检查脚本，最后用一句话收尾：四次模型调用。 */
const fixGreetingScript: ScriptedTurn[] = [
  { kind: "reply", content: [text("我先看看 greet.ts。"), toolCall("call_1", "read", { path: "greet.ts" })], stopReason: "toolUse" },
  {
    kind: "reply",
    content: [
      text("把问候语改成中文。"),
      toolCall("call_2", "edit", { path: "greet.ts", edits: [{ oldText: '"hello, "', newText: '"你好，"' }] }),
    ],
    stopReason: "toolUse",
  },
  { kind: "reply", content: [toolCall("call_3", "bash", { command: "sh check.sh" })], stopReason: "toolUse" },
  { kind: "reply", content: [text("改好了，检查脚本也通过了。")], stopReason: "stop" },
];

test("8.4 真实循环：脚本模型经 runAgentLoop 依次调用 read、edit、bash，改动真的落在工作区里", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const tools = new ToolRegistry(codingTools(workspace, { bashTimeoutMs: 5_000 }));
    const source = 'export const greeting = "hello, " + "pi";\n';
    await writeFile(path.join(root, "greet.ts"), source);
    await writeFile(path.join(root, "check.sh"), 'grep -q "你好" greet.ts && echo "检查通过" || { echo "问候语还是英文" >&2; exit 1; }\n');
    const model = new ScriptedModel(fixGreetingScript, { now: () => 1_000 });

    const run = await runAgentLoop({
      model,
      messages: [userMessage("把 greet.ts 的问候语改成中文，再跑一下 check.sh。", 900)],
      tools,
      now: () => 1_000,
    });

    assert.equal(run.reason, "stop", run.errorMessage);
    assert.deepEqual(
      run.messages.map((message) => message.role),
      ["assistant", "toolResult", "assistant", "toolResult", "assistant", "toolResult", "assistant"],
    );
    const results = run.messages.filter((message): message is ToolResultMessage => message.role === "toolResult");
    assert.deepEqual(results.map(okText), [source.trimEnd(), "已在 greet.ts 里替换 1 处。", "检查通过\n\n[退出码 0]"]);
    assert.equal(await readFile(path.join(root, "greet.ts"), "utf8"), 'export const greeting = "你好，" + "pi";\n');

    // 模型第一次就看到了四个工具的定义；之后每次请求都带着上一步的真实结果。
    assert.deepEqual(model.requests[0]?.tools?.map((tool) => tool.name), ["read", "write", "edit", "bash"]);
    assert.equal(model.requests.length, 4);
    const lastSeen = model.requests[3]?.messages.at(-1);
    assert.ok(lastSeen !== undefined, "第四次请求应当带着 transcript");
    assert.equal(textOf(lastSeen), "检查通过\n\n[退出码 0]");
  });
});
