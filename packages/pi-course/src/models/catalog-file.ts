/**
 * tiny-pi 的模型目录文件：agent 目录里的 models.json。组合根（runtime.ts）读它，别处的代码不读。
 *
 *   {
 *     "default": "auto",
 *     "providers": { "alpha": { "baseUrl": "http://127.0.0.1:8080/v1", "apiKeyEnv": "ALPHA_API_KEY" } },
 *     "models": [{ "provider": "alpha", "id": "m1", "contextWindow": 128000, "thinking": ["off", "low"] }],
 *     "virtual": [{ "name": "auto", "routes": { "user": ["alpha/m1", "offline"] } }]
 *   }
 *
 * provider "offline" 是内置的离线模型；别的 Provider 走第 05 章的适配器，key 只从 apiKeyEnv 点名的环境变量里读。
 * 虚拟模型的路由按 reason 列出候选，没列的 reason 用 user 的那一列。
 */

import { readFile } from "node:fs/promises";
import path from "node:path";

import { OfflineModel } from "../offline-model.js";
import { OpenAiCompatibleModel } from "../openai-compatible.js";
import { ModelCatalog, THINKING_LEVELS, type RouteReason, type ThinkingLevel } from "./catalog.js";

export const MODELS_FILE = "models.json";
export const OFFLINE_PROVIDER = "offline";

export interface CatalogFile {
  catalog: ModelCatalog;
  defaultModel: string;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function strings(value: unknown, where: string): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) throw new Error(`${where} 应当是字符串数组。`);
  return value;
}

/** 读 <agentDir>/models.json；没有这个文件交回 undefined（tiny-pi 照第 16 章的办法选模型）。写错了就抛出，点名文件与位置。 */
export async function loadCatalogFile(
  agentDir: string,
  env: Readonly<Record<string, string | undefined>>,
  now?: () => number,
): Promise<CatalogFile | undefined> {
  const file = path.join(agentDir, MODELS_FILE);
  let raw: string;
  try {
    raw = await readFile(file, "utf8");
  } catch (error) {
    // agent 目录还不存在（或不是目录）：没有目录文件，会话目录的问题留给组合根去报。
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
  try {
    return parseCatalogFile(JSON.parse(raw) as unknown, env, now);
  } catch (error) {
    throw new Error(`模型目录 ${file} 写得不对：${error instanceof Error ? error.message : String(error)}`);
  }
}

export function parseCatalogFile(value: unknown, env: Readonly<Record<string, string | undefined>>, now?: () => number): CatalogFile {
  if (!isObject(value)) throw new Error("顶层应当是一个对象。");
  const providers = isObject(value.providers) ? value.providers : {};
  const catalog = new ModelCatalog();
  const models = Array.isArray(value.models) ? value.models : [];
  models.forEach((entry, index) => {
    const where = `models[${index}]`;
    if (!isObject(entry) || typeof entry.provider !== "string" || typeof entry.id !== "string") throw new Error(`${where} 要有字符串 provider 与 id。`);
    const { provider, id } = entry;
    const thinking = entry.thinking === undefined ? undefined : strings(entry.thinking, `${where}.thinking`);
    for (const level of thinking ?? []) if (!THINKING_LEVELS.includes(level as ThinkingLevel)) throw new Error(`${where}.thinking 里的 ${level} 不是 off、low、medium、high 之一。`);
    const create = () => {
      if (provider === OFFLINE_PROVIDER) return new OfflineModel(now ? { now } : {});
      const settings = providers[provider];
      if (!isObject(settings) || typeof settings.baseUrl !== "string") throw new Error(`Provider ${provider} has no baseUrl in ${MODELS_FILE}.`);
      const keyName = typeof settings.apiKeyEnv === "string" ? settings.apiKeyEnv : undefined;
      return new OpenAiCompatibleModel({ baseUrl: settings.baseUrl, apiKey: keyName === undefined ? "" : (env[keyName] ?? ""), model: id });
    };
    catalog.addPhysical({
      provider,
      id,
      ...(typeof entry.contextWindow === "number" ? { contextWindow: entry.contextWindow } : {}),
      ...(thinking === undefined ? {} : { thinking: thinking as ThinkingLevel[] }),
      create,
    });
  });
  const virtual = Array.isArray(value.virtual) ? value.virtual : [];
  virtual.forEach((entry, index) => {
    const where = `virtual[${index}]`;
    if (!isObject(entry) || typeof entry.name !== "string" || !isObject(entry.routes)) throw new Error(`${where} 要有字符串 name 与对象 routes。`);
    const routes = new Map<string, string[]>();
    for (const [reason, list] of Object.entries(entry.routes)) routes.set(reason, strings(list, `${where}.routes.${reason}`));
    if (!routes.has("user")) throw new Error(`${where}.routes 至少要有 user 一列。`);
    catalog.addVirtual({ name: entry.name, route: ({ reason }: { reason: RouteReason }) => ({ models: routes.get(reason) ?? routes.get("user")! }) });
  });
  const names = catalog.names();
  const defaultModel = typeof value.default === "string" ? value.default : names[0];
  if (defaultModel === undefined) throw new Error("目录里一个模型也没有。");
  catalog.lookup(defaultModel);
  return { catalog, defaultModel };
}
