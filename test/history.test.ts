import assert from "node:assert/strict";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, describe, test } from "node:test";

import { loadChapters } from "../scripts/engine/chapters.ts";
import { cloneKit, git, KIT, runScript, tempDir } from "./helpers.ts";

const work = tempDir("history");
after(() => work.remove());

const BRANCH = "course/build-your-own-pi";

interface CheckpointJson {
  commits: { parent: string; target: string; steps: Record<string, string> };
}

/**
 * 在 kit 里（带着 env）构建课程历史，返回课程分支上每个提交的完整哈希（空白起点、各章的步骤与目标，从旧到新）。
 * 一次 course history 构建整条历史；再用学习者的 checkpoint 取最后一章，它说的起点与目标必须就是分支上的那两个提交。
 * （以前每章各跑一次 checkpoint：每章一个进程，章节越多越慢，证明的却是同一件事。）
 */
async function chapterCommits(kit: string, env: Record<string, string> = {}): Promise<string[]> {
  const built = await runScript("course", ["history"], { kit, cwd: kit, env });
  assert.equal(built.code, 0, built.stderr);
  const hashes = (await git(kit, "log", "--reverse", "--format=%H", BRANCH)).split("\n");
  const chapters = loadChapters(path.join(kit, "lessons"));
  assert.equal(hashes.length, 1 + chapters.reduce((sum, chapter) => sum + 1 + chapter.steps.length, 0), "课程分支上的提交数");
  const last = chapters.at(-1);
  assert.ok(last);
  const result = await runScript("checkpoint", [last.id, "--json"], { kit, cwd: kit, env });
  assert.equal(result.code, 0, result.stderr);
  const { commits } = JSON.parse(result.stdout) as CheckpointJson;
  assert.deepEqual([commits.parent, ...Object.values(commits.steps), commits.target], hashes.slice(-2 - last.steps.length));
  return hashes;
}

describe("课程历史的确定性", () => {
  test("两个新克隆、两套截然不同的 git 配置，得到完全相同的提交哈希", { timeout: 120_000 }, async () => {
    const plain = await cloneKit(work.dir, "plain");
    const hostile = await cloneKit(work.dir, "hostile");

    // 一个“敌意”的用户配置：换行转换、强制签名（签名程序必然失败）、非 UTF-8 提交编码、
    // 会失败的钩子，外加环境里的另一套作者身份。
    const home = path.join(work.dir, "hostile-home");
    const hooks = path.join(home, "hooks");
    mkdirSync(hooks, { recursive: true });
    for (const hook of ["pre-commit", "commit-msg", "post-commit"]) {
      writeFileSync(path.join(hooks, hook), "#!/bin/sh\necho hook-ran >&2\nexit 1\n");
      chmodSync(path.join(hooks, hook), 0o755);
    }
    writeFileSync(
      path.join(home, ".gitconfig"),
      [
        "[user]",
        "\tname = Someone Else",
        "\temail = someone@example.invalid",
        "\tsigningkey = DEADBEEF",
        "[core]",
        "\tautocrlf = true",
        `\thooksPath = ${hooks}`,
        "[commit]",
        "\tgpgSign = true",
        "[gpg]",
        "\tprogram = /bin/false",
        "[i18n]",
        "\tcommitEncoding = ISO-8859-1",
        "[diff]",
        "\tnoprefix = true",
        "",
      ].join("\n"),
    );
    for (const [key, value] of [
      ["core.autocrlf", "true"],
      ["commit.gpgSign", "true"],
      ["i18n.commitEncoding", "ISO-8859-1"],
      ["apply.whitespace", "fix"],
    ] as const) {
      await git(hostile, "config", key, value);
    }
    const hostileEnv = {
      HOME: home,
      GIT_AUTHOR_NAME: "Mallory",
      GIT_COMMITTER_DATE: "1999-01-01T00:00:00Z",
    };

    const fromPlain = await chapterCommits(plain);
    const fromHostile = await chapterCommits(hostile, hostileEnv);
    assert.deepEqual(fromHostile, fromPlain);
    assert.equal(await git(hostile, "rev-parse", BRANCH), await git(plain, "rev-parse", BRANCH));
    assert.ok(!existsSync(path.join(hostile, "hook-ran")));
  });

  test("课程分支是普通的 git 历史：每章一个 course(NN) 提交，起点是空树", async () => {
    const log = await git(KIT, "log", "--reverse", "--format=%s", BRANCH);
    const subjects = log.split("\n");
    assert.match(subjects[0] ?? "", /^course: /);
    for (const { id } of loadChapters(path.join(KIT, "lessons"))) {
      assert.ok(subjects.some((subject) => subject.startsWith(`course(${id}): `)), `缺少 course(${id})`);
    }
    assert.equal(await git(KIT, "log", "-1", "--format=%an <%ae>", BRANCH), "Pi Course <course@pi-course.invalid>");
  });
});

describe("环境出错时：清楚的中文错误，不丢任何东西", () => {
  test("课程分支损坏（引用指向乱码）：自动重建，命令照常成功", { timeout: 60_000 }, async () => {
    const kit = await cloneKit(work.dir, "corrupt");
    const before = await chapterCommits(kit);
    const tipBefore = await git(kit, "rev-parse", BRANCH);
    const ref = path.join(kit, ".git", "refs", "heads", ...BRANCH.split("/"));
    await git(kit, "pack-refs", "--all");
    mkdirSync(path.dirname(ref), { recursive: true });
    writeFileSync(ref, "this is not a hash\n");
    assert.deepEqual(await chapterCommits(kit), before);
    assert.equal(await git(kit, "rev-parse", BRANCH), tipBefore);
  });

  test("课程分支被手工提交过：拒绝覆盖，退出码 1，给出改名保留的办法，分支原样不动", { timeout: 60_000 }, async () => {
    const kit = await cloneKit(work.dir, "edited");
    // 先有一条课程分支：一次 course history 就够了，不必每章各跑一次 checkpoint
    const built = await runScript("course", ["history"], { kit, cwd: kit });
    assert.equal(built.code, 0, built.stderr);
    const wt = path.join(work.dir, "edited-wt");
    await git(kit, "worktree", "add", "--quiet", wt, BRANCH);
    writeFileSync(path.join(wt, "mine.txt"), "我的实验");
    await git(wt, "add", "mine.txt");
    await git(wt, "-c", "user.name=Learner", "-c", "user.email=learner@example.invalid", "commit", "--quiet", "--no-verify", "-m", "我的实验");
    const mine = await git(kit, "rev-parse", BRANCH);

    const result = await runScript("checkpoint", ["03"], { kit, cwd: kit });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /不是课程生成的提交/);
    assert.match(result.stderr, /git branch -m course\/build-your-own-pi/);
    assert.equal(await git(kit, "rev-parse", BRANCH), mine);
  });

  test("不是 git 仓库（下载的压缩包）：退出码 1，说明要用 git clone", async () => {
    const kit = path.join(work.dir, "zip");
    mkdirSync(kit);
    for (const entry of ["package.json", "scripts", "lessons", "packages"]) {
      cpSync(path.join(KIT, entry), path.join(kit, entry), { recursive: true, filter: (source) => !source.includes("node_modules") && !source.includes(`${path.sep}dist`) });
    }
    symlinkSync(path.join(KIT, "node_modules"), path.join(kit, "node_modules"), "junction");
    const result = await runScript("practice", ["03", path.join(work.dir, "zip-practice")], { kit, cwd: kit });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /不是 git 仓库/);
    assert.ok(!existsSync(path.join(work.dir, "zip-practice")));
  });

  test("找不到 git：退出码 1，说明要安装 git", async () => {
    const bin = path.join(work.dir, "no-git-bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, "node"));
    const result = await runScript("checkpoint", ["03"], { env: { PATH: bin } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /找不到 git 命令/);
  });

  test("默认练习目录是套件旁边的 pi-practice-NN", { timeout: 60_000 }, async () => {
    const parent = path.join(work.dir, "default");
    mkdirSync(parent);
    const kit = await cloneKit(parent, "kit");
    const result = await runScript("practice", ["00"], { kit, cwd: kit });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(readdirSync(parent).sort(), ["kit", "pi-practice-00"]);
  });
});
