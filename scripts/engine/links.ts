import { existsSync, lstatSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import path from "node:path";

/**
 * 练习目录的 node_modules：每个包一个指向套件依赖的符号链接，目录本身（包括 @scope 与 .bin）是真目录。
 *
 * 为什么不直接链接 @scope 和 .bin 两个目录：学习者在练习目录里运行 npm install 时，npm 会删掉
 * package.json 里没有声明的包。链接到一个包，npm 只删掉这个链接；链接到一个 @scope 或 .bin 目录，
 * npm 会把它当成练习目录自己的文件夹，钻进去把套件里的包一个个删掉。
 */
export interface DependencyLink {
  /** node_modules 之下的相对路径，例如 typescript、@types/node、.bin/tsc。 */
  name: string;
  /** 链接应当指向的套件里的路径。 */
  source: string;
}

/** 套件已安装、练习目录应当链接的全部依赖；@pi 除外：那里链接着套件里的最终答案。 */
export function expectedLinks(kitRoot: string): DependencyLink[] {
  const modules = path.join(kitRoot, "node_modules");
  if (!existsSync(modules)) return [];
  const links: DependencyLink[] = [];
  for (const entry of readdirSync(modules)) {
    if (entry === "@pi" || entry.startsWith(".package-lock")) continue;
    const source = path.join(modules, entry);
    if (entry.startsWith("@") || entry === ".bin") {
      if (!isDirectory(source)) continue;
      for (const inner of readdirSync(source)) links.push({ name: `${entry}/${inner}`, source: path.join(source, inner) });
    } else if (!entry.startsWith(".")) {
      links.push({ name: entry, source });
    }
  }
  return links;
}

/** 建一个链接；它的上一级（@scope、.bin）建成真目录。 */
export function createLink(dir: string, link: DependencyLink): void {
  const target = path.join(dir, "node_modules", link.name);
  mkdirSync(path.dirname(target), { recursive: true });
  symlinkSync(link.source, target, "junction");
}

/** 练习目录 node_modules 里哪些东西本身就是链接到目录的符号链接（旧布局：整个 @scope 或 .bin）。 */
export function linkedGroupDirs(dir: string): string[] {
  const modules = path.join(dir, "node_modules");
  if (!existsSync(modules)) return [];
  return readdirSync(modules).filter((entry) => (entry.startsWith("@") || entry === ".bin") && isSymlink(path.join(modules, entry)));
}

function isDirectory(file: string): boolean {
  try {
    return lstatSync(file).isDirectory();
  } catch {
    return false;
  }
}

export function isSymlink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}
