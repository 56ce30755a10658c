/** 见 progress-line.mjs：只在终端里出现、做完就擦掉的一行进度。 */
export declare function startProgress(text: string, stream?: { isTTY?: boolean; write(text: string): unknown }): () => void;
