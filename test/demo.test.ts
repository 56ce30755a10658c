import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { runScript } from "./helpers.ts";

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

test("设置 PI_COURSE_BASE_URL 后，demo 改为连接那个 OpenAI 兼容端点，且不泄露 key", { timeout: 30_000 }, async () => {
  const requests: Array<{ url: string; auth: string; body: { model: string; messages: Array<{ role: string }> } }> = [];
  const server = createServer((request: IncomingMessage, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      requests.push({ url: request.url ?? "", auth: request.headers.authorization ?? "", body: JSON.parse(body) });
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = { choices: [{ index: 0, delta: { content: "本地端点说：项目名是 tiny-pi。" }, finish_reason: "stop" }] };
      response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const { code, stdout, stderr } = await runScript("demo", [], {
      env: {
        PI_COURSE_BASE_URL: `http://127.0.0.1:${port}/v1`,
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
