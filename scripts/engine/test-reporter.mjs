// 测试进程里的 node:test 报告器（runner.ts 的 testProcessSpec 给冷启动与预热的进程都装上它）。
// 每个测试一条记录（多带 node:test 的原始失败类型，settleHangs 靠它统一挂住的测试），
// 前缀把记录和测试自己打印到标准输出的内容分开。
import { failureOf, RECORD_PREFIX } from "./test-records.mjs";

export default async function* report(source) {
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { data } = event;
    if (data.details?.type === "suite") continue;
    const file = process.env.PI_COURSE_TEST_FILE ?? data.file ?? "";
    const record = { name: data.name, file, ok: event.type === "test:pass", skipped: data.skip !== undefined, ms: data.details?.duration_ms };
    if (!record.ok) Object.assign(record, failureOf(data.details?.error));
    if (!record.ok && data.details?.error?.failureType) record.failureType = data.details.error.failureType;
    yield `${RECORD_PREFIX}${JSON.stringify(record)}\n`;
  }
}
