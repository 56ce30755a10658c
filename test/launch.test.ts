import assert from "node:assert/strict";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, test } from "node:test";

import { compiledKitDir } from "../scripts/kit-cache.mjs";
import { hasPty, KIT, runCommandInTerminal, spawnProcess, tempDir } from "./helpers.ts";

/** npm run <命令> 的入口 scripts/launch.mjs：运行与源码一致的编译副本，源码一变就换一份，编译不了就经 tsx 运行源码。 */
const work = tempDir("launch");
after(() => work.remove());

function launch(kit: string, args: readonly string[]) {
  return spawnProcess(process.execPath, [path.join(kit, "scripts", "launch.mjs"), ...args], { cwd: kit, env: { INIT_CWD: kit } });
}

test("没有这条套件命令：一行中文，退出码 2", async () => {
  for (const name of ["nope", "../package", ""]) {
    const result = await launch(KIT, [name]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /^错误：没有叫“.*”的套件命令/);
  }
});

test("改过的源码从不以旧副本运行：指纹变了就重新编译；类型错误编译不了时经 tsx 运行源码", { timeout: 60_000 }, async () => {
  // 克隆当前提交（不带课程历史），node_modules 链接到本套件的
  const kit = path.join(work.dir, "kit");
  const cloned = await spawnProcess("git", ["clone", "--quiet", "--no-hardlinks", "--single-branch", "--no-tags", KIT, kit], { cwd: work.dir });
  assert.equal(cloned.code, 0, cloned.stderr);
  symlinkSync(path.join(KIT, "node_modules"), path.join(kit, "node_modules"), "junction");
  const script = path.join(kit, "scripts", "checkpoint.ts");
  const original = readFileSync(script, "utf8");

  const first = await launch(kit, ["checkpoint", "--help"]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /^用法：npm run checkpoint/);
  const firstCopy = compiledKitDir(kit);
  assert.ok(existsSync(path.join(firstCopy, "scripts", "checkpoint.js")), "第一条命令应当留下编译副本");

  writeFileSync(script, original.replace("用法：npm run checkpoint", "改过的用法：npm run checkpoint"));
  const changed = await launch(kit, ["checkpoint", "--help"]);
  assert.equal(changed.code, 0, changed.stderr);
  assert.match(changed.stdout, /^改过的用法：/, "源码改了，运行的却是旧副本");
  assert.notEqual(compiledKitDir(kit), firstCopy);
  assert.ok(existsSync(path.join(compiledKitDir(kit), "scripts", "checkpoint.js")));
  assert.doesNotMatch(changed.stderr, /正在编译/, "接进管道时不写进度行");

  // 在终端里，要编译的那几秒先说一句在做什么，不让人对着空屏幕等
  if (hasPty) {
    writeFileSync(script, original.replace("用法：npm run checkpoint", "终端里的用法：npm run checkpoint"));
    const terminal = runCommandInTerminal([process.execPath, path.join(kit, "scripts", "launch.mjs"), "checkpoint", "--help"], kit);
    assert.equal(await terminal.closed, 0, terminal.output());
    assert.match(terminal.output(), /正在编译套件脚本.*…/);
    assert.match(terminal.output(), /终端里的用法：/);
  }

  // 能运行、但类型不对：编译不出副本，照样经 tsx 运行这份源码
  writeFileSync(script, `${original.replace("用法：npm run checkpoint", "带类型错误的用法：npm run checkpoint")}\nexport const wrong: number = "不是数字";\n`);
  const untyped = await launch(kit, ["checkpoint", "--help"]);
  assert.equal(untyped.code, 0, untyped.stderr);
  assert.match(untyped.stdout, /^带类型错误的用法：/);
  assert.ok(!existsSync(compiledKitDir(kit)), "编译失败时不该留下副本");
});
