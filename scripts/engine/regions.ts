import { CourseError } from "./errors.js";

/**
 * 目标代码里的实践区域：
 *
 *   // #region lab 5.1        实践 5.1 要写的函数体；练习目录里换成 throw new Error("Lab 5.1 尚未实现")
 *   // #region lab 5.3 辅助   实践 5.3 要另写的辅助声明（函数、字段）；练习目录里整段删去
 *   // #endregion
 *
 * 标记各占一整行，不嵌套。练习目录的脚手架就是把本章实践的区域从目标里切掉，其余逐字节照旧。
 */
export interface Region {
  lab: string;
  helper: boolean;
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

const OPEN = /^([ \t]*)\/\/ #region lab (\d+\.\d+)( 辅助)?$/;
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
      open = { lab: opening[2] ?? "", helper: opening[3] !== undefined, indent: opening[1] ?? "", start: index };
    } else if (CLOSE.test(line)) {
      if (!open) throw new CourseError("REGION_INVALID", `${where}：多出来的 #endregion，前面没有 #region`);
      regions.push({ ...open, end: index });
      open = undefined;
    } else if (LOOSE.test(line)) {
      throw new CourseError("REGION_INVALID", `${where}：区域标记应当写成 // #region lab N.M（或加“ 辅助”）与 // #endregion`);
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
): string {
  const lines = source.split("\n");
  const regions = findRegions(source, file).filter((region) => cut.has(region.lab));
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
