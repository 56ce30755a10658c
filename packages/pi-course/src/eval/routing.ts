/**
 * 第 18 章的评测：任务经过真正的模型目录。第一个物理模型是一个只在 127.0.0.1 上监听、每次都回同一个 HTTP 状态的服务器，
 * 任务的脚本模型是备选；tiny-pi 要在失败之后换到备选重试，并把尝试记进会话。
 */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import type { CatalogFile } from "../models/catalog-file.js";
import { ModelCatalog } from "../models/catalog.js";
import { ROUTE_ATTEMPT, type RouteAttempt } from "../models/routing.js";
import { OpenAiCompatibleModel } from "../openai-compatible.js";
import type { Model } from "../types.js";
import { answerIncludes, fail, pass, toolCallsPaired, toolErrors } from "./checks.js";
import type { EvalCheck, EvalTask } from "./types.js";

export interface Loopback {
  baseUrl: string;
  close(): Promise<void>;
}

/** 一个只在 127.0.0.1 上监听、每次都回同一个 HTTP 状态的服务器。 */
export async function startLoopback(status: number): Promise<Loopback> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(status).end(`loopback answers ${status}`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** 评测的目录：虚拟模型 auto 的每一种 reason 都是 [回环服务器, 任务的脚本模型]。 */
export function routingCatalog(baseUrl: string, backup: Model): CatalogFile {
  const catalog = new ModelCatalog();
  catalog.addPhysical({ provider: "loopback", id: "primary", create: () => new OpenAiCompatibleModel({ baseUrl, apiKey: "", model: "primary", idleTimeoutMs: 2_000 }) });
  catalog.addPhysical({ provider: "scripted", id: "backup", create: () => backup });
  catalog.addVirtual({ name: "auto", route: () => ({ models: ["loopback/primary", "scripted/backup"] }) });
  return { catalog, defaultModel: "auto" };
}

/** 会话里的每一次请求都先在回环服务器上失败（状态对得上），再在备选上成功。 */
export function routeRetried(status: number, requests: number): EvalCheck {
  return {
    name: `${requests} 次请求都在 HTTP ${status} 之后换到备选`,
    scope: "run",
    run(context) {
      const attempts = context.entries.flatMap((entry) => (entry.type === "custom" && entry.customType === ROUTE_ATTEMPT ? [entry.data as RouteAttempt] : []));
      const expected = Array.from({ length: requests }, () => ["loopback/primary:retried", "scripted/backup:ok"]).flat();
      const seen = attempts.map((attempt) => `${attempt.target}:${attempt.outcome}`);
      if (seen.join() !== expected.join()) return fail(`会话里的尝试是 ${seen.join("，") || "（没有）"}，应当是 ${expected.join("，")}`);
      const wrong = attempts.find((attempt) => attempt.outcome === "retried" && !(attempt.error ?? "").startsWith(`HTTP ${status}`));
      if (wrong !== undefined) return fail(`重试前的失败是“${wrong.error ?? ""}”，不是 HTTP ${status}`);
      const retry = attempts.find((attempt) => attempt.outcome === "ok" && attempt.reason !== "retry");
      if (retry !== undefined) return fail("备选上的那次尝试没有以 reason retry 发出");
      return pass(`${requests} 次请求都先 HTTP ${status}，再以 retry 在备选上成功`);
    },
  };
}

/** 可见的路由任务：主模型回 503，备选读文件、回答。 */
export const ROUTING_TASKS: EvalTask[] = [
  {
    id: "fallback-after-503",
    title: "主模型回 503，换备选重试，照样读文件回答",
    files: { "VERSION": "2.7.1\n" },
    prompts: ["VERSION 文件里写的是哪个版本？"],
    turns: [
      { kind: "reply", content: [{ type: "toolCall", id: "call-1", name: "read", arguments: { path: "VERSION" } }], stopReason: "toolUse" },
      { kind: "reply", content: [{ type: "text", text: "版本是 2.7.1。" }], stopReason: "stop" },
    ],
    routing: { failWith: 503 },
    checks: [routeRetried(503, 2), toolCallsPaired(), toolErrors(0), answerIncludes("2.7.1")],
  },
];
