// npm test 给每个测试进程预先加载（node --import）：套件测试文件不在 LESSON_READERS 里时，
// 这个进程与它启动的子进程都在 PI_COURSE_HIDE_LESSONS=1 下运行，loadChapters 给的课文路径指向不存在的文件
// （见 scripts/engine/chapters.ts 的 HIDE_LESSONS_ENV）；只经克隆读课文的文件（CLONE_LESSON_READERS）的值是套件根目录：
// 只藏本套件的课文，克隆里的照常看得到。这样的文件结果与课文无关，缓存键里就不算课文：
// 改一章的课文，它们不必重跑。一个新的测试要读课文，它会因读不到而失败，那时把它加进 LESSON_READERS。
// 只加不减：看不到课文的进程启动的测试进程（例如套件测试里再跑一遍 npm test）照样看不到。
// 只用 Node 自带的模块：它在 tsx 之前运行。
import path from "node:path";
import { fileURLToPath } from "node:url";

import { lessonHiding } from "./kit-file-cache.mjs";

const KIT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const file = process.argv[1];
const hiding = file === undefined ? undefined : lessonHiding(path.relative(KIT, file).split(path.sep).join("/"), KIT);
if (hiding !== undefined && process.env.PI_COURSE_HIDE_LESSONS !== "1") process.env.PI_COURSE_HIDE_LESSONS = hiding;
