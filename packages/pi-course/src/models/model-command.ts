/**
 * tiny-pi 的 /model：看当前分支选中的名字与目录里的名字，或者选中一个。
 * 没有模型目录时，它说清楚要在哪里写 models.json。
 */

import type { Model } from "../types.js";
import { MODELS_FILE } from "./catalog-file.js";
import { CatalogModel } from "./routed-model.js";

/** 交回要显示的一行（或几行）；不是 /model 命令时交回 undefined。 */
export function modelCommand(model: Model, input: string): string | undefined {
  const [command, name, ...extra] = input.trim().split(/\s+/);
  if (command !== "/model") return undefined;
  if (!(model instanceof CatalogModel)) return `没有模型目录：在 agent 目录里写一个 ${MODELS_FILE}（此刻的模型是 ${model.provider}/${model.id}）。`;
  if (name === undefined) return `当前分支选中 ${model.selected}；目录里有：${model.catalog.names().join("、")}`;
  if (extra.length > 0) throw new Error("用法：/model [名字]");
  model.select(name);
  return `已选中 ${name}：只对当前分支有效。`;
}
