// 在独立的子进程里调用 node:test 的 run()，把每个测试事件写成一行 JSON。
// 独立进程有两个原因：run() 拒绝在另一个测试文件内部递归运行；
// 而且被测项目不该继承套件自己的加载器（例如 tsx）。
import { run } from "node:test";

const { files, pattern, timeoutMs } = JSON.parse(process.argv[2] ?? "{}");

const stream = run({
  files,
  concurrency: true,
  timeout: timeoutMs,
  ...(pattern === undefined ? {} : { testNamePatterns: [pattern] }),
});

function serialisable(value) {
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return String(value);
  }
}

function failureOf(error) {
  const root = error?.cause ?? error;
  if (root === null || typeof root !== "object") return { message: String(root) };
  const failure = { message: String(root.message ?? root) };
  if ("actual" in root) failure.actual = serialisable(root.actual);
  if ("expected" in root) failure.expected = serialisable(root.expected);
  return failure;
}

// 整个文件没能运行时（例如 import 失败），node:test 只说 “test failed”；
// 真正的原因在那个文件的 stderr 里，取出第一行错误作为信息。
const stderrByFile = new Map();

function loadError(file) {
  const lines = (stderrByFile.get(file) ?? []).join("").split("\n").map((line) => line.trim());
  return lines.find((line) => /^(\w*Error\b|Error \[)/.test(line)) ?? lines.find((line) => line !== "" && !line.startsWith("node:"));
}

for await (const event of stream) {
  if (event.type === "test:stderr" && event.data.file) {
    const chunks = stderrByFile.get(event.data.file) ?? [];
    chunks.push(event.data.message);
    stderrByFile.set(event.data.file, chunks);
    continue;
  }
  if (event.type !== "test:pass" && event.type !== "test:fail") continue;
  const { data } = event;
  if (data.details?.type === "suite") continue;
  const record = { name: data.name, file: data.file ?? "", ok: event.type === "test:pass", skipped: data.skip !== undefined };
  if (!record.ok) Object.assign(record, failureOf(data.details?.error));
  if (!record.ok && record.name === record.file) {
    const reason = loadError(record.file);
    if (reason) record.message = reason;
  }
  process.stdout.write(`${JSON.stringify(record)}\n`);
}
