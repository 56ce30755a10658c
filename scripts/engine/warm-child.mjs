// 预热的测试进程：node 与 node:test 先启动好，等标准输入送来要运行的文件（一行 JSON {file}）再 import 它。
// 一个进程只运行一个文件一次（ES 模块不能重新加载）：测完就退出，由 watch/warm-tests.ts 补上下一个。
// 参数、环境、报告器与冻结 assert 的预加载和冷启动的进程完全相同（runner.ts 的 testProcessSpec）。
import "node:test";
import { pathToFileURL } from "node:url";

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
  // 文件没能加载（缺少导出、找不到模块、语法错误）时不在这里接住：与直接运行这个文件一样，
  // 由 node 把错误写到 stderr、以非零状态退出，runner 再记下同一条“文件没能运行”。
  void import(pathToFileURL(file).href);
});
