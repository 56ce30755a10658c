import { readdirSync, statSync, watch, type FSWatcher } from "node:fs";
import path from "node:path";

import { filesUnder } from "../../kit-cache.mjs";

/**
 * 监视一棵目录：文件保存后（去抖）回调一次。默认用 fs.watch 的递归事件；
 * 没有可靠变更事件的文件系统（WSL 的 /mnt、网络盘）用 poll：定时比较 mtime 与大小。
 * 事件模式起不来时自动退回 poll，并通过 onFallback 说明原因。
 */
export interface WatchOptions {
  root: string;
  /** 相对 root 的路径（用 / 分隔）；返回 true 表示忽略，例如编译输出 dist/。 */
  ignore?: (relative: string) => boolean;
  poll?: boolean;
  intervalMs?: number;
  debounceMs?: number;
  /** files：这一批改动的文件（已排序、去掉编辑器的临时文件）；lastEventAt：这一批最后一个事件的时刻（performance.now()）。 */
  onChange: (files: string[], lastEventAt: number) => void;
  onFallback?: (reason: string) => void;
}

export interface Watcher {
  readonly mode: "events" | "poll";
  close(): void;
}

export const DEFAULT_POLL_INTERVAL_MS = 400;
/**
 * 一次保存在磁盘上是一串事件（写临时文件、改名、截断再写），“全部保存”是几个文件的一串；
 * 它们之间只隔几毫秒。安静这么久才算一批：足以把一串合成一次运行，又不拖慢保存到结果的时间。
 */
export const DEFAULT_DEBOUNCE_MS = 40;

/**
 * 编辑器与工具保存时留下的临时文件：它们既不触发运行，也不出现在“触发”里。
 * vim 的交换文件（.swp/.swo/…）、备份（file~）和探测文件（4913 这类纯数字名）；
 * sed -i 的 sedXXXXXX；JetBrains 安全写入的 ___jb_tmp___ / ___jb_old___；
 * emacs 的锁 .#file 与自动保存 #file#；以及 .tmp。
 */
export function isEditorNoise(relative: string): boolean {
  const name = path.posix.basename(relative);
  return (
    name.endsWith("~") ||
    /\.sw[a-px]$/.test(name) ||
    name.endsWith(".tmp") ||
    /^\d+$/.test(name) ||
    /^sed[A-Za-z0-9]{6}$/.test(name) ||
    /___jb_(tmp|old)___$/.test(name) ||
    name.startsWith(".#") ||
    (name.startsWith("#") && name.endsWith("#"))
  );
}

export function watchTree(options: WatchOptions): Watcher {
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const ignore = (relative: string) => isEditorNoise(relative) || (options.ignore?.(relative) ?? false);
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let lastEventAt = 0;
  let closed = false;

  const changed = (relative: string) => {
    if (closed || ignore(relative)) return;
    pending.add(relative);
    lastEventAt = performance.now();
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      const files = [...pending].sort();
      pending.clear();
      if (!closed) options.onChange(files, lastEventAt);
    }, debounceMs);
  };

  let inner: { close(): void } | undefined;
  let mode: Watcher["mode"] = "poll";
  if (!options.poll) {
    try {
      inner = watchEvents(options.root, ignore, changed, (reason) => {
        // 事件监视中途出错（例如 inotify 句柄用完）：换成轮询，继续工作
        if (closed) return;
        inner?.close();
        options.onFallback?.(reason);
        inner = watchPolling(options.root, ignore, options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS, changed);
        mode = "poll";
      });
      mode = "events";
    } catch (error) {
      options.onFallback?.(`无法使用文件变更事件（${(error as NodeJS.ErrnoException).code ?? (error as Error).message}），改用轮询`);
    }
  }
  if (!inner) inner = watchPolling(options.root, ignore, options.intervalMs ?? DEFAULT_POLL_INTERVAL_MS, changed);

  return {
    get mode() {
      return mode;
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      inner?.close();
    },
  };
}

function watchEvents(
  root: string,
  ignore: (relative: string) => boolean,
  changed: (relative: string) => void,
  failed: (reason: string) => void,
): { close(): void } {
  if (process.platform === "linux") return watchDirectories(root, ignore, changed, failed);
  const watcher: FSWatcher = watch(root, { recursive: true }, (_event, filename) => {
    if (filename) changed(String(filename).split(path.sep).join("/"));
  });
  watcher.on("error", (error: NodeJS.ErrnoException) => failed(`文件变更事件出错（${error.code ?? error.message}），改用轮询`));
  return { close: () => watcher.close() };
}

/**
 * Linux 上每个目录各监视一次（不用 recursive）：Node 的递归监视在 Linux 上是逐个文件挂上去的，
 * 编辑器“写临时文件再改名”保存一次之后，那个文件换了 inode，之后的保存就再也收不到了。
 * 目录的监视按名字报告其中文件的写入与改名，不受 inode 更换影响；新建的子目录随时补上。
 * 这里自己走目录而不用 filesUnder：每个目录要先挂上监视、再列出它的子目录，
 * 两步之间新建的子目录才不会漏掉；之后新出现的目录由事件补上，不是一次遍历能给的。
 */
function watchDirectories(
  root: string,
  ignore: (relative: string) => boolean,
  changed: (relative: string) => void,
  failed: (reason: string) => void,
): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const add = (relative: string) => {
    if (watchers.has(relative) || path.posix.basename(relative) === "node_modules" || (relative !== "" && ignore(relative))) return;
    const dir = relative === "" ? root : path.join(root, relative);
    const onEvent = (_event: string, filename: string | Buffer | null) => {
      if (!filename) return;
      const child = relative === "" ? String(filename) : `${relative}/${String(filename)}`;
      changed(child);
      try {
        if (statSync(path.join(root, child)).isDirectory()) add(child);
      } catch {
        // 被删掉或改名了：目录的监视随它一起失效
      }
    };
    let watcher: FSWatcher | undefined;
    let entries;
    try {
      watcher = watch(dir, onEvent);
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      watcher?.close();
      if (relative === "") throw error; // 根目录都监视不了：由调用方退回轮询
      return; // 子目录刚被删掉
    }
    const opened = watcher;
    opened.on("error", (error: NodeJS.ErrnoException) => {
      opened.close();
      watchers.delete(relative);
      if (relative === "") failed(`文件变更事件出错（${error.code ?? error.message}），改用轮询`);
    });
    watchers.set(relative, opened);
    for (const entry of entries) {
      if (entry.isDirectory()) add(relative === "" ? entry.name : `${relative}/${entry.name}`);
    }
  };
  add("");
  return {
    close: () => {
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}

function watchPolling(
  root: string,
  ignore: (relative: string) => boolean,
  intervalMs: number,
  changed: (relative: string) => void,
): { close(): void } {
  let previous = snapshot(root, ignore);
  const interval = setInterval(() => {
    const current = snapshot(root, ignore);
    for (const [file, signature] of current) if (previous.get(file) !== signature) changed(file);
    for (const file of previous.keys()) if (!current.has(file)) changed(file);
    previous = current;
  }, intervalMs);
  return { close: () => clearInterval(interval) };
}

/** 目录下每个文件的 “mtime:大小”，键是相对路径。 */
export function snapshot(root: string, ignore: (relative: string) => boolean = () => false): Map<string, string> {
  const files = new Map<string, string>();
  for (const relative of filesUnder(root, ".", { skipDirs: ["node_modules"], skip: ignore })) {
    try {
      const stat = statSync(path.join(root, relative));
      files.set(relative, `${stat.mtimeMs}:${stat.size}`);
    } catch {
      // 文件刚被删除或改名：下一轮再看
    }
  }
  return files;
}
