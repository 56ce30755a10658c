// 引擎的模块之间没有引用环（连只引用类型的也算）：一个行为按名字找得到，读一个模块不必先读懂引用它的那个。
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript-5.9";

import { filesUnder } from "../scripts/kit-cache.mjs";

const KIT = path.resolve(import.meta.dirname, "..");
const SOURCE = /\.(ts|mts|mjs)$/;

/** 一个模块用相对路径引用（import / export … from）的模块，按磁盘上的文件名。 */
function relativeImports(file: string, known: ReadonlySet<string>): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const found: string[] = [];
  for (const statement of source.statements) {
    const specifier =
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier && ts.isStringLiteral(statement.moduleSpecifier)
        ? statement.moduleSpecifier.text
        : undefined;
    if (!specifier?.startsWith(".")) continue;
    const target = path.resolve(path.dirname(file), specifier);
    const candidates = [target.replace(/\.js$/, ".ts"), target.replace(/\.mjs$/, ".mts"), target];
    const hit = candidates.find((candidate) => known.has(candidate));
    if (hit) found.push(hit);
  }
  return found;
}

/** 图里的每一个环，写成 “a.ts → b.ts → a.ts”。 */
function importCycles(root: string): string[] {
  const files = filesUnder(root, ".", { skipDirs: ["node_modules", "dist"] })
    .filter((file) => SOURCE.test(file) && !file.endsWith(".d.mts"))
    .map((file) => path.join(root, file));
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, relativeImports(file, known)]));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") {
        const loop = [...stack.slice(stack.indexOf(next)), next];
        cycles.push(loop.map((entry) => path.relative(root, entry)).join(" → "));
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return cycles;
}

test("scripts/ 里没有引用环（只引用类型的也算）", () => {
  assert.deepEqual(importCycles(path.join(KIT, "scripts")), []);
});

test("教学代码 packages/pi-course/src 里也没有引用环：一个形状只在它第一次出现的地方声明，别处引用它", () => {
  assert.deepEqual(importCycles(path.join(KIT, "packages", "pi-course", "src")), []);
});

test("找环的办法真能找到环：两个互相引用的模块被报出来，只引用别人的那个不算", () => {
  const work = path.join(KIT, "test", "fixtures", "import-cycle");
  assert.deepEqual(importCycles(work), ["a.ts → b.ts → a.ts"]);
});
