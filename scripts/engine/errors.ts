/** 课程命令的唯一错误类型：稳定的 code、一句中文说明、退出码。 */
export class CourseError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** 2 = 用法错误（参数不对）；1 = 执行失败。 */
    readonly exitCode: 1 | 2 = 1,
    /** 那一句说明之前要先交代的几行（例如逐个文件说明为什么套不上）。 */
    readonly details: readonly string[] = [],
  ) {
    super(message);
    this.name = "CourseError";
  }
}

export function usageError(code: string, message: string): CourseError {
  return new CourseError(code, message, 2);
}

export function isCourseError(error: unknown): error is CourseError {
  return error instanceof CourseError;
}
