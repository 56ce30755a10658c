/**
 * 组合根用的一步：按配置同时启动每个服务器，交回它们的工具和一个关掉全部的 close()。
 * 一个服务器起不来只是一条警告：别的服务器、别的工具照常可用。
 */

import type { AgentTool } from "../tools.js";
import { McpToolSet } from "./adapter.js";
import type { McpServerConfig } from "./config.js";
import { McpSession } from "./session.js";

export interface McpServers {
  readonly sets: readonly McpToolSet[];
  /** 此刻每个服务器提供的工具。 */
  tools(): AgentTool<any>[];
  close(): Promise<void>;
}

export async function connectMcpServers(
  servers: readonly McpServerConfig[],
  options: { cwd: string; parentEnv?: Record<string, string | undefined>; onProblem(problem: string): void },
): Promise<McpServers> {
  const started = await Promise.all(
    servers.map(async (server) => {
      let set: McpToolSet | undefined;
      const session = new McpSession({
        name: server.name,
        command: server.command,
        args: server.args,
        env: server.env,
        cwd: server.cwd ?? options.cwd,
        parentEnv: options.parentEnv,
        timeoutMs: server.timeoutMs,
        onProblem: options.onProblem,
        // 服务器的工具变了（list_changed、重启之后）：去掉的工具从此调用就失败并说明原因。
        onToolsChanged: () => void set?.sync(),
      });
      try {
        await session.start();
      } catch (error) {
        options.onProblem((error as Error).message);
        return undefined;
      }
      set = new McpToolSet(session, { exposure: server.exposure, onProblem: options.onProblem });
      set.sync();
      return set;
    }),
  );
  const sets = started.filter((set): set is McpToolSet => set !== undefined);
  return {
    sets,
    tools: () => sets.flatMap((set) => set.tools),
    close: async () => {
      await Promise.all(sets.map((set) => set.session.close()));
    },
  };
}
