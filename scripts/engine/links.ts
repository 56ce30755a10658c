import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, statSync, symlinkSync } from "node:fs";
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

/**
 * 套件已安装、练习目录应当链接的全部依赖。两样除外，它们都会把练习目录带到套件里的最终答案：
 * @pi（工作区包的链接），以及 .bin 里指向套件工作区包的命令（例如 tiny-pi → packages/pi-course/bin）。
 * 练习目录自己的命令由 ownBinLinks 指向练习目录自己的包。
 */
export function expectedLinks(kitRoot: string): DependencyLink[] {
  const modules = path.join(kitRoot, "node_modules");
  if (!existsSync(modules)) return [];
  const workspaces = workspaceDirs(kitRoot);
  const links: DependencyLink[] = [];
  for (const entry of readdirSync(modules)) {
    if (entry === "@pi" || entry.startsWith(".package-lock")) continue;
    const source = path.join(modules, entry);
    if (entry.startsWith("@") || entry === ".bin") {
      if (!isDirectory(source)) continue;
      for (const inner of readdirSync(source)) {
        const file = path.join(source, inner);
        if (entry === ".bin" && workspaces.some((workspace) => isInside(workspace, realPath(file)))) continue;
        links.push({ name: `${entry}/${inner}`, source: file });
      }
    } else if (!entry.startsWith(".")) {
      links.push({ name: entry, source });
    }
  }
  return links;
}

/**
 * 练习目录自己的包声明的命令（package.json 的 bin）：.bin/<命令> 指向练习目录里的那个文件，
 * 所以在练习目录里 npx tiny-pi 跑的是学习者自己的代码。文件还不存在（更早的章节）就不链接。
 */
export function ownBinLinks(dir: string): DependencyLink[] {
  const packages = path.join(dir, "packages");
  if (!isDirectory(packages)) return [];
  const links: DependencyLink[] = [];
  for (const name of readdirSync(packages)) {
    const manifest = path.join(packages, name, "package.json");
    if (!existsSync(manifest)) continue;
    const bin = (JSON.parse(readFileSync(manifest, "utf8")) as { bin?: Record<string, string> }).bin ?? {};
    for (const [command, file] of Object.entries(bin)) {
      const source = path.join(packages, name, file);
      if (existsSync(source)) links.push({ name: `.bin/${command}`, source });
    }
  }
  return links;
}

/**
 * 套件的工作区包真正在哪里：套件的 packages/，加上 node_modules/@pi/* 链接实际指向的目录。
 * 两者通常相同；node_modules 本身是指向另一份克隆的链接时，@pi 指向的是那份克隆的 packages/，
 * 它的 .bin/tiny-pi 同样是最终答案，不能链接进练习目录。
 */
function workspaceDirs(kitRoot: string): string[] {
  const dirs = [path.join(realPath(kitRoot), "packages")];
  const scope = path.join(kitRoot, "node_modules", "@pi");
  if (existsSync(scope)) {
    for (const name of readdirSync(scope)) dirs.push(path.dirname(realPath(path.join(scope, name))));
  }
  return [...new Set(dirs)];
}

/** 练习目录应当有的全部链接：套件的依赖，加上练习目录自己的命令（同名时用自己的）。 */
export function practiceLinks(kitRoot: string, dir: string): DependencyLink[] {
  const own = ownBinLinks(dir);
  const taken = new Set(own.map((link) => link.name));
  return [...expectedLinks(kitRoot).filter((link) => !taken.has(link.name)), ...own];
}

/**
 * 建一个链接；它的上一级（@scope、.bin）建成真目录。指向练习目录自己文件的链接用相对路径（目录整个搬走也不断），
 * 并像 npm 安装命令时那样给目标加上可执行位。
 */
export function createLink(dir: string, link: DependencyLink): void {
  const target = path.join(dir, "node_modules", link.name);
  mkdirSync(path.dirname(target), { recursive: true });
  if (isInside(path.resolve(dir), path.resolve(link.source))) {
    chmodSync(link.source, statSync(link.source).mode | 0o111);
    symlinkSync(path.relative(path.dirname(target), link.source), target);
  } else {
    symlinkSync(link.source, target, "junction");
  }
}

/** 链接最终到达哪里（解析不了就是 undefined）。 */
export function linkTarget(file: string): string | undefined {
  try {
    return realpathSync(file);
  } catch {
    return undefined;
  }
}

function realPath(file: string): string {
  return linkTarget(file) ?? path.resolve(file);
}

function isInside(root: string, file: string): boolean {
  const relative = path.relative(root, file);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
}

/**
 * 练习目录 node_modules/.bin 里落到套件工作区包（最终答案）里的命令，例如旧的练习目录里的 tiny-pi：
 * npx tiny-pi 要跑学习者自己的代码。自检与 doctor 都用这一条规则；.bin 整个是目录链接时另算（linkedGroupDirs）。
 */
export function binsIntoKit(kitRoot: string, dir: string): string[] {
  const bin = path.join(dir, "node_modules", ".bin");
  if (!isDirectory(bin)) return [];
  const workspaces = workspaceDirs(kitRoot);
  return readdirSync(bin)
    .filter((name) => {
      const target = linkTarget(path.join(bin, name));
      return target !== undefined && workspaces.some((workspace) => isInside(workspace, target));
    })
    .sort();
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
