import { mkdirSync } from "node:fs";
import path from "node:path";

import lockfile from "proper-lockfile";

import { CourseError } from "./errors.js";

/**
 * 在一个练习目录上独占地编译并运行测试。verify、hint、watch 都会清空 dist 再编译：
 * 两个同时运行时，一个的测试可能正好撞上另一个刚清空的 dist，报出假的 “Cannot find module”。
 * 锁是 proper-lockfile 的锁目录，放在 node_modules 里，学习者的文件旁边不会多出东西；
 * 持锁的进程崩溃后按过期时间回收。等的时候每隔一会儿再试，最多等 waitMs。
 */
export async function withPracticeLock<T>(dir: string, work: () => Promise<T>, waitMs = 180_000): Promise<T> {
  const modules = path.join(dir, "node_modules");
  mkdirSync(modules, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dir, {
      lockfilePath: path.join(modules, ".pi-course-build.lock"),
      realpath: false,
      stale: 20_000,
      retries: { retries: Math.ceil(waitMs / 250), factor: 1, minTimeout: 250, maxTimeout: 250 },
      onCompromised: () => {
        // 锁被当成过期回收了（例如机器长时间休眠）：继续把这次运行做完，结果照常报告
      },
    });
  } catch (error) {
    throw new CourseError("PRACTICE_BUSY", `${dir} 正在被另一个课程命令编译和测试（${(error as NodeJS.ErrnoException).code ?? "未知错误"}）；等它结束后再运行一次`);
  }
  try {
    return await work();
  } finally {
    await release().catch(() => {});
  }
}
