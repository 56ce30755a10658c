/** 把一段文字变成逐字匹配它的正则源码（正则的元字符都转义）。 */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
