/**
 * 反例，只给故障实验用：同样的协议、同样的序言，脚本却交给 node:vm 在 worker 里跑（上游 pi 早先的做法）。
 *
 * node:vm 只是换了一套全局对象，脚本与宿主还在同一个 V8 堆里：交进去的宿主函数、它们的原型与构造函数
 * 都是宿主的，顺着 constructor 爬两步就拿到宿主的 Function，再到 process。它的 timeout 只管同步的那一段，
 * 一串 await 组成的死循环拦不住；同步的死循环里也读不到取消；内存没有上限。
 * 第 16 章的沙箱为此换成 worker 里的 QuickJS（quickjs-worker.ts）。
 */

import { parentPort, workerData } from "node:worker_threads";
import { runInNewContext } from "node:vm";

import { prelude, runnerSource } from "./bridge.js";
import type { HostMessage, WorkerMessage, WorkerOutcome, WorkerStart } from "./sandbox.js";

const start = workerData as WorkerStart;
const port = parentPort!;
const waiting = new Map<number, (json: string) => void>();
let calls = 0;
let finish: (outcome: WorkerOutcome) => void = () => {};

const timedOut: WorkerOutcome = { ok: false, kind: "timeout", message: `The script did not finish within ${start.timeoutMs} ms and was stopped.` };

port.on("message", (message: HostMessage) => {
  if (message.type === "reply") waiting.get(message.id)?.(message.json);
  else finish({ ok: false, kind: "aborted", message: "The run was aborted by the caller." });
});

function post(message: WorkerMessage): void {
  port.postMessage(message);
}

/** 宿主的函数直接放进 context：这正是漏洞所在（它们的 constructor 是宿主的 Function）。 */
const globals = {
  __piCall: (name: string, argsJson: string) =>
    new Promise<string>((resolve) => {
      const id = ++calls;
      waiting.set(id, resolve);
      post({ type: "call", id, name, argsJson });
    }),
  __piLog: (level: string, line: string) => post({ type: "log", level, line }),
  __piSleep: (ms: number) => new Promise((resolve) => setTimeout(resolve, ms)),
};

function run(): Promise<WorkerOutcome> {
  return new Promise<WorkerOutcome>((resolve) => {
    finish = resolve;
    const timer = setTimeout(() => resolve(timedOut), Math.max(0, start.deadline - Date.now()));
    timer.unref();
    try {
      const timeout = Math.max(1, start.deadline - Date.now());
      runInNewContext(prelude(), globals, { timeout });
      const running = runInNewContext(runnerSource(start.code), globals, { timeout }) as Promise<string>;
      void running.then((json) => {
        const reply = JSON.parse(json) as { ok: true; value: string } | { ok: false; error: string };
        resolve(reply.ok ? { ok: true, value: reply.value } : { ok: false, kind: "script", message: reply.error });
      });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      resolve(code === "ERR_SCRIPT_EXECUTION_TIMEOUT" ? timedOut : { ok: false, kind: "script", message: String(error) });
    }
  });
}

post({ type: "done", outcome: await run() });
port.close();
process.exit(0);
