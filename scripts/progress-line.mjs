// 一条只在终端里出现的进度行：超过一秒的准备工作（编译套件脚本、构建课程历史、watch 的第一次编译）
// 先说一句在做什么，做完就把这一行擦掉。写到 stderr，不混进命令的输出；接进管道时什么也不写。
// 只用 Node 自带的模块：launch.mjs 在 tsx 之前就要用它。

/** 写出进度行，交回一个擦掉它的函数（可以调用多次）。 */
export function startProgress(text, stream = process.stderr) {
  if (stream.isTTY !== true) return () => {};
  stream.write(`${text}…`);
  let open = true;
  return () => {
    if (open) stream.write("\r\u001b[K");
    open = false;
  };
}
