import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

import type { Chapter } from "./chapters.js";
import { CourseError } from "./errors.js";
import { applyAnchored } from "./regions.js";

/**
 * watch 的“保存 → 结果”：像学习者一样启动 npm run watch 的同一个脚本，
 * 在做完的练习目录里保存本章故障实验的改动（结果是当前实践与第一处偏差），
 * 从写完文件到那一屏出现在标准输出上计时；再把文件改回去（全部通过的一屏），也计时。
 */
export interface WatchSamples {
  /** 保存故障实验的改动 → 出现偏差的那一屏。 */
  failing: number[];
  /** 改回去 → 全部通过的那一屏。 */
  passing: number[];
}

/** 一屏的最后一行：跑完的一屏以监视说明结束；先行画出的一屏（第一处偏差已定）以“其余测试还在运行”结束。 */
const FINAL_END = /监视中（(文件事件|轮询)）：[^\n]*\n/;
const ANY_END = /(监视中（(文件事件|轮询)）：|其余测试还在运行)[^\n]*\n/;

export async function watchLatency(kitRoot: string, chapter: Chapter, dir: string, runs: number, env: NodeJS.ProcessEnv): Promise<WatchSamples> {
  const child = spawn(process.execPath, [path.join(kitRoot, "scripts", "launch.mjs"), "watch", chapter.id, dir], {
    cwd: kitRoot,
    env: { ...process.env, NO_COLOR: "1", INIT_CWD: kitRoot, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: Array<() => void> = [];
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  /** 等 from 之后画完的一屏里出现 wanted（final 为真时只看跑完的屏），交回那一屏。 */
  const screen = async (from: number, wanted: RegExp, final: boolean): Promise<string> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const screens = stdout.slice(from).split("─".repeat(60)).filter((text) => (final ? FINAL_END : ANY_END).test(text));
      const found = screens.find((text) => wanted.test(text));
      if (found !== undefined) return found;
      if (child.exitCode !== null || Date.now() > deadline) {
        throw new CourseError("BENCH_WATCH_FAILED", `watch 没有画出预期的一屏（${wanted.source}）：${stderr.trim().split("\n")[0] ?? ""}`);
      }
      await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), new Promise((resolve) => setTimeout(resolve, 200))]);
    }
  };

  const originals = new Map(chapter.fault.mutations.map((mutation) => [mutation.file, readFileSync(path.join(dir, mutation.file), "utf8")]));
  const broken = new Map<string, string>();
  for (const mutation of chapter.fault.mutations) {
    const source = broken.get(mutation.file) ?? originals.get(mutation.file) ?? "";
    broken.set(mutation.file, applyAnchored(source, mutation));
  }
  const save = (contents: Map<string, string>) => {
    for (const [file, text] of contents) writeFileSync(path.join(dir, file), text);
  };
  const samples: WatchSamples = { failing: [], passing: [] };
  try {
    await screen(0, /./, true);
    for (let run = 0; run < runs; run++) {
      await new Promise((resolve) => setTimeout(resolve, 300)); // 像人一样：两次保存之间总有停顿
      let from = stdout.length;
      let started = performance.now();
      save(broken);
      await screen(from, /第一处偏差/, false); // 先行的一屏或跑完的一屏，哪个先到算哪个
      samples.failing.push(performance.now() - started);
      if (!/第一处偏差/.test(await screen(from, /./, true))) throw new CourseError("BENCH_WATCH_FAILED", "故障实验的改动跑完后 watch 没有显示偏差");
      await new Promise((resolve) => setTimeout(resolve, 300));
      from = stdout.length;
      started = performance.now();
      save(originals);
      await screen(from, /聚焦测试全部通过/, true);
      samples.passing.push(performance.now() - started);
    }
  } finally {
    save(originals);
    child.kill("SIGINT");
    await closed;
  }
  return samples;
}
