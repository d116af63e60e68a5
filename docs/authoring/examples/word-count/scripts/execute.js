const fs = require('fs');

const { text } = JSON.parse(fs.readFileSync(0, 'utf8'));
const words = text.toLowerCase().match(/[a-z0-9']+/g) || [];
const counts = new Map();
for (const word of words) counts.set(word, (counts.get(word) || 0) + 1);
let top = null;
for (const [word, n] of counts) if (top === null || n > counts.get(top)) top = word;
const lines = text === '' ? 0 : text.split('\n').length;
console.log(JSON.stringify({ lines, words: words.length, top }));
