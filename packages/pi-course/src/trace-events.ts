import type {
  TraceMessage,
  TraceText,
  TraceToolCall,
} from "./prologue.js";

/**
 * 序章 trace 里发生过的每一件事，一件一个对象。
 * type 是标签：先检查它，TypeScript 才允许读这一种独有的字段。
 */
export type TraceEvent =
  | { type: "user_text"; text: string }
  | { type: "model_text"; text: string }
  | { type: "tool_call"; id: string; name: string; arguments: unknown }
  | { type: "model_stop"; reason: TraceStopReason }
  | { type: "tool_result"; toolCallId: string; text: string; isError: boolean };

export type TraceStopReason = "toolUse" | "stop";

// ── 从消息到事件 ────────────────────────────────────────────────

/** 按发生顺序摊平；每次模型调用以一个 model_stop 收尾，所以两次调用清清楚楚。 */
export function traceEvents(trace: readonly TraceMessage[]): TraceEvent[] {
  return trace.flatMap(eventsOf);
}

function eventsOf(message: TraceMessage): TraceEvent[] {
  switch (message.role) {
    case "user":
      return message.content.map((block) => ({ type: "user_text", text: block.text }));
    case "assistant":
      return [
        ...message.content.map(assistantBlockEvent),
        { type: "model_stop", reason: message.stopReason },
      ];
    case "toolResult":
      return [
        {
          type: "tool_result",
          toolCallId: message.toolCallId,
          text: message.content.map((block) => block.text).join("\n"),
          isError: message.isError,
        },
      ];
  }
}

function assistantBlockEvent(block: TraceText | TraceToolCall): TraceEvent {
  if (block.type === "text") return { type: "model_text", text: block.text };
  return { type: "tool_call", id: block.id, name: block.name, arguments: block.arguments };
}

// ── 穷尽 switch ─────────────────────────────────────────────────

/**
 * 每种事件一句话。default 分支把 event 交给 assertNever：
 * 只要还有一种 type 没有 case，event 在那里就不是 never，编译直接失败。
 */
export function describeEvent(event: TraceEvent): string {
  switch (event.type) {
    case "user_text":
      return `用户说：${event.text}`;
    case "model_text":
      return `模型说：${event.text}`;
    case "tool_call":
      return `模型请求工具 ${event.name}（${event.id}）`;
    case "model_stop":
      return event.reason === "toolUse" ? "模型停下，等工具结果" : "模型说完了";
    case "tool_result":
      return `${event.isError ? "工具出错" : "工具返回"}（${event.toolCallId}）`;
    default:
      return assertNever(event);
  }
}

/** 编译期只接受 never；运行时真走到这里，说明有数据绕过了类型（例如未经解析的 JSON）。 */
export function assertNever(value: never): never {
  throw new Error(`遇到没有处理的分支：${JSON.stringify(value)}`);
}

// ── 在边界上解析 unknown ────────────────────────────────────────

/** 形状不对的那个字段，path 形如 trace[1].content[0].type。 */
export class TraceShapeError extends Error {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    super(`${path} ${problem}`);
    this.name = "TraceShapeError";
  }
}

function fail(path: string, expected: string, actual: unknown): never {
  const seen = actual === undefined ? "缺少这个字段" : `实际是 ${JSON.stringify(actual)}`;
  throw new TraceShapeError(path, `应当是${expected}，${seen}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isOneOf<T extends string>(value: unknown, allowed: readonly T[]): value is T {
  return allowed.some((item) => item === value);
}

function readRecord(value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value)) fail(path, "对象", value);
  return value;
}

function readString(value: unknown, path: string): string {
  if (typeof value !== "string") fail(path, "字符串", value);
  return value;
}

function readBoolean(value: unknown, path: string): boolean {
  if (typeof value !== "boolean") fail(path, " true 或 false", value);
  return value;
}

function readOneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (!isOneOf(value, allowed)) fail(path, ` ${allowed.map((item) => `"${item}"`).join(" / ")} 之一`, value);
  return value;
}

/** 数组的每一项都带着自己的下标路径去解析，出错时能指到具体哪一项。 */
function readList<T>(value: unknown, path: string, item: (value: unknown, path: string) => T): T[] {
  if (!Array.isArray(value)) fail(path, "数组", value);
  return value.map((entry: unknown, index) => item(entry, `${path}[${index}]`));
}

function parseText(value: unknown, path: string): TraceText {
  const block = readRecord(value, path);
  readOneOf(block.type, `${path}.type`, ["text"]);
  return { type: "text", text: readString(block.text, `${path}.text`) };
}

function parseAssistantBlock(value: unknown, path: string): TraceText | TraceToolCall {
  const block = readRecord(value, path);
  const type = readOneOf(block.type, `${path}.type`, ["text", "toolCall"]);
  if (type === "text") return parseText(block, path);
  return {
    type: "toolCall",
    id: readString(block.id, `${path}.id`),
    name: readString(block.name, `${path}.name`),
    // 参数长什么样由具体工具决定，第 06 章的 schema 才检查它；这里原样保留。
    arguments: block.arguments,
  };
}

function parseMessage(value: unknown, path: string): TraceMessage {
  const message = readRecord(value, path);
  const role = readOneOf(message.role, `${path}.role`, ["user", "assistant", "toolResult"]);
  const content = `${path}.content`;
  switch (role) {
    case "user":
      return { role, content: readList(message.content, content, parseText) };
    case "assistant":
      return {
        role,
        content: readList(message.content, content, parseAssistantBlock),
        stopReason: readOneOf(message.stopReason, `${path}.stopReason`, ["toolUse", "stop"]),
      };
    case "toolResult":
      return {
        role,
        toolCallId: readString(message.toolCallId, `${path}.toolCallId`),
        toolName: readString(message.toolName, `${path}.toolName`),
        content: readList(message.content, content, parseText),
        isError: readBoolean(message.isError, `${path}.isError`),
      };
  }
}

/**
 * 从文件或网络读回的 trace 只是 unknown。逐字段检查后重新搭出 TraceMessage[]，
 * 之后的代码才可以放心地相信类型；第一个坏字段就停下并报出它的路径。
 */
export function parseTrace(value: unknown): TraceMessage[] {
  return readList(value, "trace", parseMessage);
}
