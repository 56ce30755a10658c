import assert from "node:assert/strict";
import test from "node:test";

import { parse, s, SchemaError, toJsonSchema, type Infer } from "../src/schema.js";
import { defineTool, executeToolCall, ToolRegistry, type ToolContext, type ToolOutput } from "../src/tools.js";
import { text, type ToolCall, type ToolDefinition } from "../src/types.js";

const readParams = s.object({
  path: s.string("相对工作区的文件路径"),
  limit: s.optional(s.integer("最多读取的行数")),
});

const editParams = s.object({
  path: s.string(),
  edits: s.array(s.object({ oldText: s.string(), newText: s.string() })),
});

/** 执行 thunk，交回它抛出的 SchemaError；没抛或抛了别的都算失败。 */
function schemaErrorOf(thunk: () => unknown): SchemaError {
  try {
    thunk();
  } catch (error) {
    assert.ok(error instanceof SchemaError, `应当抛出 SchemaError，实际是 ${String(error)}`);
    return error;
  }
  assert.fail("不合格的参数应当被拒绝");
}

function readTool(body = "# tiny-pi\nA small agent runtime.") {
  return defineTool({
    name: "read",
    description: "读取工作区里的一个文本文件。",
    parameters: readParams,
    async execute(args) {
      return { content: [text(body)], details: { path: args.path } };
    },
  });
}

function editTool() {
  return defineTool({
    name: "edit",
    description: "按 oldText → newText 修改文件。",
    parameters: editParams,
    async execute(args) {
      return { content: [text(`改了 ${args.edits.length} 处`)] };
    },
  });
}

function callOf(name: string, args: unknown, id = "call_1"): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

const fixedClock = { now: () => 2_000 };

function liveOptions() {
  return { signal: new AbortController().signal, ...fixedClock };
}

// ── 实践 6.1 ────────────────────────────────────────────────────

test("6.1 object schema 把合格的参数收窄成新值：可选字段可以省略，只留下声明过的字段", () => {
  const given: unknown = { path: "README.md", limit: 20 };
  const full: Infer<typeof readParams> = parse(readParams, given);
  assert.deepEqual(full, { path: "README.md", limit: 20 });
  assert.notEqual(full, given, "收窄的结果应当是一份新值，而不是原对象");

  // 类型层面：path 是 string，limit 是可选的 number。
  const short: { path: string; limit?: number } = parse(readParams, { path: "src/a.ts" });
  assert.deepEqual(short, { path: "src/a.ts" });
  assert.equal("limit" in short, false, "没给的可选字段不应当以 undefined 出现在结果里");
  assert.deepEqual(parse(s.array(s.boolean()), [true, false]), [true, false]);
});

test("6.1 不合格的参数被拒绝，SchemaError.path 指到第一个出错的位置，例如 edits[1].oldText", () => {
  const wrongType = schemaErrorOf(() =>
    parse(editParams, {
      path: "a.ts",
      edits: [
        { oldText: "a", newText: "b" },
        { oldText: 42, newText: "c" },
      ],
    }),
  );
  assert.equal(wrongType.path, "edits[1].oldText", "路径应当指到出错的那一项");
  assert.equal(wrongType.message, "edits[1].oldText 应当是字符串，实际是 42");

  const missing = schemaErrorOf(() => parse(editParams, { path: "a.ts", edits: [{ oldText: "a" }] }));
  assert.equal(missing.path, "edits[0].newText");
  assert.match(missing.message, /缺少这个字段/);
});

test("6.1 各类型各查各的：1.5 不是整数，\"3\" 不会被转换，拼错的字段名和非对象的参数也被指出", () => {
  assert.equal(schemaErrorOf(() => parse(readParams, { path: "a", limit: 1.5 })).path, "limit");
  assert.equal(schemaErrorOf(() => parse(readParams, { path: "a", limit: "3" })).path, "limit");
  assert.equal(schemaErrorOf(() => parse(readParams, { path: "a", limit: null })).path, "limit");
  assert.equal(schemaErrorOf(() => parse(s.number(), Number.NaN)).message, "参数 应当是数字，实际是 NaN");

  const typo = schemaErrorOf(() => parse(readParams, { path: "a", limt: 3 }));
  assert.equal(typo.path, "limt");
  assert.equal(typo.message, "limt 不是这个工具的参数");

  const notObject = schemaErrorOf(() => parse(readParams, ["README.md"]));
  assert.equal(notObject.path, "");
  assert.equal(notObject.message, "参数 应当是对象，实际是数组");
});

test("6.1 toJsonSchema 生成发给 Provider 的 JSON Schema：可选字段不进 required，说明文字原样带上", () => {
  assert.deepEqual(toJsonSchema(readParams), {
    type: "object",
    properties: {
      path: { type: "string", description: "相对工作区的文件路径" },
      limit: { type: "integer", description: "最多读取的行数" },
    },
    required: ["path"],
    additionalProperties: false,
  });
  assert.deepEqual(toJsonSchema(editParams), {
    type: "object",
    properties: {
      path: { type: "string" },
      edits: {
        type: "array",
        items: {
          type: "object",
          properties: { oldText: { type: "string" }, newText: { type: "string" } },
          required: ["oldText", "newText"],
          additionalProperties: false,
        },
      },
    },
    required: ["path", "edits"],
    additionalProperties: false,
  });
});

test("6.1 minimum/maximum 写进 JSON Schema，parse 照同一份数字拒绝越界的值", () => {
  const pageParams = s.object({
    offset: s.integer("从第几行开始读", { minimum: 1 }),
    ratio: s.optional(s.number(undefined, { minimum: 0, maximum: 1 })),
  });

  assert.deepEqual(toJsonSchema(pageParams), {
    type: "object",
    properties: {
      offset: { type: "integer", minimum: 1, description: "从第几行开始读" },
      ratio: { type: "number", minimum: 0, maximum: 1 },
    },
    required: ["offset"],
    additionalProperties: false,
  });
  assert.deepEqual(parse(pageParams, { offset: 1, ratio: 1 }), { offset: 1, ratio: 1 }, "端点本身在范围里");
  assert.throws(() => parse(pageParams, { offset: 0 }), { name: "SchemaError", path: "offset", message: "offset 应当不小于 1，实际是 0" });
  assert.throws(() => parse(pageParams, { offset: 2, ratio: 1.5 }), { name: "SchemaError", path: "ratio", message: "ratio 应当不大于 1，实际是 1.5" });
});

// ── 实践 6.2 ────────────────────────────────────────────────────

test("6.2 definitions() 按登记顺序只交出 name、description 和 JSON Schema", () => {
  const registry = new ToolRegistry([readTool(), editTool()]);
  const definitions: ToolDefinition[] = registry.definitions();

  assert.deepEqual(
    definitions.map((definition) => Object.keys(definition)),
    [
      ["name", "description", "parameters"],
      ["name", "description", "parameters"],
    ],
    "execute 这样的本地实现不应当出现在发给 Provider 的定义里",
  );
  assert.deepEqual(definitions[0], {
    name: "read",
    description: "读取工作区里的一个文本文件。",
    parameters: toJsonSchema(readParams),
  });
  assert.equal(definitions[1]?.name, "edit");
  assert.deepEqual(JSON.parse(JSON.stringify(definitions)), definitions, "定义必须能原样序列化进请求体");
});

test("6.2 同名工具第二次登记就被拒绝，已登记的工具不受影响", () => {
  assert.throws(() => new ToolRegistry([readTool(), readTool("另一个 read")]), /read 已经登记过/);

  const registry = new ToolRegistry([readTool()]);
  const first = registry.get("read");
  assert.throws(() => registry.register(readTool("另一个 read")), /工具名必须唯一/);
  assert.equal(registry.get("read"), first);
  assert.equal(registry.definitions().length, 1);
});

test("6.2 get() 按名字取回登记的那个工具，没登记过的名字得到 undefined", () => {
  const read = readTool();
  const registry = new ToolRegistry();
  registry.register(read);
  registry.register(editTool());

  assert.equal(registry.get("read"), read);
  assert.equal(registry.get("bash"), undefined);
  assert.deepEqual(registry.names, ["read", "edit"]);
});

// ── 实践 6.3 ────────────────────────────────────────────────────

test("6.3 成功的调用变成按 toolCallId 配对的结果，工具拿到收窄后的参数、调用 id、signal 和进度回调", { timeout: 1_000 }, async () => {
  const controller = new AbortController();
  const seen: { args: unknown; context?: ToolContext } = { args: undefined };
  const tool = defineTool({
    name: "read",
    description: "读取文件",
    parameters: readParams,
    async execute(args, context) {
      seen.args = args;
      seen.context = context;
      context.onUpdate({ content: [text("读到一半")] });
      return { content: [text("# tiny-pi")], details: { lines: 1 } };
    },
  });
  const updates: ToolOutput[] = [];

  const result = await executeToolCall(new ToolRegistry([tool]), callOf("read", { path: "README.md", limit: 5 }, "call_7"), {
    signal: controller.signal,
    onUpdate: (partial) => updates.push(partial),
    ...fixedClock,
  });

  assert.deepEqual(result, {
    role: "toolResult",
    toolCallId: "call_7",
    toolName: "read",
    content: [text("# tiny-pi")],
    isError: false,
    details: { lines: 1 },
    timestamp: 2_000,
  });
  assert.deepEqual(seen.args, { path: "README.md", limit: 5 });
  assert.equal(seen.context?.toolCallId, "call_7");
  assert.equal(seen.context?.signal, controller.signal);
  assert.deepEqual(updates, [{ content: [text("读到一半")] }]);
});

test("6.3 找不到工具时不抛异常，结果 isError 并列出可用的工具", { timeout: 1_000 }, async () => {
  const registry = new ToolRegistry([readTool(), editTool()]);
  const result = await executeToolCall(registry, callOf("grep", { pattern: "pi" }, "call_9"), liveOptions());

  assert.equal(result.toolCallId, "call_9");
  assert.equal(result.toolName, "grep");
  assert.equal(result.isError, true);
  assert.deepEqual(result.content, [text("没有名为 grep 的工具。可用的工具：read、edit。")]);
  assert.deepEqual(result.details, { kind: "unknown_tool" });
});

test("6.3 参数不合法时不执行工具，结果写出出错的路径", { timeout: 1_000 }, async () => {
  let executed = false;
  const edit = defineTool({
    ...editTool(),
    async execute() {
      executed = true;
      return { content: [] };
    },
  });
  const bad = { path: "a.ts", edits: [{ oldText: "a", newText: "b" }, { oldText: 42, newText: "c" }] };
  const result = await executeToolCall(new ToolRegistry([edit]), callOf("edit", bad), liveOptions());

  assert.equal(executed, false, "参数不合法时工具不应当被执行");
  assert.equal(result.isError, true);
  assert.deepEqual(result.content, [text("工具 edit 的参数不合法：edits[1].oldText 应当是字符串，实际是 42")]);
  assert.deepEqual(result.details, { kind: "invalid_arguments", path: "edits[1].oldText" });
});

test("6.3 工具同步抛出、异步 reject 或抛出非 Error 的值，都变成 isError 的结果而不是异常", { timeout: 1_000 }, async () => {
  const failing = (name: string, execute: () => Promise<ToolOutput>) =>
    defineTool({ name, description: name, parameters: s.object({}), execute });
  const registry = new ToolRegistry([
    failing("sync", () => {
      throw new Error("磁盘满了");
    }),
    failing("async", async () => {
      throw new Error("权限不足");
    }),
    failing("odd", () => Promise.reject("一个字符串")),
  ]);

  const results = await Promise.all(
    ["sync", "async", "odd"].map((name, index) => executeToolCall(registry, callOf(name, {}, `call_${index}`), liveOptions())),
  );
  assert.deepEqual(
    results.map((result) => [result.toolCallId, result.isError, result.content]),
    [
      ["call_0", true, [text("工具 sync 执行失败：磁盘满了")]],
      ["call_1", true, [text("工具 async 执行失败：权限不足")]],
      ["call_2", true, [text("工具 odd 执行失败：一个字符串")]],
    ],
  );
  assert.deepEqual(results[0]?.details, { kind: "execution_failed" });
});

test("6.3 工具可以不抛出地报告失败：isError 的 ToolOutput 变成错误结果，details 原样保留", { timeout: 1_000 }, async () => {
  // 抛出只能带一句话；命令的退出码这类信息要靠 details 交给程序。
  const check = defineTool({
    name: "check",
    description: "跑检查",
    parameters: s.object({}),
    async execute() {
      return { content: [text("检查没通过")], details: { exitCode: 3 }, isError: true };
    },
  });

  const result = await executeToolCall(new ToolRegistry([check]), callOf("check", {}, "call_5"), liveOptions());

  assert.deepEqual(result, {
    role: "toolResult",
    toolCallId: "call_5",
    toolName: "check",
    content: [text("检查没通过")],
    isError: true,
    details: { exitCode: 3 },
    timestamp: 2_000,
  });
});

test("6.3 已取消的调用不再执行工具；结果交出之后迟到的进度汇报不再转发", { timeout: 1_000 }, async () => {
  let runs = 0;
  let lateUpdate: ((partial: ToolOutput) => void) | undefined;
  const tool = defineTool({
    name: "read",
    description: "读取文件",
    parameters: readParams,
    async execute(_args, context) {
      runs += 1;
      lateUpdate = context.onUpdate;
      return { content: [text("完成")] };
    },
  });
  const registry = new ToolRegistry([tool]);
  const updates: ToolOutput[] = [];

  const controller = new AbortController();
  controller.abort();
  const aborted = await executeToolCall(registry, callOf("read", { path: "a" }), { signal: controller.signal, ...fixedClock });
  assert.equal(runs, 0, "已取消的调用不应当开始执行");
  assert.equal(aborted.isError, true);
  assert.deepEqual(aborted.details, { kind: "aborted" });

  const done = await executeToolCall(registry, callOf("read", { path: "a" }), {
    ...liveOptions(),
    onUpdate: (partial) => updates.push(partial),
  });
  assert.equal(done.isError, false);
  lateUpdate?.({ content: [text("迟到的进度")] });
  assert.deepEqual(updates, [], "结果已经交出，迟到的进度不应当再转发");
});
