// 套件测试文件（test/*.test.ts）的结果缓存：npm test 第二次运行时，输入一个字节也没变的测试文件
// 不必再跑一遍。自检的各项有自己更细的缓存（check-cache.ts）；这里只管套件测试，以整个文件为单位。
//
// 键是这个文件能读到的全部输入的哈希。套件测试会读课程、引擎、练习目录，会克隆套件（克隆取的是
// 已提交的 HEAD），会启动子进程，所以“能读到的”取最宽的一份：
// - 套件里每个没被 .gitignore 忽略的文件（已跟踪的与还没跟踪的）的路径与内容，
// - HEAD 的树（克隆出来的套件就是它）、测试文件自己的路径、
// - Node 的版本、平台、这台机器上测试会用到的程序在不在（例如书的浏览器测试要的 Chromium），
// - 以 PI_COURSE_ 开头的环境变量（缓存自己的统计文件除外）。
// 不读课文的文件在看不到课文的进程里运行（hide-lessons.mjs），它们的键不含课文的内容。
// 只记下整个文件通过、没有一项跳过、取消或待办的结果：跳过的测试（例如没有 Chromium）不会被当成通过。
// 缓存里的记录都是同样输入上一次真实跑出来的结果，不是跳过。
// 只用 Node 自带的模块：它在 tsx 之前运行。
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * 读课文（lessons/NN-…/lesson.md）的套件测试文件。其余的套件测试文件在看不到课文的进程里运行
 * （hide-lessons.mjs），键里不算课文的内容：改一章的课文，只有这些文件与读课文的自检项重做。
 */
export const LESSON_READERS = [
  "test/book.test.ts",
  "test/chapters.test.ts",
  "test/check-cache.test.ts",
  "test/hint.test.ts", // hint 的预测；别的文件里用到 hint 的检查也放在这里
  "test/lint.test.ts",
  "test/watch-session.test.ts", // 预测
  "test/watch.test.ts", // 预测
];

/**
 * 只读克隆里的课文的套件测试文件：它们克隆套件（取的是已提交的 HEAD），在克隆里编辑、导出、自检、预览。
 * 它们在看不到本套件课文的进程里运行（克隆里的课文照常看得到），键也不含工作区里的课文：
 * 没提交的课文改动与它们无关；提交了的改动改变 HEAD 的树，它们照常重跑。
 * 直接读本套件的课文会失败；把工作区的课文复制出去再读不会被发现，所以只列确实只经克隆读课文的文件。
 */
export const CLONE_LESSON_READERS = [
  "test/authoring.test.ts", // export 在克隆里重写课文里的提交号
  "test/bench.test.ts", // 克隆里的 npm run bench（course lint 与 practice 读课文）
  "test/book-browser.test.ts", // 克隆里的 npm run book -- --serve
  "test/selfcheck-fixture.test.ts", // 克隆里的 course check
];

/** 这个套件测试文件（相对套件根目录）是否在看不到本套件课文的进程里运行（键里不含工作区的课文）。 */
export function hidesLessons(file) {
  return /^test\/[^/]+\.test\.ts$/.test(file) && !LESSON_READERS.includes(file);
}

/**
 * 这个文件的测试进程里 PI_COURSE_HIDE_LESSONS 的值：1 表示一章课文也看不到；套件根目录表示只看不到本套件的课文
 * （CLONE_LESSON_READERS）；undefined 表示照常读课文。
 */
export function lessonHiding(file, kitRoot) {
  if (!hidesLessons(file)) return undefined;
  return CLONE_LESSON_READERS.includes(file) ? kitRoot : "1";
}

/** lessons/NN-…/lesson.md：课文本身（不是补丁、元数据或留出文件）。 */
const LESSON_TEXT = /^lessons\/[^/]+\/lesson\.md$/;

/** 测试会用到、又不一定装着的程序：在不在也是输入。 */
const PROGRAMS = ["/usr/bin/chromium", "/usr/bin/chromedriver"];
/** 这几个环境变量每次运行都不同（统计文件的临时路径），不算输入。 */
const VOLATILE_ENV = new Set(["PI_COURSE_SELFCHECK_STATS"]);

// ── 两种缓存共用的部分（自检的 check-cache.ts 也从这里取）──────────────

/** CI 设了（不是空串、0 或 false）：缓存一律不读不写。 */
export function isCi(env = process.env) {
  const ci = env.CI;
  return ci !== undefined && ci !== "" && ci !== "0" && ci.toLowerCase() !== "false";
}

/** 结果缓存放在哪里：默认在克隆自己的 node_modules/.cache 里；套件测试用 PI_COURSE_SELFCHECK_CACHE_DIR 隔开一份。 */
export function resultCacheDir(kitRoot, env = process.env) {
  return env.PI_COURSE_SELFCHECK_CACHE_DIR || path.join(kitRoot, "node_modules", ".cache", "pi-course-selfcheck");
}

/** 取一条记录；没有或写坏了都是 undefined（写坏的记录等于没有）。 */
export function readRecord(dir, key) {
  const file = path.join(dir, `${key}.json`);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** 记下一条：先写临时文件再改名，两个进程同时写同一个键也不会留下半个文件。 */
export function writeRecord(dir, key, record) {
  mkdirSync(dir, { recursive: true });
  const temporary = path.join(dir, `${key}.${process.pid}.tmp`);
  writeFileSync(temporary, JSON.stringify(record));
  renameSync(temporary, path.join(dir, `${key}.json`));
}

// ── 套件测试文件 ─────────────────────────────────────────────

/** 套件测试文件的记录：与自检缓存同一处，放在 kit-files/ 下。 */
export function kitFileCacheDir(kitRoot, env = process.env) {
  return path.join(resultCacheDir(kitRoot, env), "kit-files");
}

/**
 * 所有测试文件共用的那部分键：full 含课文，withoutLessons 把课文的内容换成“在”（给看不到课文的文件）。
 * 套件不是 git 仓库（下载的压缩包）时是 undefined：那时说不清克隆会读到什么，不用缓存。
 * 克隆出来的套件读的是 HEAD，HEAD 的树在两份键里都有：提交了的课文改动照样让所有文件重跑。
 */
export function sharedInputs(kitRoot, env = process.env) {
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: kitRoot, encoding: "buffer", maxBuffer: 64 * 1024 * 1024 });
  const head = spawnSync("git", ["rev-parse", "--verify", "--quiet", "HEAD^{tree}"], { cwd: kitRoot, encoding: "utf8" });
  if (listed.status !== 0 || head.status !== 0) return undefined;
  const full = createHash("sha256");
  const withoutLessons = createHash("sha256");
  const both = (chunk) => {
    full.update(chunk);
    withoutLessons.update(chunk);
  };
  both(`kit-files-v1\0${process.version}\0${process.platform}\0${process.arch}\0${head.stdout.trim()}\0`);
  const files = [...new Set(listed.stdout.toString("utf8").split("\0").filter((file) => file !== ""))].sort();
  for (const file of files) {
    const where = path.join(kitRoot, file);
    // 列出来却已删掉的已跟踪文件：“不在”本身也是输入
    both(`\0${file}\0`);
    const stat = lstatSync(where, { throwIfNoEntry: false });
    if (stat === undefined) both("\0<deleted>\0");
    else if (stat.isSymbolicLink()) both(`\0<link>${readlinkSync(where)}\0`);
    else if (stat.isFile()) {
      const content = readFileSync(where);
      full.update(content);
      withoutLessons.update(LESSON_TEXT.test(file) ? "\0<lesson>\0" : content);
    }
  }
  for (const program of PROGRAMS) both(`\0${program}=${existsSync(program)}`);
  for (const name of Object.keys(env).filter((key) => key.startsWith("PI_COURSE_") && !VOLATILE_ENV.has(key)).sort()) {
    both(`\0${name}=${env[name]}`);
  }
  return { full: full.digest("hex"), withoutLessons: withoutLessons.digest("hex") };
}

/** 一个测试文件（相对套件根目录）的键：看不到课文的文件用不含课文的那份。 */
export function fileKey(shared, file) {
  const base = hidesLessons(file) ? `hidden\0${shared.withoutLessons}` : `reads\0${shared.full}`;
  return createHash("sha256").update(`${base}\0${file}`).digest("hex");
}

/**
 * 报告器（file-results.mjs）写下的逐项记录 → 每个文件的计数。
 * 文件本身加载失败时 node 以文件为名记一项失败，也算进 failed；跑完的文件 finished 为真。
 */
export function countsByFile(lines) {
  const counts = new Map();
  for (const line of lines) {
    if (line.trim() === "") continue;
    let record;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    const entry = counts.get(record.file) ?? { passed: 0, failed: 0, skipped: 0, finished: false };
    if (record.done) {
      entry.finished = true;
      if (typeof record.ms === "number") entry.ms = record.ms;
      if (!record.ok) entry.failed++;
    } else if (record.skipped) entry.skipped++;
    else if (record.ok) entry.passed++;
    else entry.failed++;
    counts.set(record.file, entry);
  }
  return counts;
}

/** 各个套件测试文件上次跑了多久（毫秒），不论结果：只用来排先后，不是结果。 */
const DURATIONS_KEY = "durations";

export function readDurations(dir) {
  const recorded = readRecord(dir, DURATIONS_KEY);
  return recorded !== null && typeof recorded === "object" ? recorded : {};
}

/** 记下这次跑完的文件的用时，别的文件保留上次的。 */
export function recordDurations(dir, counts, kitRoot) {
  const durations = readDurations(dir);
  for (const [file, entry] of counts) {
    if (entry.finished && typeof entry.ms === "number") durations[path.relative(kitRoot, path.resolve(kitRoot, file)).split(path.sep).join("/")] = Math.round(entry.ms);
  }
  writeRecord(dir, DURATIONS_KEY, durations);
}

/**
 * 跑得久的文件先开：两个文件同时跑时，最后剩一个长文件独自跑的那段尾巴最短。
 * 没有用时记录的文件（新文件、第一次运行）排在最前，其余按上次的用时从长到短，用时一样时按名字。
 */
export function longestFirst(files, durations) {
  const ms = (file) => durations[file] ?? Number.POSITIVE_INFINITY;
  return [...files].sort((a, b) => ms(b) - ms(a) || (a < b ? -1 : a > b ? 1 : 0));
}

/** 只有这样的结果才进缓存：文件跑完了，至少一项通过，没有失败、跳过、取消或待办。 */
export function cacheable(counts) {
  return counts !== undefined && counts.finished && counts.passed > 0 && counts.failed === 0 && counts.skipped === 0;
}
