import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import test from "node:test";

import { modelFromEnv, OpenAiCompatibleModel, toChatRequest, type ChatRequest } from "../src/openai-compatible.js";
import { SseDecoder, sseField, SseLimitError } from "../src/sse.js";
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

/** UTF-8 的续字节形如 10xxxxxx：一块以它开头，说明刀口切在了字符中间。 */
function isContinuationByte(byte: number | undefined): boolean {
  return ((byte ?? 0) & 0xc0) === 0x80;
}

/**
 * 大约每 7 个字节切一刀：刀口落在行中间、JSON 中间、两个事件之间，但只落在字符之间。
 * 切开字符的刀口由 5.2 逐字节地验证；这里不切，故障实验（去掉 stream: true）才只红 5.2 一项，
 * 不随客户端怎样合并网络数据而变。
 */
function awkwardPieces(body: string): Buffer[] {
  const bytes = Buffer.from(body, "utf8");
  const pieces: Buffer[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = Math.min(start + 7, bytes.length);
    while (isContinuationByte(bytes[end])) end += 1;
    pieces.push(bytes.subarray(start, end));
    start = end;
  }
  return pieces;
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
 * 回一段 SSE，切成怪异的小块逐块写出。write 的回调只说明这块离开了 http 模块，
 * 较早的 Node 会把紧挨着写出的几块合成一次送出；每块之后让出一轮计时器，
 * 客户端就在下一块到来之前读走这一块。then 决定写完之后：正常结束、挂着不动，还是掐断连接。
 */
function sseReply(body: string, then: "end" | "hang" | "drop" = "end"): Reply {
  return async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const piece of awkwardPieces(body)) {
      await new Promise<void>((resolve) => res.write(piece, () => resolve()));
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
    }
    if (then === "end") res.end();
    if (then === "drop") res.destroy();
  };
}

/** 一次写出整段 SSE：测试关心的不是刀口时，少走几百轮事件循环。 */
function sseAtOnce(body: string, then: "end" | "hang" = "end"): Reply {
  return (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (then === "end") res.end(body);
    else res.write(body);
  };
}

async function withServer<T>(replies: Reply[], body: (baseUrl: string, seen: Seen[]) => Promise<T>): Promise<T> {
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
    return await body(`http://127.0.0.1:${port}/v1`, seen);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** 不经网络的 fetch：每次调用都交回 reply() 造出的响应，测试借此精确地控制响应体怎样一块块到来。 */
function fetchReplying(reply: (signal: AbortSignal | undefined) => Promise<Response> | Response): typeof fetch {
  return (async (_input: unknown, init?: RequestInit) => reply(init?.signal ?? undefined)) as typeof fetch;
}

const nowhere = "http://127.0.0.1:9/v1";

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

function textOfFirst(message: AssistantMessage): string {
  const first = message.content[0];
  return first?.type === "text" ? first.text : "";
}

/** 测试里要一个确定的“此刻还活着多少内存”：先把垃圾收干净再量。 */
function garbageCollector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
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
  assert.deepEqual(toChatRequest(context, MODEL, 4_096), { ...expected, max_tokens: 4_096 }, "给了 maxTokens 就写进 max_tokens");
  assert.deepEqual(context, before, "映射只读 context，不能改动它");

  // 下一轮：又来一条 system，改写 rules、加上 style。它在 transcript 里待在原处，请求里仍只有开头那一条。
  const restyle: AgentMessage = {
    role: "system",
    content: "",
    sections: { rules: "先读文件，引用原文再回答。", style: "回答用一句话。" },
    timestamp: 1_030,
  };
  const later: AgentContext = { messages: [...context.messages, restyle, userMessage("项目名是什么？", 1_040)] };
  const second = toChatRequest(later, MODEL);
  assert.deepEqual(second.messages[0], {
    role: "system",
    content: "你是 tiny-pi，一个只读的编码助手。\n\n先读文件，引用原文再回答。\n\n回答用一句话。",
  });
  assert.deepEqual(
    second.messages.map((message) => message.role),
    ["system", "user", "assistant", "tool", "user"],
    "system 只在开头出现一次，其余消息保持原来的先后",
  );
  assert.deepEqual(later.messages[2], rules, "transcript 里的 system 消息留在原处，不被改写");
});

test("5.1 不凭空添加：空 system 不发，没有工具就不带 tools，没给 maxTokens 就不带 max_tokens，只有工具调用的 assistant 的 content 是 null", () => {
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
  assert.equal("max_tokens" in request, false, "没给 maxTokens 时请求体不该出现 max_tokens 字段");
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

  assert.deepEqual([...new SseDecoder().push(bytes)], expected, "一次喂完整段应当得到同样的事件");
});

test("5.2 三种行尾都算数：单独的 CR、LF、CRLF，CRLF 被切在两块之间也只算一个行尾", () => {
  const decoder = new SseDecoder();
  const events = [
    ...decoder.push(Buffer.from("data: 甲\rdata: 乙\r\r", "utf8")),
    ...decoder.push(Buffer.from("data: 丙\r", "utf8")),
    ...decoder.push(Buffer.from("\n\r", "utf8")),
    ...decoder.push(Buffer.from("\ndata: 丁\n\n", "utf8")),
  ];
  assert.deepEqual(events, ["甲\n乙", "丙", "丁"]);
});

test("5.2 很长的一行分成几千块送来：每块只处理新到的字节，总耗时与长度成正比", () => {
  const value = "x".repeat(256 * 1024);
  const bytes = Buffer.from(`data: ${value}\n\n`, "utf8");
  const decoder = new SseDecoder();
  const events: string[] = [];
  // 量的是本进程用掉的 CPU 时间而不是挂钟时间：机器忙时排队等 CPU 的时间不算进去。
  const started = process.cpuUsage();
  for (let at = 0; at < bytes.length; at += 256) events.push(...decoder.push(bytes.subarray(at, at + 256)));
  const used = process.cpuUsage(started);
  const elapsed = (used.user + used.system) / 1000;

  assert.equal(events.length, 1);
  assert.equal(events[0]?.length, value.length);
  // 线性的解码只需几毫秒；每块都把已收的半行重新拼接、重新切分，要一秒左右。
  assert.ok(elapsed < 150, `解码 ${bytes.length} 字节用了 ${elapsed.toFixed(0)} ms CPU：每块是否都在重扫整行？`);
});

test("5.2 一行或一个事件超过上限就抛出 SseLimitError，不等行尾到来", () => {
  const limits = { maxLineChars: 16, maxEventChars: 32 };
  assert.deepEqual([...new SseDecoder(limits).push(Buffer.from("data: 0123456789\n\n"))], ["0123456789"], "刚好 16 个字符的一行不算超");

  // 同一块里先是一个完好的事件，后面那行还没收完就超了限。
  const long = new SseDecoder(limits);
  const seen: string[] = [];
  const feed = (): void => {
    for (const data of long.push(Buffer.from("data: 完好\n\ndata: 0123456789x"))) seen.push(data);
  };
  assert.throws(feed, SseLimitError, "没等到行尾，第 17 个字符一到就该抛出");
  assert.deepEqual(seen, ["完好"], "超限之前已经凑齐的事件照样交出");

  const many = new SseDecoder(limits);
  [...many.push(Buffer.from("data:0123456789\ndata:0123456789\n"))];
  assert.throws(() => [...many.push(Buffer.from("data:0123456789\n"))], (error: unknown) => {
    assert.ok(error instanceof SseLimitError);
    assert.match(error.message, /32/);
    return true;
  });

  // 恰好用满不算超，而且每一行、每个事件都从零重新数：一个 data 行算它的值再加一个换行，10 + 1 + 10 + 1 + 9 + 1 = 32。
  const exact = new SseDecoder(limits);
  const full = "data:0123456789\ndata:0123456789\ndata:012345678\n\n";
  const joined = "0123456789\n0123456789\n012345678";
  assert.deepEqual([...exact.push(Buffer.from(`${full}${full}data: 0123456789\n\ndata: 0123456789\n\n`))], [joined, joined, "0123456789", "0123456789"]);
});

// ── 实践 5.3 ────────────────────────────────────────────────────

test("5.3 README 往返对着真实 HTTP 服务器走完：请求带 Bearer key 发往 /chat/completions，怪异切块的回复被还原成文字、工具调用和 usage", { timeout: 5_000 }, async () => {
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
  const pieces = awkwardPieces(first);
  assert.ok(pieces.some((piece) => !piece.toString("utf8").endsWith("\n")), "测试数据应当至少切开一行");
  assert.ok(!pieces.some((piece) => isContinuationByte(piece[0])), "刀口只落在字符之间");

  await withServer([sseReply(first), sseReply(second)], async (baseUrl, seen) => {
    const model = modelAt(baseUrl);
    const messages: AgentContext["messages"] = [instructions, question];
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
    assert.equal(request.headers.accept, "text/event-stream", "请求头应当声明要的是事件流");
    // 没设 maxTokens 的模型每次也带着默认的 max_tokens: 8192。
    assert.deepEqual(JSON.parse(request.body), toChatRequest({ messages: [instructions, question], tools: [readTool] }, MODEL, 8_192));

    messages.push(one.message, readmeResult);
    const two = await call(model, context);
    assertStop(two.message, "stop");
    assert.deepEqual(two.message.content, [text("项目名是 tiny-pi。")]);
    assert.deepEqual(two.message.usage, { input: 52, output: 8, totalTokens: 60 });
    assert.deepEqual(JSON.parse(seen[1]?.body ?? "null"), toChatRequest(context, MODEL, 8_192));
  });
});

test("5.3 两个工具调用的参数片段交错到达，按 index 各自拼回；片段阶段只有原文，读完流才逐个 toolcall_end", { timeout: 5_000 }, async () => {
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

  // 工具片段之间夹着文字：文字不接回调用前面那块，另起一块排在调用后面；调用的下一片仍回到自己的位置。
  const mixed = sseBody(
    textChunk("好的。"),
    toolChunk(0, { id: "call_a", name: "read", arguments: '{"path":' }),
    textChunk("稍等，"),
    toolChunk(0, { arguments: '"a.md"}' }),
    textChunk("我去读。"),
    finishChunk("tool_calls"),
    "[DONE]",
  );
  await withServer([sseReply(mixed)], async (baseUrl) => {
    const { events, message } = await call(modelAt(baseUrl), { messages: [question], tools: [readTool] });
    assertStop(message, "toolUse");
    assert.deepEqual(labels(events), [
      "start",
      "text_delta#0",
      "toolcall_delta#1",
      "text_delta#2",
      "toolcall_delta#1",
      "text_delta#2",
      "toolcall_end#1",
      "done",
    ]);
    assert.deepEqual(message.content, [text("好的。"), readA, text("稍等，我去读。")]);
  });
});

test("5.3 finish_reason 的映射：stop → stop，length → length，tool_calls → toolUse", { timeout: 5_000 }, async () => {
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
  await withServer(replies, async (baseUrl, seen) => {
    // base URL 末尾多一个斜杠也不该变成 //chat/completions。
    const model = modelAt(`${baseUrl}/`);
    for (const { finish, reason, content } of cases) {
      const { events, message } = await call(model, { messages: [question] });
      assertStop(message, reason);
      const last = events.at(-1);
      assert.ok(last?.type === "done" && last.reason === reason, `finish_reason ${finish} 应当以 done(${reason}) 结束`);
      assert.deepEqual(message.content, content);
    }
    assert.deepEqual(
      seen.map((request) => request.url),
      ["/v1/chat/completions", "/v1/chat/completions", "/v1/chat/completions"],
    );
  });
});

test("5.3 只等 result() 的消费者：一千个文字片段留下的 partial 共用已有的块，不是一千份越来越长的全文", { timeout: 5_000 }, async () => {
  const piece = "0123456789abcdef".repeat(16);
  const body = sseBody(...Array.from({ length: 1_000 }, () => textChunk(piece)), finishChunk("stop"), "[DONE]");
  const reply: Reply = (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(body);
  };
  await withServer([reply], async (baseUrl) => {
    const collectGarbage = garbageCollector();
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const stream = modelAt(baseUrl).stream({ messages: [question] });
    const message = await stream.result();
    collectGarbage();
    assertStop(message, "stop");
    const retained = process.memoryUsage().heapUsed - before;

    assert.deepEqual(message.content, [text(piece.repeat(1_000))]);
    // 每个快照都深拷贝全文的话，一千个 partial 要留下约 128 MB。
    assert.ok(retained < 24 * 1024 * 1024, `只等 result() 却留下了 ${(retained / 1024 / 1024).toFixed(0)} MB`);
    // 量的时候流还活着：缓冲里的事件一个不少，之后才来的迭代者照样读得到。
    let buffered = 0;
    for await (const event of stream) buffered += event.type === "text_delta" ? 1 : 0;
    assert.equal(buffered, 1_000);
  });
});

test("5.3 usage 里缺了的计数按 0 算，缺了 total_tokens 就用两者之和；choices 为 null 的 usage 块照样收下", { timeout: 5_000 }, async () => {
  const usageOf = async (usage: Chunk): Promise<AssistantMessage["usage"]> => {
    const body = sseBody(textChunk("好"), finishChunk("stop"), usage, "[DONE]");
    const model = new OpenAiCompatibleModel({ baseUrl: nowhere, apiKey: KEY, model: MODEL, fetch: fetchReplying(() => new Response(body)) });
    const { message } = await call(model, { messages: [question] });
    assertStop(message, "stop");
    return message.usage;
  };
  assert.deepEqual(await usageOf({ choices: null, usage: { completion_tokens: 7 } }), { input: 0, output: 7, totalTokens: 7 });
  assert.deepEqual(await usageOf({ choices: [], usage: { prompt_tokens: 5 } }), { input: 5, output: 0, totalTokens: 5 });
});

// ── 实践 5.4 ────────────────────────────────────────────────────

test("5.4 没收到或不认识 finish_reason 都以 error 结束，已经收到的文字留在消息里", { timeout: 5_000 }, async () => {
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

test("5.4 一块坏掉的 JSON 以 error 结束：之前拼好的文字不丢，之后的块不再处理", { timeout: 5_000 }, async () => {
  const body = sseBody(textChunk("我先读"), '{"choices": [', textChunk("不该出现"), finishChunk("stop"), "[DONE]");
  await withServer([sseReply(body)], async (baseUrl) => {
    const { events, message } = await call(modelAt(baseUrl), { messages: [question] });
    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /JSON/);
    assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
    assert.deepEqual(message.content, [text("我先读")]);
  });
});

test("5.4 HTTP 错误状态以 error 结束：状态码写进 errorMessage，服务器回显的 key 被涂掉，请求体里也没有 key", { timeout: 5_000 }, async () => {
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

test("5.4 连接中途被掐断或根本连不上，都以 error 结束：已收到的文字保留，stream() 不抛出，result() 不 reject", { timeout: 5_000 }, async () => {
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

/** 读流，第一个文字片段一到就取消：取消之后消费者还收到了什么、消息里留下了什么。 */
async function abortAtFirstText(model: OpenAiCompatibleModel): Promise<{ events: ModelEvent[]; message: AssistantMessage }> {
  const controller = new AbortController();
  const stream = model.stream({ messages: [question] }, { signal: controller.signal });
  const events: ModelEvent[] = [];
  for await (const event of stream) {
    events.push(event);
    if (event.type === "text_delta") controller.abort();
  }
  return { events, message: await stream.result() };
}

test("5.4 中途取消以 aborted 结束并保留已收到的文字；开始前就取消的请求不会发出去；等响应头时取消也立刻收场", { timeout: 5_000 }, async () => {
  const silent: Reply = () => new Promise<void>(() => {});
  await withServer([sseReply(sseBody(textChunk("我先读")), "hang"), silent], async (baseUrl, seen) => {
    const model = modelAt(baseUrl);
    const { events, message: aborted } = await abortAtFirstText(model);
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

    // 服务器收下请求却一直不回响应头：只有 signal 交到了 fetch 手里，取消才够得着这次等待。
    const waiting = new AbortController();
    const pending = call(model, { messages: [question] }, { signal: waiting.signal });
    while (seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    waiting.abort();
    const cut = await pending;
    assertStop(cut.message, "aborted");
    assert.deepEqual(labels(cut.events), ["error"]);
  });
});

test("5.4 取消之后缓冲里剩下的事件不再送出：同一块里的后几个文字片段一个也不交给消费者", { timeout: 5_000 }, async () => {
  // 三个文字片段和 finish_reason 挤在同一块里到达：解码器一次就把它们都凑齐了。
  const body = sseBody(textChunk("一"), textChunk("二"), textChunk("三"), finishChunk("stop"), "[DONE]");
  const model = new OpenAiCompatibleModel({ baseUrl: nowhere, apiKey: KEY, model: MODEL, fetch: fetchReplying(() => new Response(body)) });
  const { events, message } = await abortAtFirstText(model);
  assertStop(message, "aborted");
  assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
  assert.deepEqual(message.content, [text("一")]);
});

// ── 实践 5.5 ────────────────────────────────────────────────────

test("5.5 形状不对的 chunk 以 error 结束：choices 不是数组、content 不是字符串、工具片段没有 index，已拼好的文字留在消息里", { timeout: 5_000 }, async () => {
  const cases: Array<{ bad: Chunk; problem: RegExp }> = [
    { bad: { choices: { 0: { delta: { content: "混进来" } } } }, problem: /choices 不是数组/ },
    { bad: { choices: [{ delta: { content: 42 } }] }, problem: /delta\.content 不是字符串/ },
    { bad: { choices: [{ delta: { tool_calls: [{ function: { arguments: "{}" } }] } }] }, problem: /index/ },
    { bad: { choices: [null] }, problem: /choices\[0\] 不是对象/ },
    { bad: { choices: [7] }, problem: /choices\[0\] 不是对象/ },
    { bad: { choices: [{ delta: { tool_calls: [null] } }] }, problem: /tool_calls 里有一项不是对象/ },
    { bad: { choices: [{ delta: { tool_calls: [7] } }] }, problem: /tool_calls 里有一项不是对象/ },
  ];
  const replies = cases.map(({ bad }) => sseAtOnce(sseBody(textChunk("我先读"), bad, finishChunk("stop"), "[DONE]")));
  await withServer(replies, async (baseUrl) => {
    const model = modelAt(baseUrl);
    for (const { problem } of cases) {
      const { events, message } = await call(model, { messages: [question] });
      assertStop(message, "error");
      assert.match(message.errorMessage ?? "", /形状不对/);
      assert.match(message.errorMessage ?? "", problem);
      assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
      assert.deepEqual(message.content, [text("我先读")]);
    }
  });
});

test("5.5 看门狗：不回响应头、或者流到一半不再送字节，过了 idleTimeoutMs 就以 error 结束，不用调用方取消", { timeout: 5_000 }, async () => {
  const silent: Reply = () => new Promise<void>(() => {});
  // 两种沉默各有自己的服务器，同时进行：250 毫秒的等待只算一次。
  const watched = (reply: Reply) =>
    withServer([reply], (baseUrl) => call(new OpenAiCompatibleModel({ baseUrl, apiKey: KEY, model: MODEL, idleTimeoutMs: 250 }), { messages: [question] }));
  const [noHeaders, stalled] = await Promise.all([watched(silent), watched(sseAtOnce(sseBody(textChunk("我先读")), "hang"))]);

  assertStop(noHeaders.message, "error");
  assert.match(noHeaders.message.errorMessage ?? "", /250 毫秒没有收到/);
  assert.deepEqual(labels(noHeaders.events), ["error"]);

  assertStop(stalled.message, "error");
  assert.match(stalled.message.errorMessage ?? "", /250 毫秒没有收到/);
  assert.deepEqual(labels(stalled.events), ["start", "text_delta#0", "error"]);
  assert.deepEqual(stalled.message.content, [text("我先读")]);
});

test("5.5 SSE 的一行超过上限就以 error 结束，不再往内存里堆；已收到的文字保留", { timeout: 5_000 }, async () => {
  const reply: Reply = async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    await new Promise<void>((resolve) => res.write(sseBody(textChunk("我先读")), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // 之后是一行永远不结束的 data：连接不断，只有上限能让读取停下。
    res.write(`data: ${"x".repeat(4_096)}`);
  };
  await withServer([reply], async (baseUrl) => {
    const model = new OpenAiCompatibleModel({ baseUrl, apiKey: KEY, model: MODEL, sseLimits: { maxLineChars: 1_024 } });
    const { events, message } = await call(model, { messages: [question] });
    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /一行超过了 1024 个字符/);
    assert.deepEqual(labels(events), ["start", "text_delta#0", "error"]);
    assert.deepEqual(message.content, [text("我先读")]);
  });
});

test("5.5 停不下来的模型：请求带上 max_tokens，回复一共超过字节上限就以 error 结束，已收到的文字保留", { timeout: 5_000 }, async () => {
  // 先送一大段，再每隔 10 毫秒送一小块：每块都赶在看门狗叫之前到，只有总量的上限能让读取停下。
  // 测试里的“永远”是 150 块（1.5 秒）：没有上限的客户端会读到最后，因缺 finish_reason 而红，而不是挂住整个文件。
  const endless: Reply = async (res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    await new Promise<void>((resolve) => res.write(sseBody(textChunk("我先读"), textChunk("x".repeat(12_000))), () => resolve()));
    let left = 150;
    const drip = setInterval(() => {
      left -= 1;
      if (left > 0) res.write(sseBody(textChunk("y".repeat(1_000))));
      else res.end();
    }, 10);
    res.once("close", () => clearInterval(drip));
  };
  await withServer([endless], async (baseUrl, seen) => {
    // 32 个 token 的回答，字节上限跟着它：32 × 512 = 16384 字节。
    const capped = new OpenAiCompatibleModel({ baseUrl, apiKey: KEY, model: MODEL, maxTokens: 32, idleTimeoutMs: 1_000 });
    const { events, message } = await call(capped, { messages: [question] });
    assertStop(message, "error");
    assert.match(message.errorMessage ?? "", /一共超过了 16384 字节/);
    assert.equal(events[0]?.type, "start");
    assert.equal(events.at(-1)?.type, "error");
    assert.ok(textOfFirst(message).startsWith(`我先读${"x".repeat(12_000)}`), "上限之前收到的文字应当留在消息里");
    assert.equal((JSON.parse(seen[0]?.body ?? "{}") as ChatRequest).max_tokens, 32, "请求体里应当带着 max_tokens");
  });
});

test("5.5 几 MB 的 HTTP 错误页只留开头一段，key 先涂掉再截断", { timeout: 5_000 }, async () => {
  // 正文送出 1 MB 多以后一直不结束：只有读够就放手的客户端才能回来。
  const page: Reply = (res, seen) => {
    res.writeHead(502, { "content-type": "text/html" });
    res.write(`<html><p>${seen.headers.authorization ?? ""}</p>${"<div>网关出错</div>".repeat(80_000)}`);
  };
  await withServer([page], async (baseUrl) => {
    const { message } = await call(modelAt(baseUrl), { messages: [question] });
    assertStop(message, "error");
    const errorMessage = message.errorMessage ?? "";
    assert.match(errorMessage, /^HTTP 502：<html><p>Bearer \[已隐去的 API key\]<\/p>/);
    assert.match(errorMessage, /已截去/);
    assert.ok(errorMessage.length < 2_100, `errorMessage 有 ${errorMessage.length} 个字符，错误页被整页收下了`);
  });
});

test("5.5 key 的每种样子都被涂掉：服务器回显的 URL 编码、base URL 里的 user:password、fetch 抛出的报错", { timeout: 5_000 }, async () => {
  const oddKey = "sk/7f3a+DO NOT LEAK?";
  const encoded = encodeURIComponent(oddKey);
  const echo: Reply = (res, seen) => {
    res.writeHead(401, { "content-type": "text/plain" });
    res.end(`凭据无效：${encodeURIComponent(seen.headers.authorization ?? "")}`);
  };
  const leaks = (message: AssistantMessage, secret: string): boolean => (message.errorMessage ?? "").includes(secret);

  await withServer([echo], async (baseUrl) => {
    const echoed = await call(new OpenAiCompatibleModel({ baseUrl, apiKey: oddKey, model: MODEL }), { messages: [question] });
    assertStop(echoed.message, "error");
    assert.match(echoed.message.errorMessage ?? "", /凭据无效：Bearer/);
    assert.ok(!leaks(echoed.message, encoded), `URL 编码的 key 没有被涂掉：${echoed.message.errorMessage}`);

    // fetch 拒绝带凭据的地址，报错里原样带着整个地址。
    const inUrl = baseUrl.replace("http://", `http://user:${encoded}@`);
    const thrown = await call(new OpenAiCompatibleModel({ baseUrl: inUrl, apiKey: oddKey, model: MODEL }), { messages: [question] });
    assertStop(thrown.message, "error");
    assert.match(thrown.message.errorMessage ?? "", /127\.0\.0\.1/, "报错应当保留地址，只涂掉 key");
    assert.ok(!leaks(thrown.message, encoded) && !leaks(thrown.message, oddKey), `报错里的 key 没有被涂掉：${thrown.message.errorMessage}`);

    const onlyInUrl = baseUrl.replace("http://", "http://tok3n-only-in-url@");
    const bare = await call(new OpenAiCompatibleModel({ baseUrl: onlyInUrl, apiKey: "", model: MODEL }), { messages: [question] });
    assertStop(bare.message, "error");
    assert.ok(!leaks(bare.message, "tok3n-only-in-url"), `base URL 里的凭据没有被涂掉：${bare.message.errorMessage}`);
  });
});

test("5.5 上限恰好用满不算超：回复恰好 maxResponseBytes 字节照常完成，errorMessage 恰好 2000 个字符原样保留", { timeout: 5_000 }, async () => {
  const body = sseBody(textChunk("我先读"), finishChunk("stop"), "[DONE]");
  const exact = new OpenAiCompatibleModel({
    baseUrl: nowhere,
    apiKey: KEY,
    model: MODEL,
    maxResponseBytes: Buffer.byteLength(body),
    fetch: fetchReplying(() => new Response(body)),
  });
  const { message } = await call(exact, { messages: [question] });
  assertStop(message, "stop");
  assert.equal(textOfFirst(message), "我先读");

  const failing = (length: number) =>
    new OpenAiCompatibleModel({ baseUrl: nowhere, apiKey: KEY, model: MODEL, fetch: fetchReplying(() => Promise.reject(new Error("x".repeat(length)))) });
  assert.equal((await call(failing(2_000), { messages: [question] })).message.errorMessage, "x".repeat(2_000));
  const clipped = (await call(failing(2_001), { messages: [question] })).message.errorMessage ?? "";
  assert.ok(clipped.startsWith("x".repeat(2_000)) && clipped.endsWith("（共 2001 个字符，后面的已截去）"), clipped.slice(1_990));
});

test("5.5 HTTP 错误正文读满 16 KiB 就放手：不多要一块，也不少要一块，剩下的正文被取消", { timeout: 5_000 }, async () => {
  /** 响应体一块一块按需供给（highWaterMark 为 0：读一次才供一块），记下供了几块、有没有被取消。 */
  const errorPage = (piece: (index: number) => number) => {
    let pulls = 0;
    let cancelled = false;
    const fetch = fetchReplying(() => {
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            controller.enqueue(Buffer.alloc(piece(pulls), "a"));
            pulls += 1;
          },
          cancel() {
            cancelled = true;
          },
        },
        { highWaterMark: 0 },
      );
      return new Response(body, { status: 502 });
    });
    return { model: new OpenAiCompatibleModel({ baseUrl: nowhere, apiKey: KEY, model: MODEL, fetch }), pulls: () => pulls, cancelled: () => cancelled };
  };

  // 第一块恰好 16384 字节：已经读满，不再要第二块。
  const whole = errorPage(() => 16_384);
  const first = await call(whole.model, { messages: [question] });
  assertStop(first.message, "error");
  assert.match(first.message.errorMessage ?? "", /^HTTP 502：a+/);
  assert.deepEqual([whole.pulls(), whole.cancelled()], [1, true], "读满就取消剩下的正文，不再下载");

  // 第一块差一个字节：还没读满，要第二块。
  const short = errorPage((index) => (index === 0 ? 16_383 : 1_024));
  assertStop((await call(short.model, { messages: [question] })).message, "error");
  assert.deepEqual([short.pulls(), short.cancelled()], [2, true]);
});

test("5.5 看门狗在响应头到来时重新计时：响应头与第一块正文各隔不到 idleTimeoutMs，就不算沉默", { timeout: 5_000 }, async () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const body = sseBody(textChunk("我先读"), finishChunk("stop"), "[DONE]");
  // 响应头 250 毫秒后才到，第一块正文又过 250 毫秒：合起来超过 400 毫秒，但每一段安静都不到 400 毫秒。
  const fetch = fetchReplying(async (signal) => {
    await sleep(250);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const timer = setTimeout(() => {
          controller.enqueue(Buffer.from(body));
          controller.close();
        }, 250);
        signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          controller.error(signal.reason);
        });
      },
    });
    return new Response(stream);
  });
  const model = new OpenAiCompatibleModel({ baseUrl: nowhere, apiKey: KEY, model: MODEL, idleTimeoutMs: 400, fetch });
  const { message } = await call(model, { messages: [question] });
  assertStop(message, "stop");
  assert.equal(textOfFirst(message), "我先读");
});

test("5.5 长的先换：key 恰好是 base URL 里密码的开头时，密码整个被涂掉，不留下尾巴", { timeout: 5_000 }, async () => {
  // fetch 拒绝带凭据的地址，报错里原样带着整个地址；先换短的 key，密码就只剩 "-tail-9x" 露在外面。
  const model = new OpenAiCompatibleModel({ baseUrl: "http://user:sk-short-tail-9x@127.0.0.1:9/v1", apiKey: "sk-short", model: MODEL });
  const { message } = await call(model, { messages: [question] });
  assertStop(message, "error");
  assert.match(message.errorMessage ?? "", /127\.0\.0\.1/);
  assert.ok(!(message.errorMessage ?? "").includes("tail-9x"), `密码的后半截漏了出来：${message.errorMessage}`);
});
