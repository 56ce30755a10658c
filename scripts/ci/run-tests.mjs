// npm test 的最后一步：运行套件测试与课程自检（node --test，两个文件同时跑），最后汇总缓存用了多少。
//   npm test                    第二次起，输入没变的自检项与套件测试文件取自缓存（node_modules/.cache/pi-course-selfcheck）
//   npm test -- --no-cache      全部重新检查（CI=true 时也一样）
//   npm test -- --test-name-pattern="第 07 章"   其余 --test… 选项原样交给 node --test（这时套件测试文件不取缓存）
// 只用 Node 自带的模块。
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { cacheable, countsByFile, fileKey, isCi, kitFileCacheDir, longestFirst, readDurations, readRecord, recordDurations, sharedInputs, writeRecord } from "./kit-file-cache.mjs";

const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== "--no-cache" && !arg.startsWith("--test"));
if (unknown.length > 0) {
  console.error(`npm test 只接受 --no-cache 与 node --test 的 --test… 选项，不认识：${unknown.join(" ")}`);
  process.exit(2);
}
const noCache = args.includes("--no-cache");
const testOptions = args.filter((arg) => arg.startsWith("--test"));

const files = (dir) =>
  readdirSync(path.join(KIT, dir))
    .filter((name) => name.endsWith(".test.ts"))
    .sort()
    .map((name) => `${dir}/${name}`);
const scratch = mkdtempSync(path.join(os.tmpdir(), "pi-course-test-stats-"));
const stats = path.join(scratch, "cache.txt");
const results = path.join(scratch, "results.jsonl");
const env = { ...process.env, PI_COURSE_SELFCHECK_STATS: stats };
if (noCache) env.PI_COURSE_SELFCHECK_CACHE = "off";
const ci = isCi();
const off = noCache || ci || env.PI_COURSE_SELFCHECK_CACHE === "off";
const offReason = noCache ? "--no-cache" : ci ? "CI=true" : "PI_COURSE_SELFCHECK_CACHE=off";

// 套件测试文件：输入没变、上次整个通过的文件取自缓存，不再跑（选了部分测试时不取，免得拿整份结果顶替）
const kitFiles = files("test");
const kitCacheDir = kitFileCacheDir(KIT, env);
const shared = off || testOptions.length > 0 ? undefined : sharedInputs(KIT, env);
const keys = new Map(shared === undefined ? [] : kitFiles.map((file) => [file, fileKey(shared, file)]));
const fromCache = kitFiles.filter((file) => keys.has(file) && readRecord(kitCacheDir, keys.get(file)) !== undefined);
const toRun = kitFiles.filter((file) => !fromCache.includes(file));
// 自检分片与要跑的套件测试文件，跑得久的先开：用的是上次整个文件跑下来的用时，和结果一样放在缓存目录里
// （不用缓存、只选了部分测试时没有用时，照旧先自检、再按名字）。
const ordered = longestFirst([...files("test/_selfcheck"), ...toRun], shared === undefined ? {} : readDurations(kitCacheDir));

// 默认的报告器照旧写到终端（Node 23 起接进管道也是 spec，之前是 tap）；另一个报告器逐项记下结果，供缓存用
const userReporter = testOptions.some((option) => option.startsWith("--test-reporter"));
const defaultReporter = process.stdout.isTTY || Number(process.versions.node.split(".")[0]) >= 23 ? "spec" : "tap";
const reporters = userReporter
  ? []
  : [`--test-reporter=${defaultReporter}`, "--test-reporter-destination=stdout", "--test-reporter=./scripts/ci/file-results.mjs", `--test-reporter-destination=${results}`];

// hide-lessons.mjs：不读课文的套件测试文件在看不到课文的进程里运行（见 kit-file-cache.mjs 的 LESSON_READERS）
const child = spawn(
  process.execPath,
  ["--import", "tsx", "--import", "./scripts/ci/hide-lessons.mjs", "--test", "--test-concurrency=2", ...reporters, ...testOptions, ...ordered],
  { cwd: KIT, env, stdio: "inherit" },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  let hits = 0;
  let runs = 0;
  /** 套件测试里缓存的检查（例如接续链）：名字 → 来自缓存 / 重新做的项数。 */
  const kitChecks = new Map();
  try {
    for (const line of readFileSync(stats, "utf8").split("\n")) {
      const [kind, what] = line.split("\t");
      if (what !== undefined) {
        const counts = kitChecks.get(what) ?? { hit: 0, run: 0 };
        if (kind === "hit" || kind === "run") counts[kind]++;
        kitChecks.set(what, counts);
      } else if (kind === "hit") hits++;
      else if (kind === "run") runs++;
    }
  } catch {
    // 一项自检也没跑（例如只选了套件测试）
  }
  let counts = new Map();
  try {
    counts = countsByFile(readFileSync(results, "utf8").split("\n"));
  } catch {
    // 没有逐项记录（例如自己选了报告器）：这次什么也不记
  }
  if (shared !== undefined) recordDurations(kitCacheDir, counts, KIT);
  let recorded = 0;
  // 跑的途中套件里有文件改了（例如一边跑一边编辑）：这次的结果对应不上任何一份输入，一个也不记
  const unchanged = shared !== undefined && JSON.stringify(sharedInputs(KIT, env)) === JSON.stringify(shared);
  for (const file of unchanged ? toRun : []) {
    const key = keys.get(file);
    const fileCounts = counts.get(path.join(KIT, file));
    if (key === undefined || !cacheable(fileCounts)) continue;
    writeRecord(kitCacheDir, key, { file, tests: fileCounts.passed, at: new Date().toISOString() });
    recorded++;
  }
  rmSync(scratch, { recursive: true, force: true });
  for (const [what, counts] of kitChecks) {
    console.log(
      counts.hit > 0
        ? `${what}：${counts.hit} 步来自缓存（同样的输入上次整条通过）${counts.run > 0 ? `，${counts.run} 步这次重新走` : ""}`
        : `${what}：${counts.run} 步这次重新走${off ? `（${offReason}，不用缓存）` : ""}`,
    );
  }
  if (shared !== undefined) {
    console.log(
      fromCache.length > 0
        ? `套件测试：${fromCache.length} 个文件来自缓存（同样的输入上次整个通过），${toRun.length} 个文件这次重新跑${recorded > 0 ? `，其中 ${recorded} 个记进缓存` : ""}`
        : `套件测试：${toRun.length} 个文件这次重新跑，${recorded} 个整个通过、记进缓存${unchanged ? "" : "（跑的途中套件里有文件改了，这次一个也不记）"}`,
    );
  } else if (off) {
    console.log(`套件测试：${kitFiles.length} 个文件全部重新跑（${offReason}，不用缓存）`);
  }
  if (hits + runs > 0) {
    console.log(
      off
        ? `自检：${runs} 项全部重新检查（${offReason}，不用缓存）`
        : `自检：${hits} 项来自缓存（同样的输入上次检查通过），${runs} 项这次重新检查；要全部重做：npm test -- --no-cache`,
    );
  }
  process.exit(signal ? 1 : (code ?? 1));
});
