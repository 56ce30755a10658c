import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test from "node:test";

import { runAgentLoop } from "../src/agent-loop.js";
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
import { runCommand } from "../src/shell.js";
import { executeToolCall, ToolRegistry, type AgentTool } from "../src/tools.js";
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
    assert.equal(middle, "line 2\nline 3\n\n[已显示第 2-3 行，共 5 行。用 offset=4 继续读取。]");

    const rest = okText(await call(read, { path: "notes.txt", offset: 4 }));
    assert.equal(rest, "line 4\nline 5", "读到文件末尾时不附加续读说明");
  });
});

test("8.1 read 的字节上限按 UTF-8 计，只在行与行之间截断", { timeout: 2_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    // 每行 "第N行：你好" 是 3 + 1 + 3 + 3 + 6 = 16 字节；上限 40 放得下两行（16 + 1 + 16），放不下第三行。
    await writeFile(path.join(root, "zh.txt"), linesOf(6, (i) => `第${i}行：你好`));
    const read = readTool(workspace, 40);

    const first = okText(await call(read, { path: "zh.txt" }));
    const [body = "", notice = ""] = first.split("\n\n");
    assert.deepEqual(body.split("\n"), ["第1行：你好", "第2行：你好"]);
    assert.ok(Buffer.byteLength(body, "utf8") <= 40, "窗口里的文字不能超过字节上限");
    assert.equal(notice, "[已显示第 1-2 行，共 6 行（达到 40 字节上限）。用 offset=3 继续读取。]");

    await writeFile(path.join(root, "wide.txt"), `${"长".repeat(30)}\nshort\n`);
    const wide = okText(await call(read, { path: "wide.txt" }));
    assert.match(wide, /第 1 行超过 40 字节的单次读取上限，无法整行显示/);
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

// ── 实践 8.3（需要 POSIX shell：/bin/sh）────────────────────────

const quick = { timeoutMs: 5_000, maxOutputBytes: 4_096 };

test("8.3 bash 在工作区根目录里运行并报告退出码，非零退出码是错误结果", { timeout: 3_000 }, async () => {
  await withSandbox(async ({ root, workspace }) => {
    const bash = bashTool(workspace, bashLimits());

    assert.equal(okText(await call(bash, { command: "pwd" })), `${root}\n\n[退出码 0]`);
    const failed = errorText(await call(bash, { command: "echo 检查没通过 >&2; exit 3" }));
    assert.match(failed, /检查没通过/);
    assert.match(failed, /\[退出码 3\]$/);
  });
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

    const bash = bashTool(await Workspace.open(root), bashLimits({ bashMaxOutputBytes: 100 }));
    assert.match(okText(await call(bash, { command })), /\[输出共 \d+ 字节，超过 100 字节上限，只保留了结尾部分。\]/);
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
