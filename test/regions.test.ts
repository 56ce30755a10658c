import assert from "node:assert/strict";
import { test } from "node:test";

import { mergeThreeWay } from "../scripts/engine/continue.ts";
import { CourseError } from "../scripts/engine/errors.ts";
import { anchorProblem, applyAnchored, cutRegions, findRegions, withoutMarkers } from "../scripts/engine/regions.ts";

const FILE = "packages/pi-course/src/demo.ts";

const SOURCE = [
  "import { x } from \"./x.js\";",
  "",
  "// #region lab 9.1 辅助",
  "function helper(): number {",
  "  return 1;",
  "}",
  "// #endregion",
  "",
  "/** 对外的函数：签名和说明留在练习目录里。 */",
  "export function answer(): number {",
  "  // #region lab 9.1",
  "  return helper() + 41;",
  "  // #endregion",
  "}",
  "",
  "export class Box {",
  "  // #region lab 9.2 辅助",
  "  private value = 0;",
  "  // #endregion",
  "",
  "  get(): number {",
  "    // #region lab 9.2",
  "    return this.value;",
  "    // #endregion",
  "  }",
  "",
  "  // #region lab 9.2 辅助",
  "  private reset(): void {",
  "    this.value = 0;",
  "  }",
  "  // #endregion",
  "}",
  "",
].join("\n");

test("切出脚手架：函数体换成尚未实现，辅助声明连同接缝处的空行一起删去，其余逐字节不变", () => {
  const cut = cutRegions(SOURCE, FILE, new Set(["9.1", "9.2"]));
  assert.equal(
    cut,
    [
      "import { x } from \"./x.js\";",
      "",
      "/** 对外的函数：签名和说明留在练习目录里。 */",
      "export function answer(): number {",
      "  throw new Error(\"Lab 9.1 尚未实现\");",
      "}",
      "",
      "export class Box {",
      "  get(): number {",
      "    throw new Error(\"Lab 9.2 尚未实现\");",
      "  }",
      "}",
      "",
    ].join("\n"),
  );
});

test("只切还没填回的实践：已填回的区域连同标记原样留下，全部填回就是目标本身", () => {
  const partly = cutRegions(SOURCE, FILE, new Set(["9.2"]));
  assert.ok(partly.includes("  // #region lab 9.1\n  return helper() + 41;\n  // #endregion"));
  assert.ok(partly.includes("throw new Error(\"Lab 9.2 尚未实现\")"));
  assert.equal(cutRegions(SOURCE, FILE, new Set()), SOURCE);
});

test("声明的占位代码按标记的缩进写入，只替换内容里含 match 的那一个区域", () => {
  const placeholders = [{ file: FILE, lab: "9.2", match: "this.value", code: "// 临时版本\nreturn 0;" }];
  const cut = cutRegions(SOURCE, FILE, new Set(["9.2"]), placeholders);
  assert.ok(cut.includes("  get(): number {\n    // 临时版本\n    return 0;\n  }"));
  const ambiguous = [{ file: FILE, lab: "9.1", match: "nowhere", code: "return 0;" }];
  assert.throws(
    () => cutRegions(SOURCE, FILE, new Set(["9.1"]), ambiguous),
    (error: unknown) => error instanceof CourseError && /实践 9\.1 的占位代码应当恰好对应一个区域.*实际 0 个/.test(error.message),
  );
});

test("写错的标记：没闭合、嵌套、多出来的 #endregion、拼写不对，都指到文件和行号", () => {
  const expectInvalid = (lines: string[], pattern: RegExp) =>
    assert.throws(
      () => findRegions(lines.join("\n"), FILE),
      (error: unknown) => error instanceof CourseError && error.code === "REGION_INVALID" && pattern.test(error.message),
    );
  expectInvalid(["// #region lab 9.1", "x();"], /demo\.ts:1：lab 9\.1 的区域没有 #endregion/);
  expectInvalid(["// #region lab 9.1", "// #region lab 9.2", "// #endregion", "// #endregion"], /demo\.ts:2：区域不能嵌套/);
  expectInvalid(["x();", "// #endregion"], /demo\.ts:2：多出来的 #endregion/);
  expectInvalid(["// #region 9.1", "// #endregion"], /demo\.ts:1：区域标记应当写成/);
  assert.deepEqual(findRegions("const a = 1;\n", FILE), []);
});

test("扩展区域：练习目录里换回起点在这里的代码（去掉其中的标记），学习者在自己的写法上改；边界挪到改动过的行旁边时说清楚", () => {
  const parent = [
    "export function loop(items: string[]): string[] {",
    "  // #region lab 7.1",
    "  const out: string[] = [];",
    "  for (const item of items) out.push(item);",
    "  return out;",
    "  // #endregion",
    "}",
  ].join("\n");
  const target = [
    "export function loop(items: string[]): string[] {",
    "  // #region lab 7.1",
    "  const out: string[] = [];",
    "  // #endregion",
    "  // #region lab 9.2 扩展",
    "  for (const item of items) if (item !== \"\") out.push(item.trim());",
    "  // #endregion",
    "  // #region lab 7.1",
    "  return out;",
    "  // #endregion",
    "}",
  ].join("\n");
  assert.deepEqual(
    findRegions(target, FILE).map((region) => [region.lab, region.extend, region.helper]),
    [["7.1", false, false], ["9.2", true, false], ["7.1", false, false]],
  );
  const starter = cutRegions(target, FILE, new Set(["9.2"]), [], parent);
  assert.equal(
    starter,
    [
      "export function loop(items: string[]): string[] {",
      "  // #region lab 7.1",
      "  const out: string[] = [];",
      "  // #endregion",
      "  for (const item of items) out.push(item);",
      "  // #region lab 7.1",
      "  return out;",
      "  // #endregion",
      "}",
    ].join("\n"),
  );
  assert.equal(cutRegions(target, FILE, new Set(), [], parent), target, "填回之后就是目标本身");
  assert.throws(() => cutRegions(target, FILE, new Set(["9.2"])), (error: unknown) => error instanceof CourseError && /起点没有这个文件/.test(error.message));
  const moved = target.replace("  const out: string[] = [];", "  const out: string[] = []; // 本章也改了这一行");
  assert.throws(
    () => cutRegions(moved, FILE, new Set(["9.2"]), [], parent),
    (error: unknown) => error instanceof CourseError && /demo\.ts:5：实践 9\.2 的扩展区域前后最近的一行代码必须与起点相同/.test(error.message),
  );
  // 接续：学习者自己的第 07 章写法（没有标记，循环写成了别的样子）。本章的脚手架在扩展区域里是起点的代码，
  // 三方都去掉标记之后，本章改动的地方学习者没碰过、学习者改过的地方本章原样保留：合并干净，留下学习者的写法。
  const mine = parent.replace("  for (const item of items) out.push(item);", "  items.forEach((item) => out.push(item)); // 我的写法").replace(/ *\/\/ #(end)?region.*\n/g, "");
  const merged = mergeThreeWay(withoutMarkers(mine), withoutMarkers(parent), withoutMarkers(starter));
  assert.equal(merged, mine, "扩展区域里保留学习者自己的写法，由本章的实践去扩展它");
  assert.equal(withoutMarkers(target).includes("#region"), false);
  assert.equal(withoutMarkers(target).split("\n").length, target.split("\n").length - 6);
});

test("点名区域的锚点：只在那个实践的区域里找原文，文件别处同样的文字不算，替换也只落在区域里", () => {
  const file = "src/store.ts";
  const source = [
    "const limit = 1;",
    "export function append(): number {",
    "  // #region lab 10.2",
    "  const limit = 1;",
    "  return limit;",
    "  // #endregion",
    "}",
    "",
  ].join("\n");
  const anchor = { file, find: "const limit = 1;", replace: "const limit = 2;" };
  assert.deepEqual(anchorProblem(source, anchor), { field: "find", message: `原文在 ${file} 里出现 2 次，应当恰好 1 次` });
  assert.equal(anchorProblem(source, { ...anchor, region: "10.2" }), undefined);
  const replaced = applyAnchored(source, { ...anchor, region: "10.2" });
  assert.deepEqual(replaced.split("\n").slice(0, 4), ["const limit = 1;", "export function append(): number {", "  // #region lab 10.2", "  const limit = 2;"]);
  assert.equal(anchorProblem(source, { ...anchor, find: "return limit;", region: "10.2" }), undefined);
  assert.deepEqual(anchorProblem(source, { ...anchor, find: "export function", region: "10.2" }), {
    field: "find",
    message: `原文在 ${file} 的实践 10.2 区域里出现 0 次，应当恰好 1 次`,
  });
  assert.deepEqual(anchorProblem(source, { ...anchor, region: "10.3" }), {
    field: "region",
    message: `原文要在 ${file} 的实践 10.3 区域里找，文件里却没有这个实践的区域`,
  });
  assert.throws(() => applyAnchored(source, anchor), (error: unknown) => error instanceof CourseError && error.code === "ANCHOR_INVALID");
});
