// `js-text-stats`: counts the lines, words and characters of a text and names its most
// common words. A JavaScript skill built with ComponentizeJS and evo-skill.js.
import { defineSkill, SkillError } from '../../../guest-sdk/js/evo-skill.js';

export const skill = defineSkill({
  manifest: {
    name: 'js-text-stats',
    description: 'Counts the lines, words and characters of a text and lists its most common words.',
    category: 'text',
    tags: ['text', 'javascript'],
    timeout: 2000,
    input: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The text to measure.' },
        top: { type: 'integer', minimum: 1, maximum: 20, default: 3, description: 'How many common words to list.' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    output: {
      type: 'object',
      properties: {
        lines: { type: 'integer' },
        words: { type: 'integer' },
        characters: { type: 'integer' },
        top: { type: 'array', items: { type: 'object', properties: { word: { type: 'string' }, count: { type: 'integer' } } } },
      },
      required: ['lines', 'words', 'characters', 'top'],
    },
  },
  execute({ text, top = 3 }) {
    if (text.trim() === '') throw SkillError.invalidInput('text: is empty; give some words to count');
    // Letters, digits and apostrophes (the engine has no Unicode property classes).
    const words = text.toLowerCase().match(/[a-z0-9'\u00c0-\uffff]+/g) ?? [];
    const counts = new Map();
    for (const word of words) counts.set(word, (counts.get(word) ?? 0) + 1);
    const common = [...counts]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([word, count]) => ({ word, count }));
    return {
      lines: text.split('\n').length,
      words: words.length,
      characters: [...text].length,
      top: common,
    };
  },
});
