import stringWidth from "string-width";
import wrapAnsi from "wrap-ansi";

/**
 * 让命令的输出适合终端的宽度。
 * 显示宽度交给 string-width（中文占两列、颜色转义不占列）；折行只落在空格处或中文字符之间，
 * 从不落在标识符、路径、命令的中间（一串连着的非空格西文字符是一个整体）。
 * 只有一整串比一行还宽时，才交给 wrap-ansi 硬折开——否则它只能冲出屏幕。
 */

export { stringWidth as displayWidth };

/**
 * 折行的宽度：PI_COURSE_COLUMNS（正整数）优先，测试和想固定宽度的人用它；
 * 否则只在真正的终端里按它的列数折；管道、重定向里不折，原样输出，便于 grep 和复制。
 */
export function terminalColumns(stream: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv = process.env): number | undefined {
  const forced = Number(env.PI_COURSE_COLUMNS);
  if (Number.isInteger(forced) && forced > 0) return forced;
  if (stream.isTTY === true && typeof stream.columns === "number" && stream.columns > 0) return stream.columns;
  return undefined;
}

// 颜色转义（SGR）与超链接之类的 OSC 转义：不占列，也从不拆开
const ESCAPE = /\u001b\[[0-9;:]*[A-Za-z]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/y;
const GRAPHEMES = new Intl.Segmenter(undefined, { granularity: "grapheme" });
/** 不能放在行首的中文标点（逗号、句号、右括号……），和不能放在行尾的（左括号、左引号）。 */
const NO_LINE_START = new Set([..."，。、；：？！）」』》】〉…％”’·"]);
const NO_LINE_END = new Set([..."（「『《【〈“‘"]);

interface Unit {
  text: string;
  width: number;
  escape: boolean;
}

function units(line: string): Unit[] {
  const out: Unit[] = [];
  let index = 0;
  while (index < line.length) {
    ESCAPE.lastIndex = index;
    const escape = ESCAPE.exec(line);
    if (escape) {
      out.push({ text: escape[0], width: 0, escape: true });
      index += escape[0].length;
      continue;
    }
    let end = line.indexOf("\u001b", index + 1);
    if (end === -1) end = line.length;
    for (const { segment } of GRAPHEMES.segment(line.slice(index, end))) out.push({ text: segment, width: stringWidth(segment), escape: false });
    index = end;
  }
  return out;
}

/** 两个可见字符之间能不能折行：空格之后可以；两边有一个是中文（宽字符）也可以，但要守标点的规矩。 */
function breakBetween(before: Unit, after: Unit): boolean {
  if (after.text === " ") return false; // 空格跟着前面的词，行尾的空格会被去掉
  if (before.text === " ") return true;
  if (NO_LINE_START.has(after.text) || NO_LINE_END.has(before.text)) return false;
  return before.width === 2 || after.width === 2;
}

/** 按折行点切成“词”：词内的字符永远在同一行。转义跟着后面的可见字符走。 */
function words(line: string): Unit[][] {
  const out: Unit[][] = [];
  let current: Unit[] = [];
  let previous: Unit | undefined;
  let pendingEscapes: Unit[] = [];
  for (const unit of units(line)) {
    if (unit.escape) {
      pendingEscapes.push(unit);
      continue;
    }
    if (previous && breakBetween(previous, unit) && current.length > 0) {
      out.push(current);
      current = [];
    }
    current.push(...pendingEscapes, unit);
    pendingEscapes = [];
    previous = unit;
  }
  current.push(...pendingEscapes);
  if (current.length > 0) out.push(current);
  return out;
}

/** 打开着的颜色：行尾先关上，下一行开头再打开，这样每一行单独看（或被别的程序截取）颜色都对。 */
class ActiveStyles {
  private open: string[] = [];

  apply(escape: string): void {
    const sgr = /^\u001b\[([0-9;]*)m$/.exec(escape);
    if (!sgr) return;
    const codes = (sgr[1] ?? "").split(";").filter((code) => code !== "");
    if (codes.length === 0 || codes.includes("0")) {
      this.open = [];
      return;
    }
    const closes = CLOSING[Number(codes[0])];
    if (closes) this.open = this.open.filter((opened) => !closes.includes(Number(/\[(\d+)/.exec(opened)?.[1])));
    else this.open.push(escape);
  }

  get reopen(): string {
    return this.open.join("");
  }

  get close(): string {
    return this.open.length > 0 ? "\u001b[0m" : "";
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);
/** 关闭码 → 它关掉的打开码（粗体/暗淡共用 22，前景色 39，背景色 49……）。 */
const CLOSING: Record<number, number[]> = {
  22: [1, 2],
  23: [3],
  24: [4],
  27: [7],
  28: [8],
  29: [9],
  39: [...range(30, 38), ...range(90, 97)],
  49: [...range(40, 48), ...range(100, 107)],
};

const text = (word: readonly Unit[]) => word.map((unit) => unit.text).join("");
const visibleWidth = (word: readonly Unit[]) => word.reduce((sum, unit) => sum + unit.width, 0);
/** 词尾的空格在行尾不算宽度（会被去掉）。 */
function trimmedWidth(word: readonly Unit[]): number {
  let width = visibleWidth(word);
  for (let index = word.length - 1; index >= 0 && (word[index]?.escape || word[index]?.text === " "); index--) {
    if (word[index]?.text === " ") width -= 1;
  }
  return width;
}

/**
 * 把一行折成不超过 columns 列的若干行。续行缩进到原行的缩进再多两格，
 * 让人看得出它接着上一行（缩进最多占三分之一的宽度）。
 */
export function fitLine(line: string, columns: number): string[] {
  if (stringWidth(line) <= columns) return [line];
  const leading = /^ */.exec(line)?.[0].length ?? 0;
  const hang = " ".repeat(Math.min(leading + 2, Math.floor(columns / 3)));
  const styles = new ActiveStyles();
  const rows: string[] = [];
  let row = "";
  let width = 0;
  const finishRow = () => {
    rows.push(row.replace(/ +((?:\u001b\[[0-9;]*m)*)$/, "$1") + styles.close);
    row = hang + styles.reopen;
    width = hang.length;
  };
  for (const word of words(line)) {
    const fits = width + trimmedWidth(word) <= columns;
    if (!fits && width > (rows.length === 0 ? 0 : hang.length)) finishRow();
    if (width + trimmedWidth(word) > columns) {
      // 一整串比一行还宽（很长的路径）：只能硬折，交给 wrap-ansi
      const pieces = wrapAnsi(text(word), Math.max(1, columns - width), { hard: true, trim: false }).split("\n");
      for (const [index, piece] of pieces.entries()) {
        if (index > 0) finishRow();
        row += piece;
        width += stringWidth(piece);
      }
      for (const unit of word) if (unit.escape) styles.apply(unit.text);
      continue;
    }
    for (const unit of word) if (unit.escape) styles.apply(unit.text);
    row += text(word);
    width += visibleWidth(word);
  }
  rows.push(row.replace(/ +((?:\u001b\[[0-9;]*m)*)$/, "$1"));
  return rows;
}

/** 每一行（含换行的文字先按换行切开）都折到 columns 以内；columns 为 undefined 时原样返回。 */
export function fitText(text: string, columns: number | undefined): string {
  if (columns === undefined) return text;
  return text
    .split("\n")
    .flatMap((line) => fitLine(line, columns))
    .join("\n");
}
