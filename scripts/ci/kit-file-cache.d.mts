/** 见 kit-file-cache.mjs：套件测试文件的结果缓存。 */
export interface FileCounts {
  passed: number;
  failed: number;
  skipped: number;
  finished: boolean;
  /** 整个文件的用时（毫秒），报告器给了才有。 */
  ms?: number;
}
export declare function isCi(env?: NodeJS.ProcessEnv): boolean;
export declare function resultCacheDir(kitRoot: string, env?: NodeJS.ProcessEnv): string;
export declare function readRecord<T = unknown>(dir: string, key: string): T | undefined;
export declare function writeRecord(dir: string, key: string, record: object): void;
export declare function kitFileCacheDir(kitRoot: string, env?: NodeJS.ProcessEnv): string;
export interface SharedInputs {
  full: string;
  withoutLessons: string;
}
export declare const LESSON_READERS: readonly string[];
export declare const CLONE_LESSON_READERS: readonly string[];
export declare function hidesLessons(file: string): boolean;
export declare function lessonHiding(file: string, kitRoot: string): string | undefined;
export declare function sharedInputs(kitRoot: string, env?: NodeJS.ProcessEnv): SharedInputs | undefined;
export declare function fileKey(shared: SharedInputs, file: string): string;
export declare function countsByFile(lines: readonly string[]): Map<string, FileCounts>;
export declare function cacheable(counts: FileCounts | undefined): boolean;
export declare function readDurations(dir: string): Record<string, number>;
export declare function recordDurations(dir: string, counts: Map<string, FileCounts>, kitRoot: string): void;
export declare function longestFirst(files: readonly string[], durations: Readonly<Record<string, number>>): string[];
