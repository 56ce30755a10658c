/**
 * 扩展加载器：`.pi/extensions/` 里的每个 `.ts` / `.js` / `.mjs` 文件是一个扩展，按文件名顺序加载。
 *
 * 一个文件坏了（导入失败、default 不是函数、工厂抛出、顶层代码或工厂一直不结束）只是一条带文件名的错误，
 * 别的扩展照样加载，Agent 照样启动。时限管的是整个加载：顶层的 await 和工厂一样可能永远不结束。
 *
 * `.ts` 怎么加载：课程要在 Node 20、22、24、26 上都能跑。能剥类型的 Node（process.features.typescript，
 * 22.18 起默认打开）直接 import()；剥不了的（Node 20、更早的 22）交给 tsx（套件的开发依赖，练习目录经链接
 * 也能找到），它把文件编成 CommonJS 再 require。两条路都接受的写法是“可擦除的 TypeScript”：只有类型标注，
 * 不用 enum / namespace；import 其它模块时写完整的相对路径。
 * import() 的 URL 上带着修改时间：改过的文件重新加载时不会拿到模块缓存里的旧版本。
 */

import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { withTimeout } from "./agent.js";
import { extensionFromFactory, type Extension, type ExtensionError, type ExtensionFactory } from "./extensions.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface LoadExtensionsOptions {
  /** 一个扩展（导入加上工厂）最多等多久，默认 10 秒：一直不结束的扩展不能让 Agent 永远起不来。 */
  timeoutMs?: number;
}

export interface LoadExtensionsResult {
  extensions: Extension[];
  errors: ExtensionError[];
}

export const DEFAULT_LOAD_TIMEOUT_MS = 10_000;
const EXTENSION_FILE = /\.(ts|js|mjs)$/;

// ── 纯函数 ──────────────────────────────────────────────────────

/** 模块的 default 导出必须是一个函数；否则说清楚拿到的是什么。 */
export function factoryOf(module: unknown, file: string): ExtensionFactory {
  // #region lab 12.6
  let exported = (module as { default?: unknown } | null)?.default;
  // 以 CommonJS 方式被 import() 的模块，default 是整个 module.exports，真正的函数在它的 default 上。
  if (typeof exported === "object" && exported !== null && typeof (exported as { default?: unknown }).default === "function") {
    exported = (exported as { default: unknown }).default;
  }
  if (typeof exported !== "function") {
    throw new Error(`${path.basename(file)} 的 default 导出不是函数（拿到的是 ${typeof exported}）：扩展要 export default (pi) => { … }`);
  }
  return exported as ExtensionFactory;
  // #endregion
}

// ── 加载 ────────────────────────────────────────────────────────

// #region lab 12.6 辅助
/** Node 20 的类型声明里还没有这个字段：能剥类型的 Node 上它是 "strip" 或 "transform"。 */
function nodeStripsTypes(): boolean {
  return Boolean((process.features as { typescript?: unknown }).typescript);
}

type TsxRequire = (specifier: string, parentURL: string) => unknown;

/**
 * 用变量名导入：tsx 只是开发依赖，编译这份代码不需要它的类型，运行时找不到就给一句能照做的话。
 * 用它的 CommonJS 入口（tsx/cjs/api 的 require）而不是 tsImport：在主线程里编译，不另起加载器线程，快得多。
 */
async function tsxRequire(): Promise<TsxRequire> {
  const specifier = "tsx/cjs/api";
  try {
    const api = (await import(specifier)) as { require: TsxRequire };
    return api.require;
  } catch {
    throw new Error("加载 .ts 扩展需要 tsx（npm install -D tsx）；或者把扩展写成 .js。");
  }
}
// #endregion

/** 导入一个扩展文件，交回模块对象。 */
export async function importExtensionModule(file: string): Promise<unknown> {
  // #region lab 12.6
  if (file.endsWith(".ts") && !nodeStripsTypes()) return (await tsxRequire())(file, import.meta.url);
  const url = pathToFileURL(file);
  url.searchParams.set("mtime", String((await stat(file)).mtimeMs));
  return import(url.href);
  // #endregion
}

/**
 * 导入、取工厂、运行工厂，三步共用一个时限；任何一步失败都抛出，由 loadExtensions 记成错误。
 * 只给工厂计时不够：模块顶层的 await 在 import() 里就可能永远等下去。
 */
export async function loadExtension(file: string, options: LoadExtensionsOptions = {}): Promise<Extension> {
  // #region lab 12.6
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS;
  const load = async () => extensionFromFactory(file, factoryOf(await importExtensionModule(file), file));
  return withTimeout(load(), timeoutMs, `${path.basename(file)} 在 ${timeoutMs} ms 内没有加载完（顶层代码或工厂一直不结束），已放弃这个扩展`);
  // #endregion
}

/** dir 里的扩展文件按名字排序逐个加载；目录不存在就是没有扩展。 */
export async function loadExtensions(dir: string, options: LoadExtensionsOptions = {}): Promise<LoadExtensionsResult> {
  // #region lab 12.6
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => EXTENSION_FILE.test(name) && !name.endsWith(".d.ts")).sort();
  } catch {
    return { extensions: [], errors: [] };
  }
  const extensions: Extension[] = [];
  const errors: ExtensionError[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      extensions.push(await loadExtension(file, options));
    } catch (error) {
      errors.push({ extensionPath: file, event: "load", error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { extensions, errors };
  // #endregion
}
