/**
 * 课程大纲：规划中的 20 章分成四部分。lessons/ 里已经存在的章节
 * 才能学；其余的在地图上显示为“未开放”。
 */
export interface PlannedChapter {
  id: string;
  slug: string;
  /** 一句话说明这一章造出什么。 */
  builds: string;
}

export interface Part {
  title: string;
  chapters: PlannedChapter[];
}

export const SYLLABUS: readonly Part[] = [
  {
    title: "第一部分 地基",
    chapters: [
      { id: "00", slug: "prologue", builds: "观察一次离线的 README 往返" },
      { id: "01", slug: "typescript-survival", builds: "判别联合、收窄 unknown、穷尽 never" },
      { id: "02", slug: "event-stream", builds: "EventStream：push、end、result()、异步迭代" },
      { id: "03", slug: "message-ir", builds: "消息 IR、system 重放、textOf" },
      { id: "04", slug: "scripted-model", builds: "ScriptedModel：把固定轮次回放成真实事件" },
    ],
  },
  {
    title: "第二部分 真实的智能体",
    chapters: [
      { id: "05", slug: "provider-adapter", builds: "通过 fetch + SSE 对接 OpenAI 兼容接口" },
      { id: "06", slug: "tool-contract", builds: "参数校验、工具注册表、成对的结果" },
      { id: "07", slug: "agent-loop", builds: "智能体循环：停止原因、并行工具、中止" },
      { id: "08", slug: "coding-tools", builds: "工作区里的 read / write / edit / bash" },
    ],
  },
  {
    title: "第三部分 有状态的运行时",
    chapters: [
      { id: "09", slug: "stateful-agent", builds: "有状态的 Agent：状态归约、订阅、中止、两道闸" },
      { id: "10", slug: "session-tree", builds: "追加写的 JSONL 会话树" },
      { id: "11", slug: "context-compaction", builds: "自定义角色、预算内的上下文与摘要" },
      { id: "12", slug: "resources-extensions", builds: "按需技能、扩展钩子、按名修补 system" },
      { id: "13", slug: "composition-root", builds: "组装根：一处接好模型、工具、智能体与会话" },
    ],
  },
  {
    title: "第四部分 扩展",
    chapters: [
      { id: "14", slug: "eval-capstone", builds: "端到端评测真实的智能体（结业项目）" },
      { id: "15", slug: "tool-exposure", builds: "声明的与可调用的工具、工具搜索" },
      { id: "16", slug: "codemode", builds: "模型写脚本，在沙箱里调用工具" },
      { id: "17", slug: "mcp", builds: "最小的 MCP 客户端" },
      { id: "18", slug: "virtual-models", builds: "按请求把虚拟模型路由到物理模型" },
      { id: "19", slug: "durable", builds: "先提交再可见：从追加日志重建上下文" },
    ],
  },
];
