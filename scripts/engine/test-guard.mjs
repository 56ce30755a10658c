// 测试子进程最先加载的模块（经 NODE_OPTIONS 的 --import）：在学习者的任何代码运行之前冻结 node:assert。
// 否则练习目录里的一行 `assert.equal = () => {}` 就能让本章的断言全部失效、测试“通过”。
// 它挡得住顺手或意外的改动，挡不住存心的破坏：同一个进程里的代码总还有别的办法，verify 的 --help 写明了这一点。
import assert from "node:assert";

for (const api of [assert, assert.strict]) Object.freeze(api);
