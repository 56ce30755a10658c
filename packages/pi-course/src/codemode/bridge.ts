/**
 * 桥：VM 里的脚本与宿主之间唯一的一条路，只过 JSON 字符串。
 *
 * QuickJS 的 VM 与宿主的 JavaScript 是两个世界：VM 里的值是宿主手里的句柄（QuickJSHandle），
 * 宿主的对象根本进不去。桥只放进去三个宿主函数，参数与返回值都是字符串（或一个兑现为字符串的 Promise）：
 *
 *   __piCall(name, argsJson)  调用一个工具；兑现为 '{"ok":true,"value":…}' 或 '{"ok":false,"error":…}'
 *   __piLog(level, line)      console 的一行
 *   __piSleep(ms)             等 ms 毫秒；宿主计时
 *
 * 序言（prelude）在 VM 里把它们收进闭包、从全局删掉，再搭出脚本看得见的 tools、console 与 sleep。
 * 字符串是最窄的接口：宿主的函数、原型、构造函数一个都不进 VM，脚本顺着 constructor 往上爬，
 * 爬到的只是 VM 自己的 Function。
 */

import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle } from "quickjs-emscripten-core";

/** 桥在宿主这一头要的三件事；全部只收发字符串。 */
export interface BridgeHost {
  /** 调用一个工具：名字与 JSON 参数 → 兑现为 JSON 回答（见上）。 */
  call(name: string, argsJson: string): Promise<string>;
  log(level: string, line: string): void;
  sleep(ms: number): Promise<void>;
}

/** 装进 VM 的桥：还有几个宿主的 Promise 没兑现，以及收尾时释放它们的句柄。 */
export interface Bridge {
  readonly inFlight: number;
  dispose(): void;
}

/** 宿主的回答：工具成功就是它的文字，失败就是给脚本的 Error 消息。 */
export function replyJson(reply: { ok: true; value: string } | { ok: false; error: string }): string {
  return JSON.stringify(reply);
}

/**
 * 在 VM 里运行的序言。它先拿走三个宿主函数（之后全局里再也找不到它们），再定义：
 *   tools.<name>(args)   参数写成 JSON 交给宿主；回答 ok 就兑现为文字，否则以 Error reject（只 reject 这一个调用）
 *   console.*            每个值能写成 JSON 的写成 JSON，字符串原样，用空格连起来交给宿主
 *   sleep(ms)            宿主计时的 Promise
 *   setTimeout 等        抛出一句点名 sleep 的英文：模型照着改就能用
 *   __piFinish(promise)  脚本的结局写成一个 JSON 字符串，宿主只读这一串
 */
export function prelude(): string {
  // #region lab 16.2
  return String.raw`(() => {
  const call = globalThis.__piCall, log = globalThis.__piLog, hostSleep = globalThis.__piSleep;
  delete globalThis.__piCall;
  delete globalThis.__piLog;
  delete globalThis.__piSleep;
  const errorText = (error) => (error instanceof Error ? error.name + ": " + error.message : String(error));
  const show = (value) => {
    if (typeof value === "string") return value;
    try {
      return JSON.stringify(value) ?? String(value);
    } catch {
      return String(value);
    }
  };
  const writer = (level) => (...values) => log(level, values.map(show).join(" "));
  globalThis.console = Object.freeze({ log: writer("log"), info: writer("info"), warn: writer("warn"), error: writer("error"), debug: writer("debug") });
  globalThis.tools = new Proxy({}, {
    get: (_, name) => typeof name !== "string" ? undefined : async (args = {}) => {
      const reply = JSON.parse(await call(name, JSON.stringify(args)));
      if (!reply.ok) throw new Error(reply.error);
      return reply.value;
    },
  });
  globalThis.sleep = (ms) => hostSleep(Math.max(0, Number(ms) || 0));
  for (const name of ["setTimeout", "setInterval", "setImmediate", "queueMicrotask"]) {
    globalThis[name] = () => {
      throw new Error(name + " is not available in a codemode script; use \`await sleep(ms)\` to wait.");
    };
  }
  globalThis.__piFinish = (running) => running.then(
    (value) => {
      try {
        return JSON.stringify({ ok: true, value: JSON.stringify(value === undefined ? null : value) });
      } catch (error) {
        return JSON.stringify({ ok: false, error: "The returned value is not JSON-serialisable (" + errorText(error) + ")." });
      }
    },
    (error) => JSON.stringify({ ok: false, error: errorText(error) }),
  );
})();`;
  // #endregion
}

/** 脚本是一个 async 函数的函数体：包起来交给 __piFinish，宿主等的就是这个 Promise 兑现出的字符串。 */
export function runnerSource(code: string): string {
  return `__piFinish((async () => {\n${code}\n})())`;
}

/**
 * 把三个宿主函数装进 VM 的全局（序言随后拿走它们）。VM 里每个句柄都要释放：
 * 函数句柄装好就放，字符串用完就放，没兑现的 Promise 留到 dispose() 一起放。
 * wake 在宿主的 Promise 兑现之后调用：VM 里有新的任务可以跑了。
 */
export function installBridge(vm: QuickJSContext, host: BridgeHost, wake: () => void): Bridge {
  // #region lab 16.2
  const pending = new Set<QuickJSDeferredPromise>();
  const settle = (deferred: QuickJSDeferredPromise, work: Promise<string | undefined>) => {
    pending.add(deferred);
    // 宿主这边失败了也只交回一个字符串：VM 里的序言据此 reject，宿主的 Error 对象不进 VM。
    const answered = work.catch((error: unknown) => replyJson({ ok: false, error: error instanceof Error ? error.message : String(error) }));
    void answered.then((value) => {
      // 运行已经收尾（dispose 过了）的，不再碰 VM。
      if (!pending.delete(deferred)) return;
      const handle = value === undefined ? vm.undefined : vm.newString(value);
      deferred.resolve(handle);
      handle.dispose();
      deferred.dispose();
      wake();
    });
    return deferred.handle;
  };
  const functions: [string, (...args: QuickJSHandle[]) => QuickJSHandle | undefined][] = [
    ["__piCall", (name, argsJson) => settle(vm.newPromise(), host.call(vm.getString(name!), vm.getString(argsJson!)))],
    ["__piLog", (level, line) => void host.log(vm.getString(level!), vm.getString(line!))],
    ["__piSleep", (ms) => settle(vm.newPromise(), host.sleep(vm.getNumber(ms!)).then(() => undefined))],
  ];
  for (const [name, implementation] of functions) {
    const handle = vm.newFunction(name, implementation);
    vm.setProp(vm.global, name, handle);
    handle.dispose();
  }
  return {
    get inFlight() {
      return pending.size;
    },
    dispose() {
      for (const deferred of pending) deferred.dispose();
      pending.clear();
    },
  };
  // #endregion
}
