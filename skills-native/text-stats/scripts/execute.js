// text-stats: word, sentence and character counts, reading time, frequent words.
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(0, 'utf8') || '{}');
const text = input.text || '';
const STOP = new Set(['the', 'a', 'an', 'and', 'or', 'of', 'to', 'in', 'is', 'it', 'that', 'for', 'on', 'with', 'as', 'was', 'are', 'be', 'this', 'at', 'by']);
const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) || [];
const sentences = text.split(/[.!?。！？]+/).filter(s => s.trim()).length;
const counts = new Map();
for (const w of words) if (!STOP.has(w)) counts.set(w, (counts.get(w) || 0) + 1);
const topWords = [...counts.entries()]
  .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
  .slice(0, input.top || 5)
  .map(([word, count]) => ({ word, count }));
console.log(JSON.stringify({
  words: words.length,
  sentences,
  characters: [...text].length,
  readingMinutes: Math.round((words.length / 230) * 10) / 10,
  topWords,
}));
