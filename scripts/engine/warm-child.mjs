// 预热的测试进程：node 与 node:test 先启动好，等标准输入送来要运行的文件（一行 JSON {file}）再 import 它。
// 一个进程只运行一个文件一次（ES 模块不能重新加载）：测完就退出，由 warm-tests.ts 补上下一个。
// 报告器（warm-reporter.mjs）与测试名过滤（--test-name-pattern）在启动参数里。
import "node:test";
import { pathToFileURL } from "node:url";

import { RECORD_PREFIX } from "./test-records.mjs";

let input = "";
process.stdin.setEncoding("utf8");
// 标准输入在送来文件名之前就关了：启动它的 watch 已经退出，这个进程也不再有用
process.stdin.on("end", () => {
  if (!input.includes("\n")) process.exit(0);
});
process.stdin.on("data", (chunk) => {
  input += chunk;
  if (!input.includes("\n")) return;
  process.stdin.destroy(); // 不再读：测试结束后进程自然退出
  const { file } = JSON.parse(input.slice(0, input.indexOf("\n")));
  process.env.PI_COURSE_TEST_FILE = file;
  import(pathToFileURL(file).href).catch((error) => {
    // 文件没能加载（缺少导出、找不到模块、语法错误）：与 node --test 一样，以文件路径为名报告一次失败
    const name = error?.name ?? "Error";
    const message = `${name}${error?.code ? ` [${error.code}]` : ""}: ${error?.message ?? String(error)}`;
    process.stdout.write(`${RECORD_PREFIX}${JSON.stringify({ name: file, file, ok: false, skipped: false, message })}\n`);
    process.exitCode = 1;
  });
});
