/**
 * 强制离开时还活着的命令。第 08 章的 runCommand 让每条命令自成一个进程组（detached），组长就是
 * tiny-pi 的直接子进程；平时它自己收尾：先 SIGTERM，宽限期过了再 SIGKILL。可是强制离开不等宽限期——
 * 进程一退出，那个定时器也就没了，`trap '' TERM` 的命令会活下来，之后还在往工作区里写。
 * 所以离开之前，同步地把这些进程组全部 SIGKILL：同步，是因为紧接着就是 process.exit。
 */

import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** 进程状态的第一个字母；Z 是已经结束、只等父进程收走的僵尸。 */
  state: string;
}

/** /proc/<pid>/stat 的一行。进程名在括号里，可能带空格和括号，所以从最后一个 ")" 之后数字段。 */
export function parseProcStat(line: string): ProcessInfo | undefined {
  const close = line.lastIndexOf(")");
  const pid = Number.parseInt(line, 10);
  const [state, ppid, pgid] = line.slice(close + 2).split(" ");
  if (close === -1 || Number.isNaN(pid) || state === undefined || ppid === undefined || pgid === undefined) return undefined;
  return { pid, ppid: Number(ppid), pgid: Number(pgid), state: state.slice(0, 1) };
}

/** 这台机器上的全部进程：Linux 读 /proc，没有 /proc（macOS）就问 ps，两者给出同样的四列。 */
export function listProcesses(): ProcessInfo[] {
  if (existsSync("/proc/self/stat")) {
    const found: ProcessInfo[] = [];
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      let line: string;
      try {
        line = readFileSync(`/proc/${name}/stat`, "utf8");
      } catch {
        continue; // 读的这一刻它刚好退出了。
      }
      const info = parseProcStat(line);
      if (info !== undefined) found.push(info);
    }
    return found;
  }
  const table = execFileSync("ps", ["-A", "-o", "pid=,ppid=,pgid=,stat="], { encoding: "utf8" });
  return table
    .split("\n")
    .map((row) => row.trim().split(/\s+/))
    .filter((columns) => columns.length >= 4)
    .map(([pid, ppid, pgid, state]) => ({ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), state: (state ?? "").slice(0, 1) }));
}

/** 把 parent 的直接子进程里自成一组的那些（组号等于自己的 pid）整组 SIGKILL，交回杀掉的组号。 */
export function killChildProcessGroups(parent: number = process.pid): number[] {
  let groups: number[];
  try {
    groups = listProcesses()
      .filter((info) => info.ppid === parent && info.pgid === info.pid)
      .map((info) => info.pid);
  } catch {
    return []; // 连进程表都读不到：没有别的办法了，照常离开。
  }
  for (const pgid of groups) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // 这一组刚好已经全部退出。
    }
  }
  return groups;
}
