import { paint, runCommandLine, userCwd } from "./engine/cli.js";
import { usageError } from "./engine/errors.js";
import { chooseEvalProject, evaluate, loadEvalProject } from "./engine/eval.js";
import { KIT_ROOT } from "./engine/paths.js";

const HELP = `用法：npm run eval -- [目录] [--json] [--live]

第 14 章的毕业考：每个任务一个新的临时工作区，在里面跑课程项目自己的 createRuntime，
再用证据（跑完之后的文件、会话文件、模型收到的请求）逐项检查。离线、确定，几秒跑完。

  [目录]   哪个课程项目：默认是敲命令所在的练习目录，不在练习目录里就是套件自己
  --json   输出 JSON（通过数、总数、每个任务的报告），给脚本用
  --live   连 PI_COURSE_BASE_URL 指向的真实模型（还要 PI_COURSE_MODEL，可选 PI_COURSE_API_KEY）
           跑同样的任务；回答不再是脚本，所以只检查工作区里的文件
  --help   显示本说明

退出码：全部通过 0；有任务没通过 1；用法错误 2。`;

await runCommandLine(HELP, { json: { type: "boolean" }, live: { type: "boolean" } }, async ({ values, positionals }) => {
  if (positionals.length > 1) throw usageError("TOO_MANY_ARGS", `最多一个参数（课程项目的目录），收到了：${positionals.join(" ")}`);
  const project = await loadEvalProject(chooseEvalProject(KIT_ROOT, userCwd(), positionals[0]));
  const outcome = await evaluate(project, { live: values.live === true, env: process.env });
  if (values.json) {
    console.log(JSON.stringify({ project: project.dir, live: values.live === true, ...outcome.summary, tasks: outcome.reports }, null, 2));
  } else {
    console.log(`课程项目：${project.dir}${values.live ? `（真实模型：${process.env.PI_COURSE_MODEL ?? ""}，只检查工作区）` : ""}\n`);
    console.log(outcome.table);
    const { passed, total } = outcome.summary;
    console.log(passed === total ? paint("green", "\n全部通过。") : paint("red", `\n${total - passed} 个任务没有通过：原因见上。`));
  }
  if (outcome.summary.passed !== outcome.summary.total) process.exitCode = 1;
});
