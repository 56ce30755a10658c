/** 见 kit-cache.mjs：套件命令的编译副本。 */
export declare const COMPILED_KIT_MARKER: string;
export declare function compiledKitCache(kitRoot: string): string;
export interface WalkOptions {
  skipDirs?: readonly string[];
  skip?: (relative: string) => boolean;
}
export declare function filesUnder(root: string, relative: string, options?: WalkOptions): string[];
export declare function entriesUnder(root: string, relative: string, options?: WalkOptions): { files: string[]; links: string[] };
export declare function compiledKitDir(kitRoot: string): string;
export declare function freshCompiledKit(kitRoot: string): string | undefined;
export declare function compileKit(kitRoot: string): Promise<string>;
export declare function tscCommand(dir: string): Promise<{ file: string; args: string[] }>;
