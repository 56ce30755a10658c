import { readFileSync } from "node:fs";
import { loadChapters } from "./engine/chapters.js";
import { unstatedWording } from "./engine/wording.js";
let total = 0;
for (const c of loadChapters("lessons")) {
  const test = readFileSync(c.focusedTest.path, "utf8");
  const u = unstatedWording(readFileSync(c.lessonPath, "utf8"), test);
  total += u.length;
  console.log(c.id, u.length);
  if (process.argv.includes(c.id)) for (const w of u) console.log(`   L${w.line} 「${w.fragment}」  ${w.pattern.slice(0, 90)}`);
}
console.log("total", total);
