// 预热进程（warm-child.mjs）里的 node:test 报告器：每个测试一行带前缀的 JSON 记录，
// 前缀把记录和测试自己打印到标准输出的内容分开。
import { failureOf, RECORD_PREFIX } from "./test-records.mjs";

export default async function* report(source) {
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { data } = event;
    if (data.details?.type === "suite") continue;
    const record = { name: data.name, file: process.env.PI_COURSE_TEST_FILE ?? data.file ?? "", ok: event.type === "test:pass", skipped: data.skip !== undefined };
    if (!record.ok) Object.assign(record, failureOf(data.details?.error));
    yield `${RECORD_PREFIX}${JSON.stringify(record)}\n`;
  }
}
