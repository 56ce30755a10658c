// 终端宽度的测量：terminal.test.ts 与 hint.test.ts 共用。
import assert from "node:assert/strict";
import { stripVTControlCharacters } from "node:util";

import stringWidth from "string-width";

/** 一行在终端里占几列（颜色转义不占列，中文两列）。 */
export function widest(text: string): number {
  return Math.max(0, ...text.split("\n").map((line) => stringWidth(line)));
}

/** 标识符、路径、命令里连着的西文串：折行后必须完整地出现在某一行里。 */
function latinRuns(text: string): string[] {
  // 只看带字母的串：用时之类的数字每次运行都不同
  return [...new Set(stripVTControlCharacters(text).match(/[A-Za-z0-9_@./<>*"^\\=:-]{3,}/g) ?? [])].filter((run) => /[A-Za-z]/.test(run));
}

/** 测量：每行不超过 columns 列；未折行输出里的每个西文串都完整地出现在折行后的某一行。 */
export function assertFits(wrapped: string, unwrapped: string, columns: number, what: string): void {
  assert.ok(widest(wrapped) <= columns, `${what}：有一行宽 ${widest(wrapped)} 列，超过 ${columns}`);
  const lines = stripVTControlCharacters(wrapped).split("\n");
  for (const run of latinRuns(unwrapped)) {
    if (stringWidth(run) > columns - 6) continue; // 比一行还宽的串只能硬折
    assert.ok(
      lines.some((line) => line.includes(run)),
      `${what}：「${run}」在 ${columns} 列时被折断了`,
    );
  }
}
