// 在独立的子进程里调用 node:test 的 run()，把每个测试事件写成一行 JSON。
// 独立进程有两个原因：run() 拒绝在另一个测试文件内部递归运行；
// 而且被测项目不该继承套件自己的加载器（例如 tsx）。
import { existsSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { run } from "node:test";
import { fileURLToPath } from "node:url";

import { failureOf } from "./test-records.mjs";

const { files, pattern, timeoutMs } = JSON.parse(process.argv[2] ?? "{}");

// runner.ts 让驱动自成一个进程组，终端的 Ctrl-C 不再直接送到这里；
// 套件进程一没（父进程换了人），就连同测试进程一起结束，不留孤儿。
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) process.kill(-process.pid, "SIGKILL");
}, 500).unref();

// 测试子进程打开了源码映射（runner.ts 设的 --enable-source-maps）时，node:test 报告的 file
// 是映射后的 .ts 源码路径。记录里一律写回被要求运行的那个文件，调用方才能按文件归类。
const requested = new Map();
for (const file of files) {
  requested.set(file, file);
  for (const source of mappedSources(file)) requested.set(source, file);
}

function mappedSources(file) {
  const mapFile = `${file}.map`;
  if (!existsSync(mapFile)) return [];
  try {
    const map = JSON.parse(readFileSync(mapFile, "utf8"));
    return (map.sources ?? []).map((source) =>
      source.startsWith("file://") ? fileURLToPath(source) : path.resolve(path.dirname(file), map.sourceRoot ?? "", source),
    );
  } catch {
    return [];
  }
}

function fileOf(reported) {
  return requested.get(reported) ?? reported;
}

const stream = run({
  files,
  // 每个文件在自己的子进程里，彼此独立：几个一起跑（verify 的更早章节大多在等计时器和网络，不在算）。
  // 不全部同时开：章节测试里有几百毫秒到几秒的超时，开太多进程会让它们互相拖到超时（两核机器上是 3 个）
  concurrency: Math.min(Math.max(files.length, 1), availableParallelism() + 1),
  timeout: timeoutMs,
  ...(pattern === undefined ? {} : { testNamePatterns: [pattern] }),
});

// 整个文件没能运行时（例如 import 失败），node:test 只说 “test failed”；
// 真正的原因在那个文件的 stderr 里，取出第一行错误作为信息。
const stderrByFile = new Map();

function loadError(file) {
  const lines = (stderrByFile.get(file) ?? []).join("").split("\n").map((line) => line.trim());
  return lines.find((line) => /^(\w*Error\b|Error \[)/.test(line)) ?? lines.find((line) => line !== "" && !line.startsWith("node:"));
}

for await (const event of stream) {
  if (event.type === "test:stderr" && event.data.file) {
    const file = fileOf(event.data.file);
    const chunks = stderrByFile.get(file) ?? [];
    chunks.push(event.data.message);
    stderrByFile.set(file, chunks);
    continue;
  }
  if (event.type !== "test:pass" && event.type !== "test:fail") continue;
  const { data } = event;
  if (data.details?.type === "suite") continue;
  const file = fileOf(data.file ?? "");
  // 整个文件没能运行时，node:test 以文件路径为名报告；名字也换成被要求运行的那个路径
  const name = data.name === data.file ? file : data.name;
  const record = { name, file, ok: event.type === "test:pass", skipped: data.skip !== undefined };
  if (!record.ok) Object.assign(record, failureOf(data.details?.error));
  // 挂住的测试在各版本的 Node 上报告得不同（见 runner.ts 的 settleHangs），把原始的失败类型带回去
  if (!record.ok && data.details?.error?.failureType) record.failureType = data.details.error.failureType;
  if (!record.ok && record.name === record.file) {
    const reason = loadError(record.file);
    if (reason) record.message = reason;
  }
  process.stdout.write(`${JSON.stringify(record)}\n`);
}
