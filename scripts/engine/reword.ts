import { findRegions } from "./regions.js";

/**
 * 一位学习者的写法：课程答案的每个实践区域都换个样子——区域开头和结尾各多一行自己的注释，
 * 区域里每一行代码后面带一段行尾注释。意思不变，但区域里没有一行与课程的答案逐字相同，
 * 所以后面哪一章若是改了前面实践的代码（而不是把它当作本章的实践），三方合并就一定冲突。
 */
export function reword(source: string, file: string): string {
  const lines = source.split("\n");
  const regions = findRegions(source, file);
  const inside = new Set(regions.flatMap((region) => Array.from({ length: region.end - region.start - 1 }, (_, index) => region.start + 1 + index)));
  let template = false;
  const out: string[] = [];
  lines.forEach((line, index) => {
    const region = regions.find((candidate) => candidate.start === index);
    if (region !== undefined) {
      out.push(line, `${region.indent}// 我自己的写法（${region.lab}）`);
      return;
    }
    if (regions.some((candidate) => candidate.end === index)) {
      out.push(`${regions.find((candidate) => candidate.end === index)!.indent}// 写完了`, line);
      return;
    }
    const wasTemplate = template;
    // 反引号成对出现；还在模板字符串里的行不加注释（那是字符串的内容）
    template = (line.match(/(?<!\\)`/g)?.length ?? 0) % 2 === 1 ? !template : template;
    if (inside.has(index) && !wasTemplate && !template && /[;{}),]$/.test(line) && !/\/\/|\/\*/.test(line)) out.push(`${line} // 我的`);
    else out.push(line);
  });
  return out.join("\n");
}
