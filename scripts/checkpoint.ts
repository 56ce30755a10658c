
import { renderCard } from "./engine/card.js";
import { paint, print, runCommandLine } from "./engine/cli.js";
import { openChapter } from "./engine/course.js";
import { usageError } from "./engine/errors.js";

const HELP = `用法：npm run checkpoint -- <章节> [--json]

显示一章的卡片：起点与目标提交、聚焦测试、第一次红灯、实践命令，以及查看差异的命令。
<章节> 可以写 3、03 或 message-ir。

  --json   以 JSON 输出，供其他工具读取
  --help   显示本说明`;

await runCommandLine(HELP, { json: { type: "boolean" } }, async ({ values, positionals }) => {
  if (positionals.length > 1) throw usageError("TOO_MANY_ARGS", `只能指定一个章节，收到了：${positionals.join(" ")}`);
  const { chapter, history } = await openChapter(positionals[0]);
  const commits = history.chapters[chapter.id];
  if (values.json) {
    const { dir: _dir, lessonPath: _lesson, patchPath: _patch, ...meta } = chapter;
    console.log(JSON.stringify({ ...meta, branch: history.branch, commits }, null, 2));
    return;
  }
  print(...renderCard(chapter, history, paint));
});
