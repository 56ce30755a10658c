/** 见 kit-cache.mjs：套件命令的编译副本。 */
export declare const COMPILED_KIT_MARKER: string;
export declare function compiledKitCache(kitRoot: string): string;
export declare function filesUnder(root: string, relative: string, options?: { skipDirs?: readonly string[]; skip?: (relative: string) => boolean }): string[];
export declare function compiledKitDir(kitRoot: string): string;
export declare function freshCompiledKit(kitRoot: string): string | undefined;
export declare function compileKit(kitRoot: string): Promise<string>;
export declare function tscCommand(dir: string): Promise<{ file: string; args: string[] }>;
