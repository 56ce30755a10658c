// 全书搜索的分词：构建索引（Node）和在浏览器里查询用的是这同一个函数，两边切出的词才对得上。
// 中文没有空格，用 Intl.Segmenter 按词切开；切法随上下文而变（“上下文”有时是一个词，有时是“上下”+“文”），
// 所以三个字以上的中文词再补上相邻两字的组合，查询和正文切法不同也能碰上。
var searchSegmenter = new Intl.Segmenter("zh", { granularity: "word" });
function tokenizeForSearch(text) {
  var tokens = [];
  for (var part of searchSegmenter.segment(text)) {
    if (!part.isWordLike) continue;
    var word = part.segment.toLowerCase();
    tokens.push(word);
    if (word.length > 2 && /\p{Script=Han}/u.test(word)) {
      for (var i = 0; i + 2 <= word.length; i++) tokens.push(word.slice(i, i + 2));
    }
  }
  return tokens;
}
