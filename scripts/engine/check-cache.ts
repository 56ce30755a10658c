import { createHash, type Hash } from "node:crypto";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import path from "node:path";

import { isCi, readRecord, resultCacheDir, writeRecord } from "../ci/kit-file-cache.mjs";
import { filesUnder } from "../kit-cache.mjs";
import type { Chapter } from "./chapters.js";
import type { ContractCheck } from "./contract.js";
import type { SelfCheckContext } from "./selfcheck.js";

/**
 * 自检结果的缓存（npm test 的第二次运行）：键是这项检查读到的全部输入的哈希——
 * 本章与之前各章的提交（补丁链上任何一处改动都会换掉它之后每一章的提交号）、本章的 chapter.json、课文（只对读课文的检查）、
 * 之前各章的 chapter.json、留出测试、自检引擎与测试夹具的源码、依赖的锁文件、Node 的版本。
 * 输入一变，键就变，必定重新检查；缓存里只存通过的结果，它是同样输入的一次真实结果，不是跳过。
 * CI=true、PI_COURSE_SELFCHECK_CACHE=off（npm test -- --no-cache）时不读也不写。
 */
export interface CachedCheck {
  chapter: string;
  check: string;
  durationMs: number;
  at: string;
}

export const CACHE_ENV = "PI_COURSE_SELFCHECK_CACHE";
/** npm test 的启动脚本把命中 / 重做的记录写到这里，最后汇总成一行。 */
export const CACHE_STATS_ENV = "PI_COURSE_SELFCHECK_STATS";

export function cacheEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return !isCi(env) && env[CACHE_ENV] !== "off";
}

/** 每个套件目录只算一次（一次 npm test 里它不会变）。 */
const engineHashes = new Map<string, string>();

/** 自检引擎、测试夹具与依赖：它们变了，所有结果都作废。 */
function engineFingerprint(kitRoot: string): string {
  const known = engineHashes.get(kitRoot);
  if (known !== undefined) return known;
  const hash = createHash("sha256");
  const files = ["package.json", "package-lock.json", "tsconfig.json", "test/helpers.ts", ...filesUnder(kitRoot, "scripts"), ...filesUnder(kitRoot, "test/_selfcheck")];
  hashFiles(hash, kitRoot, files.sort());
  const digest = hash.digest("hex");
  engineHashes.set(kitRoot, digest);
  return digest;
}


/** 一项检查的缓存键；章节还不在课程历史里时是 undefined（不缓存）。 */
export function cacheKey(ctx: SelfCheckContext, chapter: Chapter, check: ContractCheck): string | undefined {
  const commits = ctx.history.chapters[chapter.id];
  if (!commits) return undefined;
  const hash = createHash("sha256");
  hash.update(`v1\0${process.version}\0${engineFingerprint(ctx.kitRoot)}\0${chapter.id}\0${check.id}\0`);
  hash.update(`${commits.parent}\0${commits.target}\0${JSON.stringify(commits.steps)}\0`);
  // 课文只算进读它的检查（见 ContractCheck.readsLesson）：改一章的课文，只重做这几项
  const chapterDir = chapter.dir;
  if (check.readsLesson) hash.update(readFileSync(chapter.lessonPath));
  hash.update(readFileSync(path.join(chapterDir, "chapter.json")));
  hashFiles(hash, chapterDir, filesUnder(chapterDir, "heldout").sort());
  // 之前各章的元数据（承诺 4 核对它们的计数）与全部章节的编号（承诺 7 核对课文里的命令）
  hash.update(ctx.chapters.map((other) => other.id).join(","));
  for (const other of ctx.chapters) {
    if (other.id < chapter.id) hash.update(readFileSync(path.join(other.dir, "chapter.json")));
  }
  return hash.digest("hex");
}

export function readCached(kitRoot: string, key: string): CachedCheck | undefined {
  return readRecord<CachedCheck>(resultCacheDir(kitRoot), key);
}

export function writeCached(kitRoot: string, key: string, record: CachedCheck): void {
  writeRecord(resultCacheDir(kitRoot), key, record);
}

/**
 * 给 npm test 的汇总行记一笔：hit（来自缓存）或 run（这次真做了）。
 * what 说是哪一类检查：自检项不写（汇总成“自检：…”），套件测试里缓存的检查写自己的名字（例如“接续链”）。
 */
export function noteCacheUse(kind: "hit" | "run", env: NodeJS.ProcessEnv = process.env, what?: string): void {
  const file = env[CACHE_STATS_ENV];
  if (file) appendFileSync(file, what === undefined ? `${kind}\n` : `${kind}\t${what}\n`);
}

/**
 * 套件测试里少数几项又慢、结论又只取决于课程内容的检查（接续链）用的缓存键：
 * 自检引擎与测试夹具、lessons/ 下的每个文件（补丁、元数据、课文、留出文件：课程历史就是从补丁建出来的）、
 * 这项测试自己读的源文件、Node 的版本。任何一个字节变了，键就变，整项重做。
 */
export function kitCheckKey(kitRoot: string, name: string, sources: readonly string[]): string {
  const hash = createHash("sha256");
  hash.update(`kit-v1\0${process.version}\0${engineFingerprint(kitRoot)}\0${name}\0`);
  hashFiles(hash, kitRoot, [...sources, ...filesUnder(kitRoot, "lessons")].sort());
  return hash.digest("hex");
}

/** 依次把每个文件（相对 root）的名字与内容写进 hash；不存在的文件跳过。缓存键都这样读文件。 */
function hashFiles(hash: Hash, root: string, files: readonly string[]): void {
  for (const file of files) {
    const full = path.join(root, file);
    if (existsSync(full)) hash.update(`\0${file}\0`).update(readFileSync(full));
  }
}
