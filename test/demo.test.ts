import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, test } from "node:test";

import { runScript, tempDir } from "./helpers.ts";

const work = tempDir("demo");
after(() => work.remove());

type ChatRequest = { url: string; auth: string; body: { model: string; messages: Array<{ role: string; content?: unknown }> } };

/** 一个本机回环上的 OpenAI 兼容端点：记下收到的请求，用一段 SSE 回答。 */
async function fakeEndpoint(answer: string): Promise<{ server: Server; baseUrl: string; requests: ChatRequest[] }> {
  const requests: ChatRequest[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      requests.push({ url: request.url ?? "", auth: request.headers.authorization ?? "", body: JSON.parse(body) });
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = { choices: [{ index: 0, delta: { content: answer }, finish_reason: "stop" }] };
      response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, baseUrl: `http://127.0.0.1:${port}/v1`, requests };
}

test("npm run demo：离线用脚本模型跑完 README 往返，逐条打印事件流", { timeout: 30_000 }, async () => {
  const { code, stdout, stderr } = await runScript("demo", []);
  assert.equal(code, 0, stderr);
  const order = ["agent_start", "turn_start", "tool_execution_start", "tool_execution_end", "turn_end", "agent_end"];
  let cursor = -1;
  for (const name of order) {
    const at = stdout.indexOf(name, cursor + 1);
    assert.ok(at > cursor, `${name} 应当按顺序出现`);
    cursor = at;
  }
  assert.match(stdout, /第 2 次调用模型/);
  assert.match(stdout, /read ✓ "# tiny-pi/);
  assert.match(stdout, /回答：项目名是 tiny-pi/);
});

test("npm run demo：离线时接着演示会话——两次提问之间从 JSONL 文件恢复，第二问之前超出预算先压缩", { timeout: 30_000 }, async () => {
  const { code, stdout, stderr } = await runScript("demo", []);
  assert.equal(code, 0, stderr);
  const session = stdout.slice(stdout.indexOf("会话：两次提问"));
  assert.ok(session.length > 0, stdout);
  const order = ["第 1 问", "用户命令：!wc -l README.md → bashExecution（退出码 0）", "从 JSONL 恢复：6 条消息", "第 2 问", "：先压缩", "压缩：写下 compaction 条目", "回答：README 第二行写着"];
  let cursor = -1;
  for (const fragment of order) {
    const at = session.indexOf(fragment, cursor + 1);
    assert.ok(at > cursor, `「${fragment}」应当按顺序出现：\n${session}`);
    cursor = at;
  }
  assert.match(session, /这次请求里模型看到：system → user（压缩摘要） → user（用户命令的输出） → user（提问）/);
  assert.match(session, /会话文件共 9 行，一行都没删/);
});

test("设置 PI_COURSE_BASE_URL 后，demo 改为连接那个 OpenAI 兼容端点，且不泄露 key", { timeout: 30_000 }, async () => {
  const { server, baseUrl, requests } = await fakeEndpoint("本地端点说：项目名是 tiny-pi。");
  try {
    const { code, stdout, stderr } = await runScript("demo", [], {
      env: {
        PI_COURSE_BASE_URL: baseUrl,
        PI_COURSE_MODEL: "local-test",
        PI_COURSE_API_KEY: "sk-secret-demo-key",
      },
    });
    assert.equal(code, 0, stderr);
    assert.match(stdout, /本地端点说：项目名是 tiny-pi/);
    assert.equal(requests.length, 1);
    assert.equal(requests[0]?.url, "/v1/chat/completions");
    assert.equal(requests[0]?.auth, "Bearer sk-secret-demo-key");
    assert.equal(requests[0]?.body.model, "local-test");
    assert.equal(requests[0]?.body.messages[0]?.role, "system");
    assert.ok(!(stdout + stderr).includes("sk-secret-demo-key"));
  } finally {
    server.close();
  }
});

test("只设 PI_COURSE_BASE_URL 不设模型名：一行中文用法错误，退出码 2", async () => {
  const { code, stderr } = await runScript("demo", [], { env: { PI_COURSE_BASE_URL: "http://127.0.0.1:9/v1" } });
  assert.equal(code, 2);
  assert.match(stderr, /PI_COURSE_MODEL/);
});

test("离线时给自定义任务或 --workspace：用法错误（退出码 2），说明脚本模型只回放 README 任务、怎样接真实端点", async () => {
  for (const args of [["列出所有文件"], ["--workspace", work.dir]]) {
    const { code, stdout, stderr } = await runScript("demo", args, { env: { PI_COURSE_BASE_URL: undefined } });
    assert.equal(code, 2, `参数 ${JSON.stringify(args)}`);
    assert.equal(stdout, "");
    assert.equal(stderr.trim().split("\n").length, 1);
    assert.match(stderr, /^错误：离线的脚本模型只会回放 README 任务/);
    assert.match(stderr, /PI_COURSE_BASE_URL/);
  }
});

test("接了真实端点：自定义任务和 --workspace 都照用", { timeout: 30_000 }, async () => {
  const workspace = path.join(work.dir, "my-project");
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, "README.md"), "# my-project\n");
  const { server, baseUrl, requests } = await fakeEndpoint("这里有一个 README.md。");
  try {
    const { code, stdout, stderr } = await runScript("demo", ["--workspace", workspace, "列出所有文件"], {
      env: { PI_COURSE_BASE_URL: baseUrl, PI_COURSE_MODEL: "local-test" },
    });
    assert.equal(code, 0, stderr);
    assert.ok(stdout.includes(`工作区：${workspace}`), stdout);
    assert.match(stdout, /任务：列出所有文件/);
    assert.equal(requests[0]?.body.messages[1]?.content, "列出所有文件");
  } finally {
    server.close();
  }
});

test("端点连不上：说明检查 PI_COURSE_BASE_URL、服务是否在运行，退出码 1", { timeout: 30_000 }, async () => {
  const { server, baseUrl } = await fakeEndpoint("");
  await new Promise<void>((resolve) => server.close(() => resolve())); // 端口刚空出来：连接会被拒绝
  const { code, stderr } = await runScript("demo", [], { env: { PI_COURSE_BASE_URL: baseUrl, PI_COURSE_MODEL: "local-test" } });
  assert.equal(code, 1);
  assert.equal(stderr.trim().split("\n").length, 1);
  assert.match(stderr, /fetch failed/);
  assert.ok(stderr.includes(`检查 PI_COURSE_BASE_URL（现在是 ${baseUrl}）是否写对、那个服务是否正在运行`), stderr);
});
