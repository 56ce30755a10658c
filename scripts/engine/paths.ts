import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { COMPILED_KIT_MARKER } from "../kit-cache.mjs";

/** 课程套件的根目录：scripts/engine 往上两级；在编译出的副本里运行时，是标记文件写的那个目录。 */
export const KIT_ROOT = kitRootFrom(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", ".."));

function kitRootFrom(here: string): string {
  try {
    return (JSON.parse(readFileSync(path.join(here, COMPILED_KIT_MARKER), "utf8")) as { kitRoot: string }).kitRoot;
  } catch {
    return here;
  }
}
export const LESSONS_DIR = path.join(KIT_ROOT, "lessons");
export const COURSE_PACKAGE = "packages/pi-course";
export const COURSE_BRANCH = "course/build-your-own-pi";
export const EDIT_BRANCH = "course/edit";

/** 路径 b 是否等于 a 或位于 a 之内。 */
export function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}
