/**
 * 交互模式：一个 readline REPL。每一行按顺序处理，前一行没处理完，后一行排队等着。
 *
 *   普通的一句话      交给会话，回答边生成边写出来
 *   !cmd / !!cmd      用户自己运行的命令（第 11 章）；!! 的结果不进请求
 *   /tree             会话树，* 标出当前路径
 *   /branch <id>      把 leaf 移到 id，下一句话接在它后面
 *   /compact          现在就压缩上下文
 *   /resume [n]       列出这个项目的会话；给编号就换到那一份
 *   /permissions      列出（/permissions clear 清掉）这个项目记住的“以后都可以”（第 12 章的闸门登记的命令）
 *   /help             列出这些命令，以及扩展登记的命令和提示模板
 *   /exit             离开
 *   其他 /name        交给会话（第 12 章：扩展命令优先，其次提示模板）
 *
 * 闸门要问人的时候（bash、write、edit 之前），下一行输入就是回答：y 这一次，a 以后都可以，别的都算 n。
 * 项目有 .pi/extensions 而还没决定过信不信任时，开始时先问一次；信任就用同一份会话重开运行时，把它们加载进来。
 *
 * Ctrl-C：运行中按一次是中止这次运行，空闲时按一次只是提醒；连按第二次（中间没有输入新的一行）就离开。
 */

import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";

import type { AgentEvent } from "../agent-loop.js";
import { parseBashInput } from "../agent-session.js";
import type { ApprovalAnswer, ApprovalRequest } from "../approval-gate.js";
import { estimateContext } from "../compaction.js";
import { untrustedWarning, type Runtime } from "../runtime.js";
import type { SessionEntry } from "../session-entries.js";
import { textOf, type AgentMessage } from "../types.js";
import { modelCommand } from "../models/model-command.js";
import type { Output } from "./output.js";

// ── 类型 ────────────────────────────────────────────────────────

export interface InteractiveOptions {
  input: NodeJS.ReadableStream;
  output: Output;
  /** 输入是终端时 readline 才把 Ctrl-C 变成 SIGINT 事件。 */
  terminal: boolean;
  /** /resume 换会话：用同样的选项打开另一份会话文件，建出一个新的运行时。 */
  reopen(sessionFile: string): Promise<Runtime>;
}

export const PROMPT = "tiny-pi> ";

// ── 纯函数 ──────────────────────────────────────────────────────

/** 一个条目在 /tree 里的一行说明：角色或种类，加上文字的开头。 */
export function describeEntry(entry: SessionEntry): string {
  const short = (value: string) => (value.length > 40 ? `${value.slice(0, 40)}…` : value).replace(/\s+/g, " ");
  switch (entry.type) {
    case "message": {
      const message = entry.message;
      switch (message.role) {
        case "bashExecution":
          return `bash: ${message.excludeFromContext === true ? "!!" : "!"}${short(message.command)}`;
        case "user":
        case "assistant":
        case "toolResult":
        case "system":
          return `${message.role}: ${short(textOf(message))}`;
        default:
          // 别的角色（custom、摘要……）只写角色名：它们的文字在 /tree 里不重要。
          return message.role;
      }
    }
    case "compaction":
      return `compaction: ${short(entry.summary)}`;
    case "branch_summary":
      return `branch_summary: ${short(entry.summary)}`;
    default:
      return entry.type;
  }
}

/**
 * /tree 的输出：只在分叉处缩进——一条直线上的条目对齐，一个条目有几个子条目时，每一支深一层；
 * 否则一段长对话会变成一级一级往右的台阶。当前路径上的条目标 *，leaf 标“← 当前”。
 */
export function renderTree(entries: readonly SessionEntry[], leafId: string | null): string {
  // #region lab 13.5
  const children = new Map<string | null, SessionEntry[]>();
  for (const entry of entries) {
    const siblings = children.get(entry.parentId);
    if (siblings === undefined) children.set(entry.parentId, [entry]);
    else siblings.push(entry);
  }
  const byId = new Map(entries.map((entry) => [entry.id, entry]));
  const onPath = new Set<string>();
  for (let id = leafId; id !== null; id = byId.get(id)?.parentId ?? null) onPath.add(id);
  const lines: string[] = [];
  // 自己的栈而不是递归：一段上万条的对话是一条上万层的链，递归会把调用栈撑爆。
  // 子条目倒着压栈，弹出时才是原来的顺序。
  const stack = [...(children.get(null) ?? [])].reverse().map((entry) => ({ entry, depth: 0 }));
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { entry, depth } = top;
    const mark = onPath.has(entry.id) ? "*" : " ";
    const here = entry.id === leafId ? "  ← 当前" : "";
    lines.push(`${"  ".repeat(depth)}${mark} ${entry.id} ${describeEntry(entry)}${here}`);
    const kids = children.get(entry.id) ?? [];
    const next = kids.length > 1 ? depth + 1 : depth;
    for (let i = kids.length - 1; i >= 0; i -= 1) stack.push({ entry: kids[i]!, depth: next });
  }
  return lines.length === 0 ? "（会话还是空的）" : lines.join("\n");
  // #endregion
}

/** /compact 什么都没做时的那句话：说出为什么——整条分支都还在“保留最近的一段”里。 */
export function nothingToCompact(messages: readonly AgentMessage[]): string {
  return `没有可以压缩的内容：压缩只总结“最近的一段”之前的旧对话，这条分支目前约 ${estimateContext(messages).total} 个 token，全都在保留的范围里。`;
}

/** 人对闸门的回答：y 是这一次，a 是以后都可以；别的（包括空行）都是不可以：拿不准时不做。 */
export function parseApprovalAnswer(line: string): ApprovalAnswer {
  const answer = line.trim().toLowerCase();
  if (answer === "y" || answer === "yes") return "yes";
  if (answer === "a" || answer === "always") return "always";
  return "no";
}

/** 问人的那几行：调用、警告（有的话）、三种回答。 */
export function approvalQuestion(request: ApprovalRequest): string {
  const lines = [`需要你的批准：${request.summary}`];
  if (request.warning !== undefined) lines.push(request.warning);
  lines.push(`[y] 这一次  [a] 这个项目里以后都可以（${request.rule}）  [n] 不可以 > `);
  return lines.join("\n");
}

/** 问要不要信任这个项目：列出会加载的文件，说清它们是会运行的代码。 */
export function trustQuestion(extensions: readonly string[]): string {
  return `这个项目有 ${extensions.length} 个项目扩展（.pi/extensions：${extensions.join("、")}），它们是项目里的代码，加载就会运行。\n信任这个项目并加载它们吗？[y] 信任（记下，不再问）  [n] 不信任 > `;
}

/** 交互模式怎样显示一个事件：文字边生成边写，工具调用一行，失败一行。 */
export function renderEvent(event: AgentEvent): string | undefined {
  switch (event.type) {
    case "message_update":
      return event.event.type === "text_delta" ? event.event.delta : undefined;
    case "message_end": {
      const message = event.message;
      if (message.role !== "assistant") return undefined;
      if (message.stopReason === "error") return `\n✗ 模型出错：${message.errorMessage ?? "没有说明"}\n`;
      if (message.stopReason === "aborted") return "\n（这次回答被中止了）\n";
      return "\n";
    }
    case "tool_execution_start":
      return `→ ${event.toolName} ${JSON.stringify(event.args)}\n`;
    case "tool_execution_end":
      return event.isError ? `✗ ${event.toolName} 失败：${textOf(event.result).slice(0, 200)}\n` : undefined;
    default:
      return undefined;
  }
}

/** 横幅里说清闸门开着还是关着：关着时每个工具调用都直接运行。 */
export function gateBanner(runtime: Runtime): string {
  return runtime.approvalGate
    ? "批准闸门开着：bash、write、edit 执行之前先问你；/permissions 看记住的决定。"
    : "⚠ 批准闸门关着（--yolo）：工具调用不经询问直接运行。";
}

/** /help：内置命令，加上扩展登记的命令和提示模板（它们都以 / 开头，由会话来处理）。 */
export function helpText(runtime: Runtime): string {
  const lines = ["!cmd / !!cmd   运行命令（!! 的结果不进请求）", "/tree  /branch <id>  /compact  /resume [编号]  /model [名字]  /help  /exit"];
  for (const extension of runtime.extensions.extensions) {
    for (const [name, command] of extension.commands) lines.push(`/${name}  ${command.description ?? ""}（扩展 ${path.basename(extension.path)}）`.trimEnd());
  }
  for (const template of runtime.resources.promptTemplates) lines.push(`/${template.name}  ${template.description}（提示模板）`);
  return lines.join("\n");
}

/** 这个项目的全部会话文件，最近用过的在前。 */
export async function listSessions(folder: string): Promise<string[]> {
  const names = (await readdir(folder)).filter((name) => name.endsWith(".jsonl"));
  const withTimes = await Promise.all(names.map(async (name) => ({ name, mtime: (await stat(path.join(folder, name))).mtimeMs })));
  return withTimes.sort((a, b) => b.mtime - a.mtime || b.name.localeCompare(a.name)).map(({ name }) => path.join(folder, name));
}

// ── REPL ────────────────────────────────────────────────────────

export class InteractiveMode {
  private runtime: Runtime;
  private readonly options: InteractiveOptions;
  private readonly out: Output;
  /** 上一次 Ctrl-C 之后还没有输入新的一行：再按一次就离开。 */
  private interruptedOnce = false;
  /** 正在进行的一行（提问或 `!` 命令）的取消开关；空闲时为 undefined。 */
  private busy: AbortController | undefined;
  private queue: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => {};
  private leave: (code: number) => void = () => {};
  /** 重画提示符：提醒写在了提示符下面，人要看到自己还能输入。 */
  private redraw: () => void = () => {};
  private leaving = false;
  /** 闸门在等回答时，下一行交给它，而不是排进队列。 */
  private answer: ((line: string) => void) | undefined;

  constructor(runtime: Runtime, options: InteractiveOptions) {
    this.runtime = runtime;
    this.options = options;
    this.out = options.output;
  }

  get current(): Runtime {
    return this.runtime;
  }

  /** 运行到离开为止（/exit、输入结束、连按两次 Ctrl-C、stdout 被关掉），交出退出码。 */
  async run(initial: readonly string[] = []): Promise<number> {
    const left = new Promise<number>((resolve) => {
      this.leave = (code) => {
        this.leaving = true;
        resolve(code);
      };
    });
    const rl = createInterface({ input: this.options.input, output: this.out.stream, terminal: this.options.terminal, prompt: PROMPT });
    this.redraw = () => {
      if (!this.leaving && !this.out.closed) rl.prompt(true);
    };
    rl.on("SIGINT", () => {
      this.answer?.("n");
      this.interrupt();
    });
    rl.on("line", (line) => {
      this.interruptedOnce = false;
      const answer = this.answer;
      if (answer !== undefined) {
        this.answer = undefined;
        answer(line);
        return;
      }
      this.queue = this.queue.then(() => this.handle(line)).then(() => {
        if (!this.leaving && !this.out.closed) rl.prompt();
      });
    });
    // 输入结束（Ctrl-D、管道读完）：排着队的行处理完再离开。
    rl.on("close", () => {
      this.answer?.("n");
      void this.queue.then(() => this.leave(0));
    });
    this.out.onClose(() => {
      this.busy?.abort();
      this.leave(0);
    });
    this.listen();
    this.out.write(`tiny-pi（模型 ${this.runtime.model.provider}/${this.runtime.model.id}，会话 ${this.runtime.sessionFile}）\n${gateBanner(this.runtime)}\n/exit 离开，Ctrl-C 中止运行，连按两次离开。\n`);
    this.queue = this.queue.then(() => this.settleTrust()).catch((error: unknown) => {
      this.out.write(`✗ ${error instanceof Error ? error.message : String(error)}\n`);
    });
    // 命令行上给的任务像敲进来的行一样排队：回答照样显示，闸门照样能问。
    for (const line of initial) this.queue = this.queue.then(() => this.handle(line));
    void this.queue.then(() => {
      if (!this.leaving && !this.out.closed) rl.prompt();
    });
    const code = await left;
    this.unsubscribe();
    rl.close();
    return code;
  }

  /** 下一行输入（离开之后是空行）。 */
  private nextAnswer(): Promise<string> {
    if (this.leaving || this.out.closed) return Promise.resolve("");
    return new Promise((resolve) => {
      this.answer = (line) => {
        this.answer = undefined;
        resolve(line);
      };
    });
  }

  /** 还没决定过信不信任这个项目：问一次并记下；信任就用同一份会话重开运行时，把项目扩展加载进来。 */
  private async settleTrust(): Promise<void> {
    const trust = this.runtime.projectTrust;
    if (trust.state === "trusted") return;
    if (trust.state === "untrusted") {
      this.out.write(`${untrustedWarning(trust)}\n`);
      return;
    }
    this.out.write(trustQuestion(trust.extensions));
    const trusted = parseApprovalAnswer(await this.nextAnswer()) !== "no";
    await trust.record(trusted);
    if (!trusted) {
      this.out.write(`不加载项目扩展；这个决定记在 ${trust.file}。\n`);
      return;
    }
    await this.replaceRuntime(await this.options.reopen(this.runtime.sessionFile));
    this.out.write(`已信任这个项目，加载了 ${this.runtime.extensions.extensions.length} 个扩展。\n`);
  }

  /** 换上另一个运行时：先接上新的，再关掉旧的。 */
  private async replaceRuntime(next: Runtime): Promise<void> {
    const previous = this.runtime;
    this.unsubscribe();
    this.runtime = next;
    this.listen();
    await previous.dispose();
  }

  /** 闸门问人：写出问题，下一行输入就是回答。离开之后再问，一律是“不可以”。 */
  askApproval(request: ApprovalRequest): Promise<ApprovalAnswer> {
    if (this.leaving || this.out.closed) return Promise.resolve("no");
    this.out.write(approvalQuestion(request));
    return this.nextAnswer().then(parseApprovalAnswer);
  }

  /** Ctrl-C。第一次：中止正在进行的运行（空闲时只是提醒）；第二次：离开。 */
  interrupt(): void {
    // #region lab 13.5
    if (this.interruptedOnce) {
      this.busy?.abort();
      this.leave(0);
      return;
    }
    this.interruptedOnce = true;
    if (this.busy !== undefined) {
      this.busy.abort();
      this.out.write("\n（已中止这次运行。再按一次 Ctrl-C 离开。）\n");
    } else {
      this.out.write("\n（再按一次 Ctrl-C 离开，或者输入 /exit。）\n");
      this.redraw();
    }
    // #endregion
  }

  /** SIGTERM、SIGHUP：不数次数，中止正在进行的运行就离开（收尾由 main 限时等待）。 */
  terminate(): void {
    this.busy?.abort();
    this.runtime.session.agent.abort();
    this.leave(0);
  }

  private listen(): void {
    this.unsubscribe = this.runtime.session.subscribe((event) => {
      const shown = renderEvent(event);
      if (shown !== undefined) this.out.write(shown);
    });
  }

  private async handle(line: string): Promise<void> {
    const input = line.trim();
    if (input === "" || this.leaving) return;
    try {
      // 第 18 章：/model 看或选当前分支的模型。
      const shown = modelCommand(this.runtime.model, input);
      if (shown !== undefined) return void this.out.write(`${shown}\n`);
      await this.dispatch(input);
    } catch (error) {
      this.out.write(`✗ ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }

  private async dispatch(input: string): Promise<void> {
    // #region lab 13.5
    const [command = "", ...rest] = input.split(/\s+/);
    const session = this.runtime.session;
    switch (command) {
      case "/exit":
      case "/quit":
        this.leave(0);
        return;
      case "/help":
        this.out.write(`${helpText(this.runtime)}\n`);
        return;
      case "/tree":
        this.out.write(`${renderTree(session.tree.getEntries(), session.tree.getLeafId())}\n`);
        return;
      case "/branch": {
        const id = rest[0];
        if (id === undefined) throw new Error("用法：/branch <条目 id>（先用 /tree 看 id）");
        session.branch(id);
        this.out.write(`已切到 ${id}：下一句话接在它后面。\n`);
        return;
      }
      case "/compact": {
        const result = await session.compact();
        if (result.status === "compacted") this.out.write(`已压缩：压缩前约 ${result.entry.tokensBefore} 个 token。\n`);
        else this.out.write(result.code === "nothing_new" ? "上次压缩之后没有新内容，不用再压缩。\n" : `${nothingToCompact(session.messages)}\n`);
        return;
      }
      case "/resume":
        await this.resume(rest[0]);
        return;
    }
    await this.ask(input);
    // #endregion
  }

  /** 一句话或一条 `!` 命令：运行期间 busy 是它的取消开关，Ctrl-C 按下去就是 abort。 */
  private async ask(input: string): Promise<void> {
    const session = this.runtime.session;
    const controller = new AbortController();
    const stop = () => session.agent.abort();
    controller.signal.addEventListener("abort", stop);
    this.busy = controller;
    try {
      const bash = parseBashInput(input);
      if (bash !== undefined) {
        const result = await session.executeBash(bash.command, { excludeFromContext: bash.excludeFromContext, signal: controller.signal });
        const status = result.cancelled ? "（被取消）" : result.exitCode !== undefined && result.exitCode !== 0 ? `（退出码 ${result.exitCode}）` : "";
        this.out.write(`${result.output}${result.output.endsWith("\n") || result.output === "" ? "" : "\n"}${status}${status ? "\n" : ""}`);
      } else {
        await session.prompt(input, { signal: controller.signal });
      }
    } finally {
      this.busy = undefined;
      controller.signal.removeEventListener("abort", stop);
    }
  }

  /** 不给编号：列出会话；给编号：先打开新的，成功了再关旧的（打不开就留在原来的会话里）。 */
  private async resume(choice: string | undefined): Promise<void> {
    const files = await listSessions(path.dirname(this.runtime.sessionFile));
    if (choice === undefined) {
      const lines = files.map((file, index) => `${index + 1}. ${path.basename(file)}${file === this.runtime.sessionFile ? "  ← 当前" : ""}`);
      this.out.write(`${lines.join("\n")}\n用 /resume <编号> 换过去。\n`);
      return;
    }
    const file = files[Number(choice) - 1];
    if (file === undefined) throw new Error(`没有编号为 ${choice} 的会话；/resume 列出全部。`);
    const next = await this.options.reopen(file);
    await this.replaceRuntime(next);
    this.out.write(`已换到 ${path.basename(file)}（${next.session.tree.getEntries().length} 个条目）。\n`);
  }
}
