/**
 * 宿主这一头：每次运行开一个 worker 线程，里面是一个新的 QuickJS（quickjs-worker.ts），
 * 工具调用从 worker 传回宿主，由宿主执行、再把 JSON 回答传回去。
 *
 * WebAssembly 只编译一次：编译好的 WebAssembly.Module 可以原样交给任意多个 worker，
 * 每次运行只付实例化的钱。限制由 VM 自己执行（见 quickjs-worker.ts）；宿主只留一道后备：
 * 截止时刻再过 SANDBOX_GRACE_MS 还没有回音的 worker，才会被 terminate，报 sandbox。
 * 失败的种类是数据（SandboxFailureKind），这里从不抛出。
 */

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** 一次运行的限制。 */
export interface SandboxLimits {
  /** 从开始运行起的墙钟时限，等工具的时间也算。 */
  timeoutMs: number;
  /** QuickJS 运行时的内存上限（字节）。 */
  memoryBytes: number;
  /** QuickJS 运行时的最大栈深（字节）。 */
  stackBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = { timeoutMs: 10_000, memoryBytes: 32 * 1024 * 1024, stackBytes: 512 * 1024 };

/** worker 过了截止时刻还这么久没有回音，宿主才 terminate 它。 */
export const SANDBOX_GRACE_MS = 1_000;

export type SandboxFailureKind = "script" | "timeout" | "aborted" | "sandbox";

/** worker 交回的结局：成功时 value 是脚本返回值的 JSON。 */
export type WorkerOutcome = { ok: true; value: string } | { ok: false; kind: SandboxFailureKind; message: string };

/** 宿主交给 worker 的全部东西：编译好的模块、脚本、限制，以及一个共享的取消标志。 */
export interface WorkerStart {
  wasm: CompiledWasm;
  code: string;
  /** 截止时刻（Date.now() 的毫秒数）。 */
  deadline: number;
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  /** 共享内存上的一个标志：宿主写 1 就是取消；VM 正忙着跑一个死循环时，也读得到它。 */
  abort: Int32Array;
}

export type WorkerMessage =
  | { type: "call"; id: number; name: string; argsJson: string }
  | { type: "log"; level: string; line: string }
  | { type: "done"; outcome: WorkerOutcome };

export type HostMessage = { type: "reply"; id: number; json: string } | { type: "abort" };

export interface LogLine {
  level: string;
  line: string;
}

export type SandboxResult = WorkerOutcome & { logs: LogLine[] };

export interface SandboxOptions {
  limits?: Partial<SandboxLimits>;
  /** 脚本调用一个工具：交回 JSON 回答（bridge.ts 的 replyJson）。signal 在这次运行结束时触发。 */
  callTool?: (name: string, argsJson: string, signal: AbortSignal) => Promise<string>;
  signal?: AbortSignal;
  /** 换一个 worker 脚本（测试用它模拟崩溃的 worker）。 */
  workerUrl?: URL;
  /** 最多留几行 console；多出来的只计数。 */
  maxLogLines?: number;
}

/**
 * 编译好的 WebAssembly.Module（课程的 tsconfig 不带 DOM 的类型，这里只把它当作一个不透明的对象传来传去）。
 */
export type CompiledWasm = object;

const wasmApi = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<CompiledWasm> } }).WebAssembly;

let compiled: Promise<CompiledWasm> | undefined;

/** QuickJS 的 WebAssembly 模块：第一次用时读文件、编译，之后每次运行共用这一个。 */
export function quickJsModule(): Promise<CompiledWasm> {
  compiled ??= (async () => {
    const file = createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm");
    return wasmApi.compile(await readFile(file));
  })();
  return compiled;
}

export const QUICKJS_WORKER = new URL("./quickjs-worker.js", import.meta.url);

/**
 * 直接从 .ts 源码运行时（npm run eval 经 tsx 读源码，不先 build），旁边没有 .js 的 worker，worker 线程里也没有 tsx：
 * 用 build 出来的那一份（packages/pi-course/dist/src/codemode/）。编译好的 JS 照常用旁边的 .js。
 */
function workerEntry(url: URL): URL {
  if (!import.meta.url.endsWith(".ts") || !url.href.includes("/src/codemode/")) return url;
  return new URL(url.href.replace("/src/codemode/", "/dist/src/codemode/"));
}

/**
 * 在新的 worker 里运行一段脚本，交回它的结局与 console 的输出。
 * 工具调用在宿主这边执行；这次运行一结束（不论结局），还没回来的工具调用经 signal 取消。
 */
export async function runSandboxed(code: string, options: SandboxOptions = {}): Promise<SandboxResult> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const logs: LogLine[] = [];
  const maxLogLines = options.maxLogLines ?? 200;
  let dropped = 0;
  const finish = (outcome: WorkerOutcome): SandboxResult => {
    if (dropped > 0) logs.push({ level: "warn", line: `[${dropped} more console lines dropped]` });
    return { ...outcome, logs };
  };
  if (options.signal?.aborted) return finish({ ok: false, kind: "aborted", message: "The run was aborted by the caller." });
  // #region lab 16.3
  const deadline = Date.now() + limits.timeoutMs;
  let wasm: CompiledWasm;
  try {
    wasm = await quickJsModule();
  } catch (error) {
    return finish({ ok: false, kind: "sandbox", message: `QuickJS could not be loaded: ${String(error)}` });
  }
  const abort = new Int32Array(new SharedArrayBuffer(4));
  const start: WorkerStart = { wasm, code, deadline, ...limits, abort };
  const running = new AbortController();
  const worker = new Worker(workerEntry(options.workerUrl ?? QUICKJS_WORKER), { workerData: start });
  const outcome = await new Promise<WorkerOutcome>((resolve) => {
    let settled = false;
    const settle = (outcome: WorkerOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(backstop);
      options.signal?.removeEventListener("abort", onAbort);
      running.abort();
      resolve(outcome);
    };
    const onAbort = () => {
      Atomics.store(abort, 0, 1);
      worker.postMessage({ type: "abort" } satisfies HostMessage);
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    // 后备：VM 自己的限制失灵、worker 不再回话时才用得上。
    const backstop = setTimeout(() => {
      settle({ ok: false, kind: "sandbox", message: `The sandbox stopped answering ${SANDBOX_GRACE_MS} ms after its deadline and was terminated.` });
      void worker.terminate();
    }, limits.timeoutMs + SANDBOX_GRACE_MS);
    worker.on("message", (message: WorkerMessage) => {
      if (message.type === "done") return settle(message.outcome);
      if (message.type === "log") {
        if (logs.length < maxLogLines) logs.push({ level: message.level, line: message.line });
        else dropped += 1;
        return;
      }
      const call = options.callTool ?? (async () => JSON.stringify({ ok: false, error: "No tools are available here." }));
      void call(message.name, message.argsJson, running.signal)
        .catch((error: unknown) => JSON.stringify({ ok: false, error: error instanceof Error ? error.message : String(error) }))
        .then((json) => {
          if (!settled) worker.postMessage({ type: "reply", id: message.id, json } satisfies HostMessage);
        });
    });
    worker.on("error", (error) => settle({ ok: false, kind: "sandbox", message: `The sandbox worker crashed: ${error.message}` }));
    worker.on("exit", (exitCode) => settle({ ok: false, kind: "sandbox", message: `The sandbox worker exited (code ${exitCode}) before the script finished.` }));
  });
  return finish(outcome);
  // #endregion
}
