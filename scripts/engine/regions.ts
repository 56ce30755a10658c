import { CourseError } from "./errors.js";

/**
 * 目标代码里的实践区域：
 *
 *   // #region lab 5.1        实践 5.1 要写的函数体；练习目录里换成 throw new Error("Lab 5.1 尚未实现")
 *   // #region lab 5.3 辅助   实践 5.3 要另写的辅助声明（函数、字段）；练习目录里整段删去
 *   // #region lab 9.2 扩展   实践 9.2 要扩展的、更早实践写下的代码；练习目录里换回起点在这里的样子
 *                            （接续时就是学习者自己的写法），学习者在它上面改
 *   // #endregion
 *
 * 标记各占一整行，不嵌套。练习目录的脚手架就是把本章实践的区域从目标里切掉，其余逐字节照旧。
 */
export interface Region {
  lab: string;
  helper: boolean;
  /** 扩展区域：本章改动更早实践的代码。练习目录里是起点在这里的代码，而不是占位。 */
  extend: boolean;
  /** 标记行的缩进：占位代码按它缩进。 */
  indent: string;
  /** #region 与 #endregion 所在行（从 0 数）。 */
  start: number;
  end: number;
}

/** 一个区域的占位代码：默认是那句 throw；个别区域要让更早的实践能跑通，另外声明。 */
export interface Placeholder {
  file: string;
  lab: string;
  /** 区域内容里的一段原文，用来在同一实践的几个区域中指认这一个。 */
  match: string;
  code: string;
}

const OPEN = /^([ \t]*)\/\/ #region lab (\d+\.\d+)( 辅助| 扩展)?$/;
const CLOSE = /^[ \t]*\/\/ #endregion$/;
const LOOSE = /^\s*\/\/\s*#(?:end)?region\b/;

export function notImplemented(lab: string): string {
  return `throw new Error("Lab ${lab} 尚未实现");`;
}

/** 找出文件里的全部区域；标记写错、没闭合或嵌套时抛出一句指到行号的错误。 */
export function findRegions(source: string, file: string): Region[] {
  const lines = source.split("\n");
  const regions: Region[] = [];
  let open: Omit<Region, "end"> | undefined;
  lines.forEach((line, index) => {
    const where = `${file}:${index + 1}`;
    const opening = OPEN.exec(line);
    if (opening) {
      if (open) throw new CourseError("REGION_INVALID", `${where}：区域不能嵌套（第 ${open.start + 1} 行的 lab ${open.lab} 还没有 #endregion）`);
      open = { lab: opening[2] ?? "", helper: opening[3] === " 辅助", extend: opening[3] === " 扩展", indent: opening[1] ?? "", start: index };
    } else if (CLOSE.test(line)) {
      if (!open) throw new CourseError("REGION_INVALID", `${where}：多出来的 #endregion，前面没有 #region`);
      regions.push({ ...open, end: index });
      open = undefined;
    } else if (LOOSE.test(line)) {
      throw new CourseError("REGION_INVALID", `${where}：区域标记应当写成 // #region lab N.M（或加“ 辅助”“ 扩展”）与 // #endregion`);
    }
  });
  if (open) throw new CourseError("REGION_INVALID", `${file}:${open.start + 1}：lab ${open.lab} 的区域没有 #endregion`);
  return regions;
}

/**
 * 切掉 cut 里各实践的区域：函数体换成占位代码，辅助声明整段删去，其余各行原样保留。
 * 不在 cut 里的区域（更早的实践已填回，或别的章节的区域）连同标记一起留下。
 */
export function cutRegions(
  source: string,
  file: string,
  cut: ReadonlySet<string>,
  placeholders: readonly Placeholder[] = [],
  parent?: string,
): string {
  const lines = source.split("\n");
  const regions = findRegions(source, file).filter((region) => cut.has(region.lab));
  const parentLines = parent?.split("\n");
  const aligned = parentLines === undefined ? undefined : alignLines(parentLines, lines);
  const ownPlaceholders = placeholders.filter((placeholder) => placeholder.file === file && cut.has(placeholder.lab));
  const chosen = new Map<Region, Placeholder>();
  for (const placeholder of ownPlaceholders) {
    const hits = placeholderRegions(lines, regions, placeholder);
    if (hits.length !== 1) {
      throw new CourseError(
        "REGION_INVALID",
        `${file}：实践 ${placeholder.lab} 的占位代码应当恰好对应一个区域（内容含「${placeholder.match}」），实际 ${hits.length} 个`,
      );
    }
    chosen.set(hits[0] as Region, placeholder);
  }
  const out: string[] = [];
  let next = 0;
  for (const region of regions) {
    out.push(...lines.slice(next, region.start));
    next = region.end + 1;
    if (region.extend) {
      if (parentLines === undefined || aligned === undefined) {
        throw new CourseError("REGION_INVALID", `${file}:${region.start + 1}：实践 ${region.lab} 的扩展区域要换回起点的代码，可起点没有这个文件`);
      }
      out.push(...parentSpan(parentLines, aligned, region, file, lines));
      continue;
    }
    if (!region.helper) {
      const code = chosen.get(region)?.code ?? notImplemented(region.lab);
      out.push(...code.split("\n").map((line) => (line === "" ? "" : `${region.indent}${line}`)));
      continue;
    }
    // 删去整段声明后收拾接缝：不留连续的空行，也不在 { 之后或 } 之前留空行。
    const before = out.at(-1);
    const after = lines[next];
    if (after?.trim() === "" && (before === undefined || before.trim() === "" || before.trimEnd().endsWith("{"))) next += 1;
    else if (before?.trim() === "" && after?.trimStart().startsWith("}")) out.pop();
  }
  out.push(...lines.slice(next));
  return out.join("\n");
}

/** 占位代码对应的区域：同一实践的函数体区域里，内容含 match 的那些（应当恰好一个）。 */
export function placeholderRegions(lines: readonly string[], regions: readonly Region[], placeholder: Pick<Placeholder, "lab" | "match">): Region[] {
  return regions.filter(
    (region) => region.lab === placeholder.lab && !region.helper && lines.slice(region.start + 1, region.end).join("\n").includes(placeholder.match),
  );
}

/** 文件里属于这些实践的区域个数。 */
export function countRegions(source: string, file: string, labs: ReadonlySet<string>): number {
  return findRegions(source, file).filter((region) => labs.has(region.lab)).length;
}

/**
 * 扩展区域在起点里对应的那几行。区域标记不算数（本章常把更早实践的区域一分为二，标记行会挪动）：
 * 区域前后最近的两行代码必须是本章没有改动的行（在两个版本里对得上），它们在起点里夹住的代码，
 * 去掉其中的区域标记，就是本章要扩展的原代码。对不上时说出来：作者把区域的边界挪到没改动的行旁边即可。
 */
function parentSpan(parent: readonly string[], aligned: ReadonlyMap<number, number>, region: Region, file: string, target: readonly string[]): string[] {
  let above = region.start - 1;
  while (above >= 0 && isMarker(target[above]!)) above--;
  let below = region.end + 1;
  while (below < target.length && isMarker(target[below]!)) below++;
  const before = aligned.get(above);
  const after = aligned.get(below);
  if (before === undefined || after === undefined) {
    throw new CourseError(
      "REGION_INVALID",
      `${file}:${region.start + 1}：实践 ${region.lab} 的扩展区域前后最近的一行代码必须与起点相同（本章没有改动它们），这样才知道起点里对应的是哪几行`,
    );
  }
  return parent.slice(before + 1, after).filter((line) => !isMarker(line));
}

/** 去掉全部区域标记行，其余逐字节不变。 */
export function withoutMarkers(source: string): string {
  return source
    .split("\n")
    .filter((line) => !isMarker(line))
    .join("\n");
}

function isMarker(line: string): boolean {
  return OPEN.test(line) || CLOSE.test(line);
}

/**
 * 两个版本里对得上的代码行（区域标记不参加）：最长公共子序列，目标行号 → 起点行号（都从 0 数）。
 * 文件开头之前与结尾之后各算一行哨兵（-1 与长度）。
 */
export function alignLines(parent: readonly string[], target: readonly string[]): Map<number, number> {
  const p = parent.flatMap((line, index) => (isMarker(line) ? [] : [index]));
  const t = target.flatMap((line, index) => (isMarker(line) ? [] : [index]));
  const n = p.length;
  const m = t.length;
  // lengths[i][j]：p[i..] 与 t[j..] 的最长公共子序列长度
  const lengths = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i]![j] = parent[p[i]!] === target[t[j]!] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
    }
  }
  const aligned = new Map<number, number>([[-1, -1], [target.length, parent.length]]);
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (parent[p[i]!] === target[t[j]!]) aligned.set(t[j++]!, p[i++]!);
    else if (lengths[i + 1]![j]! >= lengths[i]![j + 1]!) i++;
    else j++;
  }
  return aligned;
}

/** 一处精确替换：原文 find 换成 replace；给了 region（实践编号）时，只在那个实践的区域里找原文。 */
export interface Anchored {
  file: string;
  find: string;
  replace: string;
  region?: string;
}

/** 原文出现了几次。 */
export interface AnchorHits {
  count: number;
  /** 第一次出现的位置（字符下标）；一次也没有时是 -1。 */
  at: number;
}

/**
 * 原文在文件里（或只在 region 那个实践的区域里）出现几次。变异、故障实验与编译失败用例都要求恰好一次；
 * 点名区域的变异不怕同一文件别处出现同样的原文。区域标记写错时抛出 findRegions 的错误。
 */
export function anchorHits(source: string, anchor: Pick<Anchored, "file" | "find" | "region">): AnchorHits {
  if (anchor.region === undefined) return countIn(source, anchor.find, [[0, source.length]]);
  const lines = source.split("\n");
  const offsets: number[] = [];
  let offset = 0;
  for (const line of lines) {
    offsets.push(offset);
    offset += line.length + 1;
  }
  // 区域的内容：#region 的下一行起，到 #endregion 所在行之前（标记行本身不算）
  const ranges = findRegions(source, anchor.file)
    .filter((region) => region.lab === anchor.region)
    .map((region): [number, number] => [offsets[region.start + 1] ?? source.length, offsets[region.end] ?? source.length]);
  return countIn(source, anchor.find, ranges);
}

function countIn(source: string, find: string, ranges: ReadonlyArray<readonly [number, number]>): AnchorHits {
  let count = 0;
  let at = -1;
  for (const [start, end] of ranges) {
    for (let index = source.indexOf(find, start); index >= 0 && index + find.length <= end; index = source.indexOf(find, index + find.length)) {
      if (at < 0) at = index;
      count += 1;
    }
  }
  return { count, at };
}

/** 锚点的问题：出在哪个字段（原文本身，还是点名的区域），以及一句说明。 */
export interface AnchorProblem {
  field: "find" | "region";
  message: string;
}

/** 原文不是恰好出现一次时的问题；恰好一次时是 undefined。 */
export function anchorProblem(source: string, anchor: Pick<Anchored, "file" | "find" | "region">): AnchorProblem | undefined {
  const hits = anchorHits(source, anchor);
  if (hits.count === 1) return undefined;
  if (anchor.region !== undefined && !findRegions(source, anchor.file).some((region) => region.lab === anchor.region)) {
    return { field: "region", message: `原文要在 ${anchor.file} 的实践 ${anchor.region} 区域里找，文件里却没有这个实践的区域` };
  }
  const place = anchor.region === undefined ? `${anchor.file} 里` : `${anchor.file} 的实践 ${anchor.region} 区域里`;
  return { field: "find", message: `原文在 ${place}出现 ${hits.count} 次，应当恰好 1 次` };
}

/** 施加一处替换；原文不是恰好出现一次时抛出 anchorProblem 的说明。 */
export function applyAnchored(source: string, anchor: Anchored): string {
  const problem = anchorProblem(source, anchor);
  if (problem !== undefined) throw new CourseError("ANCHOR_INVALID", problem.message);
  const { at } = anchorHits(source, anchor);
  return `${source.slice(0, at)}${anchor.replace}${source.slice(at + anchor.find.length)}`;
}
