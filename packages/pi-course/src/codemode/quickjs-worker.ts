/**
 * worker 线程里的沙箱：一次运行一个新的 QuickJS 运行时（编译成 WebAssembly），跑完就整个丢掉。
 *
 * 限制全在 QuickJS 里面执行，不靠宿主去杀线程：
 *   截止时刻   运行时的中断处理函数每隔一段字节码就问一次“过了截止时刻没有 / 调用方取消了没有”，
 *              同步的 for(;;){} 与一串 await 组成的死循环都会停在它手里；截止时刻从宿主开始这次运行算起，
 *              等工具的时间也算在里面。
 *   内存       运行时的内存上限：超出时分配失败，脚本得到 out of memory，宿主毫发无损。
 *   栈         运行时的最大栈深：深递归得到 stack overflow。
 * 跑完（不论结局）释放桥、结果、VM 与运行时的每一个句柄，关掉端口，线程自己退出。
 */

import { parentPort, workerData } from "node:worker_threads";

import releaseSync from "@jitl/quickjs-wasmfile-release-sync";
import { DefaultIntrinsics, newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSHandle, type QuickJSRuntime } from "quickjs-emscripten-core";

import { installBridge, prelude, runnerSource, type Bridge } from "./bridge.js";
import type { HostMessage, WorkerMessage, WorkerOutcome, WorkerStart } from "./sandbox.js";

/** 同步版、release 构建、单独的 .wasm 文件；它的类型声明按 CommonJS 写，所以两种导入形状都接住。 */
const RELEASE_SYNC = ((releaseSync as { default?: unknown }).default ?? releaseSync) as Parameters<typeof newQuickJSWASMModuleFromVariant>[0] & { type: "sync" };

const start = workerData as WorkerStart;
const port = parentPort!;

/** 宿主回答之前，每个工具调用在这里等着；键是调用的序号。 */
const waiting = new Map<number, (json: string) => void>();
let wakeUp: (() => void) | undefined;

function wake(): void {
  wakeUp?.();
  wakeUp = undefined;
}

port.on("message", (message: HostMessage) => {
  if (message.type === "reply") {
    waiting.get(message.id)?.(message.json);
    waiting.delete(message.id);
  } else {
    // 取消：宿主已经在共享的标志里写下了，这里只是叫醒正在等工具的 pump。
    wake();
  }
});

function post(message: WorkerMessage): void {
  port.postMessage(message);
}

/** 此刻该不该停：调用方取消优先，其次是截止时刻。 */
export function stopReason(deadline: number, abort: Int32Array): WorkerOutcome | undefined {
  // #region lab 16.3
  if (Atomics.load(abort, 0) === 1) return { ok: false, kind: "aborted", message: "The run was aborted by the caller." };
  if (Date.now() >= deadline) return { ok: false, kind: "timeout", message: `The script did not finish within ${start.timeoutMs} ms and was stopped.` };
  return undefined;
  // #endregion
}

/** 新的运行时，三项限制都装在它身上。 */
export function limitedRuntime(runtime: QuickJSRuntime, options: WorkerStart): void {
  // #region lab 16.3
  runtime.setMemoryLimit(options.memoryBytes);
  runtime.setMaxStackSize(options.stackBytes);
  runtime.setInterruptHandler(() => stopReason(options.deadline, options.abort) !== undefined);
  // #endregion
}

function errorText(vm: QuickJSContext, handle: QuickJSHandle): string {
  const error = vm.dump(handle) as unknown;
  handle.dispose();
  if (typeof error === "object" && error !== null && "message" in error) {
    const { name, message } = error as { name?: unknown; message?: unknown };
    return `${typeof name === "string" ? name : "Error"}: ${String(message)}`;
  }
  return String(error);
}

/** 一直跑 VM 里待办的任务，直到脚本的结局出来；VM 里没事可做时等宿主来叫醒。 */
async function pump(vm: QuickJSContext, runtime: QuickJSRuntime, bridge: Bridge, finished: QuickJSHandle): Promise<WorkerOutcome> {
  // #region lab 16.3
  for (;;) {
    const jobs = runtime.executePendingJobs();
    if (jobs.error) {
      const message = errorText(vm, jobs.error);
      return stopReason(start.deadline, start.abort) ?? { ok: false, kind: "script", message };
    }
    const stop = stopReason(start.deadline, start.abort);
    if (stop !== undefined) return stop;
    const state = vm.getPromiseState(finished);
    if (state.type === "fulfilled") {
      const reply = JSON.parse(vm.getString(state.value)) as { ok: true; value: string } | { ok: false; error: string };
      state.value.dispose();
      return reply.ok ? { ok: true, value: reply.value } : { ok: false, kind: "script", message: reply.error };
    }
    // __piFinish 的两个分支都交回字符串，finished 从不 reject；executePendingJobs 跑完了所有待办的任务。
    if (bridge.inFlight === 0) {
      return { ok: false, kind: "script", message: "The script is waiting for a promise that nothing will ever settle." };
    }
    // 等工具的回答或 sleep 到点；截止时刻一到也要醒来。
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, start.deadline - Date.now()));
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  // #endregion
}

async function run(): Promise<WorkerOutcome> {
  const QuickJS = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC as never, { wasmModule: start.wasm as never }));
  const runtime = QuickJS.newRuntime();
  limitedRuntime(runtime, start);
  // 类型化数组的缓冲区不受运行时内存上限的约束（实测 200 MB 照样分配），脚本编排工具也用不着它们：不给。
  const vm = runtime.newContext({ intrinsics: { ...DefaultIntrinsics, TypedArrays: false } });
  let calls = 0;
  const timers = new Set<NodeJS.Timeout>();
  const bridge = installBridge(
    vm,
    {
      call: (name, argsJson) =>
        new Promise<string>((resolve) => {
          const id = ++calls;
          waiting.set(id, resolve);
          post({ type: "call", id, name, argsJson });
        }),
      log: (level, line) => post({ type: "log", level, line }),
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            resolve();
          }, ms);
          timers.add(timer);
        }),
    },
    wake,
  );
  let finished: QuickJSHandle | undefined;
  try {
    // 取消或截止时刻可能在 worker 刚起步时就到了：那时中断的是序言，结局照样是 aborted / timeout。
    const installed = vm.evalCode(prelude(), "prelude.js");
    if (installed.error) {
      const message = errorText(vm, installed.error);
      return stopReason(start.deadline, start.abort) ?? { ok: false, kind: "sandbox", message };
    }
    installed.value.dispose();
    const started = vm.evalCode(runnerSource(start.code), "codemode.js");
    if (started.error) {
      const message = errorText(vm, started.error);
      return stopReason(start.deadline, start.abort) ?? { ok: false, kind: "script", message };
    }
    finished = started.value;
    return await pump(vm, runtime, bridge, finished);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    finished?.dispose();
    bridge.dispose();
    vm.dispose();
    try {
      runtime.dispose();
    } catch {
      // 脚本在某个 await 之后把内存用光时，QuickJS 自己丢了几个对象的账，释放运行时会断言失败（stderr 上一句 Aborted(…)）。
      // 这次运行的结局已经定了（script：out of memory），worker 随即退出、整个 wasm 实例一起回收：不让它盖掉结局。
    }
  }
}

const outcome = await run().catch((error: unknown): WorkerOutcome => ({ ok: false, kind: "sandbox", message: error instanceof Error ? error.message : String(error) }));
post({ type: "done", outcome });
port.close();
