import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import test from "node:test";

import { modelFromEnv, OpenAiCompatibleModel, toChatRequest, type ChatRequest } from "../src/openai-compatible.js";
import { SseDecoder, sseField } from "../src/sse.js";
import {
  assistantMessage,
  text,
  userMessage,
  type AgentContext,
  type AgentMessage,
  type AssistantContent,
  type AssistantMessage,
  type ModelEvent,
  type StopReason,
  type StreamOptions,
  type ToolCall,
  type ToolDefinition,
  type ToolResultMessage,
} from "../src/types.js";

const KEY = "sk-course-7f3a-DO-NOT-LEAK";
const MODEL = "tiny-model";

// ── README 往返的固定数据 ───────────────────────────────────────

const readTool: ToolDefinition = {
  name: "read",
  description: "读取工作区里的一个文本文件",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const readReadme: ToolCall = { type: "toolCall", id: "call_1", name: "read", arguments: { path: "README.md" } };
const instructions: AgentMessage = { role: "system", content: "你是 tiny-pi，一个只读的编码助手。", timestamp: 900 };
const question = userMessage("请读取 README，然后告诉我项目名。", 1_000);
const firstAnswer = assistantMessage([text("我先读取项目说明。"), readReadme], "toolUse", { timestamp: 1_010 });
const readmeResult: ToolResultMessage = {
  role: "toolResult",
  toolCallId: "call_1",
  toolName: "read",
  content: [text("# tiny-pi\nA small agent runtime.")],
  isError: false,
  timestamp: 1_020,
};

// ── 线上 chunk 的构造 ───────────────────────────────────────────

type Chunk = Record<string, unknown>;

function textChunk(content: string): Chunk {
  return { choices: [{ index: 0, delta: { content } }] };
}

function toolChunk(index: number, part: { id?: string; name?: string; arguments?: string }): Chunk {
  const piece = { index, id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } };
  return { choices: [{ index: 0, delta: { tool_calls: [piece] } }] };
}

function finishChunk(reason: string): Chunk {
  return { choices: [{ index: 0, delta: {}, finish_reason: reason }] };
}

function usageChunk(prompt: number, completion: number): Chunk {
  return { choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } };
}

/** 对象按 JSON 写出；字符串原样写出（用来送 [DONE] 或坏掉的 JSON）。 */
function sseBody(...chunks: Array<Chunk | string>): string {
  return chunks.map((chunk) => `data: ${typeof chunk === "string" ? chunk : JSON.stringify(chunk)}\n\n`).join("");
}

/** 每 7 个字节切一刀：刀口会落在行中间，也会落在一个汉字的三个字节之间。 */
function awkwardPieces(body: string): Buffer[] {
  const bytes = Buffer.from(body, "utf8");
  const pieces: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 7) pieces.push(bytes.subarray(at, at + 7));
  return pieces;
}

/** UTF-8 的续字节形如 10xxxxxx：一块以它开头，说明刀口切在了字符中间。 */
function splitsACharacter(pieces: readonly Buffer[]): boolean {
  return pieces.some((piece) => ((piece[0] ?? 0) & 0xc0) === 0x80);
}

// ── 回环上的真实 HTTP 服务器 ────────────────────────────────────

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Reply = (res: ServerResponse, seen: Seen) => Promise<void> | void;

/**
 * 回一段 SSE，切成怪异的小块逐块写出；每块确认交给内核后再让出一轮事件循环，
 * 客户端因此一块一块地收到。then 决定写完之后：正常结束、挂着不动，还是掐断连接。
 */
function sseReply(body: string, then: "end" | "hang" | "drop" = "end"): Reply {
  return async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const piece of awkwardPieces(body)) {
      await new Promise<void>((resolve) => res.write(piece, () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (then === "end") res.end();
    if (then === "drop") res.destroy();
  };
}

async function withServer(replies: Reply[], body: (baseUrl: string, seen: Seen[]) => Promise<void>): Promise<void> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request: Seen = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      seen.push(request);
      const reply = replies[seen.length - 1] ?? ((r: ServerResponse) => void r.writeHead(500).end("测试服务器没有准备这么多回复"));
      Promise.resolve(reply(res, request)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await body(`http://127.0.0.1:${port}/v1`, seen);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function modelAt(baseUrl: string): OpenAiCompatibleModel {
  return new OpenAiCompatibleModel({ baseUrl, apiKey: KEY, model: MODEL });
}

async function call(
  model: OpenAiCompatibleModel,
  context: AgentContext,
  options?: StreamOptions,
): Promise<{ events: ModelEvent[]; message: AssistantMessage }> {
  const stream = model.stream(context, options);
  const events: ModelEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, message: await stream.result() };
}

function labels(events: readonly ModelEvent[]): string[] {
  return events.map((event) => ("contentIndex" in event ? `${event.type}#${event.contentIndex}` : event.type));
}

/** 结束原因不对时把 errorMessage 一起报出来：红灯直接说出真正的原因。 */
function assertStop(message: AssistantMessage, expected: StopReason): void {
  const why = message.errorMessage ?? "（没有 errorMessage）";
  assert.equal(message.stopReason, expected, `应当以 ${expected} 结束，实际是 ${message.stopReason}：${why}`);
}

// ── 实践 5.1 ────────────────────────────────────────────────────

test("5.1 README 往返的第二次请求：system 合成开头唯一一条，工具调用的参数是 JSON 文本，工具结果用 role tool 配对", () => {
  const rules: AgentMessage = { role: "system", content: "", sections: { rules: "先读文件再回答。" }, timestamp: 1_005 };
  const context: AgentContext = {
    messages: [instructions, question, rules, firstAnswer, readmeResult],
    tools: [readTool],
  };
  const before = structuredClone(context);

  const expected: ChatRequest = {
    model: MODEL,
    messages: [
      { role: "system", content: "你是 tiny-pi，一个只读的编码助手。\n\n先读文件再回答。" },
      { role: "user", content: "请读取 README，然后告诉我项目名。" },
      {
        role: "assistant",
        content: "我先读取项目说明。",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: '{"path":"README.md"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: "# tiny-pi\nA small agent runtime." },
    ],
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: "function", function: { name: "read", description: readTool.description, parameters: readTool.parameters } }],
  };
  assert.deepEqual(toChatRequest(context, MODEL), expected);
  assert.deepEqual(context, before, "映射只读 context，不能改动它");
});

test("5.1 不凭空添加：空 system 不发，没有工具就不带 tools，只有工具调用的 assistant 的 content 是 null", () => {
  const empty: AgentMessage = { role: "system", content: "", timestamp: 900 };
  const onlyCall = assistantMessage([readReadme], "toolUse");
  const request = toChatRequest({ messages: [empty, question, onlyCall, readmeResult], tools: [] }, MODEL);

  assert.deepEqual(
    request.messages.map((message) => message.role),
    ["user", "assistant", "tool"],
  );
  assert.deepEqual(request.messages[1], {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: '{"path":"README.md"}' } }],
  });
  assert.equal("tools" in request, false, "没有工具时请求体不该出现 tools 字段");
});

test("5.1 modelFromEnv：没设 PI_COURSE_BASE_URL 就返回 undefined；三项齐全得到真实模型；缺模型名时报错且不带出 key", () => {
  assert.equal(modelFromEnv({}), undefined);
  assert.equal(modelFromEnv({ PI_COURSE_BASE_URL: "", PI_COURSE_MODEL: MODEL }), undefined);

  const model = modelFromEnv({ PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1", PI_COURSE_API_KEY: KEY, PI_COURSE_MODEL: MODEL });
  assert.ok(model instanceof OpenAiCompatibleModel);
  assert.equal(model.id, MODEL);
  assert.equal(model.provider, "openai-compatible");

  assert.throws(
    () => modelFromEnv({ PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1", PI_COURSE_API_KEY: KEY }),
    (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.match(error.message, /PI_COURSE_MODEL/);
      assert.ok(!String(error.stack).includes(KEY), "报错的栈里出现了 API key");
      return true;
    },
  );
});

// ── 实践 5.2 ────────────────────────────────────────────────────

test("5.2 sseField 拆出字段名和值：只去掉冒号后的一个空格，冒号开头的注释不算字段", () => {
  assert.deepEqual(sseField('data: {"a":1}'), { name: "data", value: '{"a":1}' });
  assert.deepEqual(sseField("data:紧挨着"), { name: "data", value: "紧挨着" });
  assert.deepEqual(sseField("data:  两个空格"), { name: "data", value: " 两个空格" });
  assert.deepEqual(sseField("data"), { name: "data", value: "" });
  assert.deepEqual(sseField("event: ping"), { name: "event", value: "ping" });
  assert.equal(sseField(": keep-alive"), undefined);
});

test("5.2 SseDecoder 逐字节喂入也能还原每个事件：汉字被切开、CRLF、多行 data、没收尾的半个事件都处理对", () => {
  const wire = [
    ": 保持连接的注释\n",
    "event: ping\n\n",
    'data: {"text":"你好，世界"}\n\n',
    "data: 第一行\r\ndata: 第二行\r\n\r\n",
    "data: [DONE]\n\n",
    'data: {"半个事件',
  ].join("");
  const bytes = Buffer.from(wire, "utf8");
  const expected = ['{"text":"你好，世界"}', "第一行\n第二行", "[DONE]"];

  const byByte = new SseDecoder();
  const events: string[] = [];
  for (const byte of bytes) events.push(...byByte.push(Uint8Array.of(byte)));
  assert.deepEqual(events, expected);

  assert.deepEqual(new SseDecoder().push(bytes), expected, "一次喂完整段应当得到同样的事件");
});

// ── 实践 5.3 ────────────────────────────────────────────────────

test("5.3 README 往返对着真实 HTTP 服务器走完：请求带 Bearer key 发往 /chat/completions，怪异切块的回复被还原成文字、工具调用和 usage", { timeout: 2_000 }, async () => {
  const first = sseBody(
    { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] },
    textChunk("我先读取"),
    textChunk("项目说明。"),
    toolChunk(0, { id: "call_1", name: "read", arguments: "" }),
    toolChunk(0, { arguments: '{"path":' }),
    toolChunk(0, { arguments: '"README.md"}' }),
    finishChunk("tool_calls"),
    usageChunk(18, 12),
    "[DONE]",
  );
  const second = sseBody(textChunk("项目名是 "), textChunk("tiny-pi。"), finishChunk("stop"), usageChunk(52, 8), "[DONE]");
  assert.ok(splitsACharacter(awkwardPieces(first)), "测试数据应当至少切开一个汉字");

  await withServer([sseReply(first), sseReply(second)], async (baseUrl, seen) => {
    const model = modelAt(baseUrl);
    const messages: AgentMessage[] = [instructions, question];
    const context: AgentContext = { messages, tools: [readTool] };

    const one = await call(model, context);
    assertStop(one.message, "toolUse");
    assert.deepEqual(labels(one.events), [
      "start",
      "text_delta#0",
      "text_delta#0",
      "toolcall_delta#1",
      "toolcall_delta#1",
      "toolcall_delta#1",
      "toolcall_end#1",
      "done",
    ]);
    assert.deepEqual(one.message.content, [text("我先读取项目说明。"), readReadme]);
    assert.deepEqual(one.message.usage, { input: 18, output: 12, totalTokens: 30 });
    assert.equal(one.message.provider, "openai-compatible");
    assert.equal(one.message.model, MODEL);

    const request = seen[0];
    assert.ok(request !== undefined);
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/v1/chat/completions");
    assert.equal(request.headers.authorization, `Bearer ${KEY}`);
    assert.match(request.headers["content-type"] ?? "", /application\/json/);
    assert.deepEqual(JSON.parse(request.body), toChatRequest({ messages: [instructions, question], tools: [readTool] }, MODEL));

    messages.push(one.message, readmeResult);
    const two = await call(model, context);
    assertStop(two.message, "stop");
    assert.deepEqual(two.message.content, [text("项目名是 tiny-pi。")]);
    assert.deepEqual(two.message.usage, { input: 52, output: 8, totalTokens: 60 });
    assert.deepEqual(JSON.parse(seen[1]?.body ?? "null"), toChatRequest(context, MODEL));
  });
});

test("5.3 两个工具调用的参数片段交错到达，按 index 各自拼回；片段阶段只有原文，读完流才逐个 toolcall_end", { timeout: 2_000 }, async () => {
  const body = sseBody(
    toolChunk(0, { id: "call_a", name: "read", arguments: "" }),
    toolChunk(1, { id: "call_b", name: "read", arguments: "" }),
    toolChunk(0, { arguments: '{"path":' }),
    toolChunk(1, { arguments: '{"path":' }),
    {
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              { index: 0, function: { arguments: '"a.md"}' } },
              { index: 1, function: { arguments: '"b.md"}' } },
            ],
          },
        },
      ],
    },
    finishChunk("tool_calls"),
    "[DONE]",
  );
  const readA: ToolCall = { type: "toolCall", id: "call_a", name: "read", arguments: { path: "a.md" } };
  const readB: ToolCall = { type: "toolCall", id: "call_b", name: "read", arguments: { path: "b.md" } };

  await withServer([sseReply(body)], async (baseUrl) => {
    const { events, message } = await call(modelAt(baseUrl), { messages: [question], tools: [readTool] });
    assertStop(message, "toolUse");
    assert.deepEqual(labels(events), [
      "start",
      "toolcall_delta#0",
      "toolcall_delta#1",
      "toolcall_delta#0",
      "toolcall_delta#1",
      "toolcall_delta#0",
      "toolcall_delta#1",
      "toolcall_end#0",
      "toolcall_end#1",
      "done",
    ]);
    const middle = events[4];
    assert.ok(middle?.type === "toolcall_delta");
    assert.deepEqual(middle.partial.content, [
      { type: "toolCall", id: "call_a", name: "read", arguments: {}, rawArguments: '{"path":' },
      { type: "toolCall", id: "call_b", name: "read", arguments: {}, rawArguments: '{"path":' },
    ]);
    assert.deepEqual(message.content, [readA, readB]);
    assert.deepEqual(message.usage, { input: 0, output: 0, totalTokens: 0 }, "没有 usage 块时 usage 保持全 0");
  });
});

test("5.3 finish_reason 的映射：stop → stop，length → length，tool_calls → toolUse", { timeout: 2_000 }, async () => {
  const cases: Array<{ finish: string; reason: StopReason; content: AssistantContent[]; reply: Chunk }> = [
    { finish: "stop", reason: "stop", content: [text("好的。")], reply: textChunk("好的。") },
    { finish: "length", reason: "length", content: [text("写到一半")], reply: textChunk("写到一半") },
    {
      finish: "tool_calls",
      reason: "toolUse",
      content: [readReadme],
      reply: toolChunk(0, { id: "call_1", name: "read", arguments: '{"path":"README.md"}' }),
    },
  ];
  const replies = cases.map(({ reply, finish }) => sseReply(sseBody(reply, finishChunk(finish), "[DONE]")));
  await withServer(replies, async (baseUrl) => {
    const model = modelAt(baseUrl);
    for (const { finish, reason, content } of cases) {
      const { events, message } = await call(model, { messages: [question] });
      assertStop(message, reason);
      const last = events.at(-1);
      assert.ok(last?.type === "done" && last.reason === reason, `finish_reason ${finish} 应当以 done(${reason}) 结束`);
      assert.deepEqual(message.content, content);
    }
  });
});

// ── 实践 5.4 ────────────────────────────────────────────────────

test("5.4 没收到或不认识 finish_reason 都以 error 结束，已经收到的文字留在消息里", { timeout: 2_000 }, async () => {
  const replies = [
    sseReply(sseBody(textChunk("我先读"), "[DONE]")),
    sseReply(sseBody(textChunk("我先读"), finishChunk("content_filter"), "[DONE]")),
  ];
  await withServer(replies, async (baseUrl) => {
    const model = modelAt(baseUrl);

    const missing = await call(model, { messages: [question] });
    assertStop(missing.message, "error");
    assert.match(missing.message.errorMessage ?? "", /finish_reason/);
    assert.deepEqual(labels(missing.events), ["start", "text_delta#0", "error"]);
    assert.deepEqual(missing.message.content, [text("我先读")]);

    const unknown = await call(model, { messages: [question] });
    assertStop(unknown.message, "error");
    assert.match(unknown.message.errorMessage ?? "", /content_filter/);
    assert.deepEqual(unknown.message.content, [text("我先读")]);
  });
});

test("5.4 一块坏掉的 JSON 以 error 结束：之前拼好的文字不丢，之后的块不再处理", { timeout: 2_000 }, async () => {
  const body = sseBody(textChunk("我先读"), '{"choices": [', textChunk("不该出现"), finishChunk("stop"), "[DONE]");
  await withServer([sseReply(body)], async (baseUrl) => {
    const { events, message } = await call(modelAt(baseUrl), { messages: [question] });
    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /JSON/);
    assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
    assert.deepEqual(message.content, [text("我先读")]);
  });
});

test("5.4 HTTP 错误状态以 error 结束：状态码写进 errorMessage，服务器回显的 key 被涂掉，请求体里也没有 key", { timeout: 2_000 }, async () => {
  const echo: Reply = (res, seen) => {
    res.writeHead(401, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `无效的凭据：${seen.headers.authorization ?? ""}` } }));
  };
  await withServer([echo], async (baseUrl, seen) => {
    const model = modelAt(baseUrl);
    const { events, message } = await call(model, { messages: [question] });

    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /401/);
    assert.match(message.errorMessage ?? "", /无效的凭据：Bearer /, "服务器的错误正文应当保留，只把 key 换掉");
    assert.ok(!(message.errorMessage ?? "").includes(KEY), `errorMessage 里出现了 API key：${message.errorMessage}`);
    assert.deepEqual(labels(events), ["error"]);
    assert.ok(!JSON.stringify(events).includes(KEY), "事件里出现了 API key");
    assert.ok(!(seen[0]?.body ?? "").includes(KEY), "请求体里出现了 API key");
    assert.ok(!JSON.stringify(model).includes(KEY), "序列化模型对象时带出了 API key");
  });
});

test("5.4 连接中途被掐断或根本连不上，都以 error 结束：已收到的文字保留，stream() 不抛出，result() 不 reject", { timeout: 2_000 }, async () => {
  const body = sseBody(textChunk("我先读"), textChunk("取项目")) + 'data: {"choices":[{"delta":{"content":"说';
  await withServer([sseReply(body, "drop")], async (baseUrl) => {
    const { events, message } = await call(modelAt(baseUrl), { messages: [question] });
    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /中途断开/);
    assert.deepEqual(labels(events), ["start", "text_delta#0", "text_delta#0", "error"]);
    assert.deepEqual(message.content, [text("我先读取项目")]);
    assert.ok(!(message.errorMessage ?? "").includes(KEY));
  });

  // 一个刚刚关掉的端口：连接会被拒绝。
  let closedUrl = "";
  await withServer([], async (baseUrl) => {
    closedUrl = baseUrl;
  });
  const { events, message } = await call(modelAt(closedUrl), { messages: [question] });
  assertStop(message, "error");
  assert.deepEqual(labels(events), ["error"]);
  assert.deepEqual(message.content, []);
  assert.ok((message.errorMessage ?? "").length > 0, "连不上时也要说明原因");
});

test("5.4 中途取消以 aborted 结束并保留已收到的文字；开始前就取消的请求不会发出去", { timeout: 2_000 }, async () => {
  await withServer([sseReply(sseBody(textChunk("我先读")), "hang")], async (baseUrl, seen) => {
    const model = modelAt(baseUrl);
    const controller = new AbortController();
    const stream = model.stream({ messages: [question] }, { signal: controller.signal });
    const events: ModelEvent[] = [];
    for await (const event of stream) {
      events.push(event);
      if (event.type === "text_delta") controller.abort();
    }
    const aborted = await stream.result();
    assertStop(aborted, "aborted");
    assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
    assert.ok(events[2]?.type === "error" && events[2].reason === "aborted");
    assert.deepEqual(aborted.content, [text("我先读")]);

    const early = new AbortController();
    early.abort();
    const before = await call(model, { messages: [question] }, { signal: early.signal });
    assertStop(before.message, "aborted");
    assert.deepEqual(labels(before.events), ["error"]);
    assert.equal(seen.length, 1, "已经取消的请求不该到达服务器");
  });
});
