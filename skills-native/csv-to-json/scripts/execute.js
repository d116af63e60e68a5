// csv-to-json: RFC 4180 parsing (quotes, doubled quotes, delimiters and newlines in quotes).
const fs = require('fs');
const input = JSON.parse(fs.readFileSync(0, 'utf8') || '{}');
const text = input.csv || '';
const sep = input.delimiter || ',';

const records = [];
let field = '', record = [], quoted = false;
for (let i = 0; i < text.length; i++) {
  const c = text[i];
  if (quoted) {
    if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
    else if (c === '"') quoted = false;
    else field += c;
  } else if (c === '"' && field === '') quoted = true;
  else if (c === sep) { record.push(field); field = ''; }
  else if (c === '\n' || c === '\r') {
    if (c === '\r' && text[i + 1] === '\n') i++;
    record.push(field); field = '';
    if (record.some(f => f !== '')) records.push(record);
    record = [];
  } else field += c;
}
if (quoted) throw new Error('a quoted field is never closed');
record.push(field);
if (record.some(f => f !== '')) records.push(record);
if (records.length === 0) throw new Error('the CSV is empty');

const columns = records[0].map(c => c.trim());
const rows = records.slice(1).map(r => Object.fromEntries(columns.map((c, i) => [c, r[i] ?? ''])));
console.log(JSON.stringify({ columns, rows }));
