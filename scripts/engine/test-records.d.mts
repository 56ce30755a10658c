/** 见 test-records.mjs：测试结果的记录格式（报告器写出，runner.ts 读回）。 */
export declare const RECORD_PREFIX: string;
export declare function failureOf(error: unknown): { message: string; actual?: unknown; expected?: unknown; stack?: string };
