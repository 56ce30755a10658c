import path from "node:path";
import { fileURLToPath } from "node:url";

/** 课程套件的根目录：scripts/engine 往上两级。 */
export const KIT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
export const LESSONS_DIR = path.join(KIT_ROOT, "lessons");
export const COURSE_PACKAGE = "packages/pi-course";
export const COURSE_BRANCH = "course/build-your-own-pi";
export const EDIT_BRANCH = "course/edit";

/** 路径 b 是否等于 a 或位于 a 之内。 */
export function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
