// 课程自检的第 3 个分片：哪些章节在这里见 ./chapters.ts 的 assignShards。
import { selfCheckShard } from "./chapters.ts";

selfCheckShard(3);
