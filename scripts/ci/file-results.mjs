// npm test 的第二个报告器：每项测试一行 JSON（哪个文件、通过没有、跳过没有），
// run-tests.mjs 据此判断哪些套件测试文件整个通过、可以记进缓存（见 kit-file-cache.mjs）。
// 跳过与待办都记作 skipped：那样的文件不进缓存。一个文件跑完时另记一行 done（node 以文件为名
// 报一次 test:complete；Node 20 用完整路径，Node 22 起用命令行上给的路径，多半是相对的）：被中断、没跑完的文件不进缓存。
// done 那一行带着整个文件的用时：下一次先开跑得久的文件（见 run-tests.mjs）。
import path from "node:path";

export default async function* fileResults(source) {
  for await (const event of source) {
    if (event.type === "test:complete" && event.data.nesting === 0 && event.data.file !== undefined) {
      const { file, name } = event.data;
      if (path.resolve(name) === path.resolve(file)) yield `${JSON.stringify({ file, done: true, ok: event.data.details?.passed !== false, ms: event.data.details?.duration_ms })}\n`;
      continue;
    }
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { data } = event;
    if (data.details?.type === "suite") continue;
    const skipped = data.skip !== undefined || data.todo !== undefined;
    yield `${JSON.stringify({ file: data.file ?? "", ok: event.type === "test:pass", skipped })}\n`;
  }
}
