// `js-recall`: remembers a fact and searches memory for it, then asks the `calculate`
// skill for a sum: the host's context (memory, other skills, scratch, events, the log)
// from JavaScript.
import { defineSkill, context } from '../../../guest-sdk/js/evo-skill.js';

export const skill = defineSkill({
  manifest: {
    name: 'js-recall',
    description: 'Stores a fact in memory, searches for it, and has calculate add two numbers.',
    category: 'memory',
    tags: ['memory', 'javascript'],
    calls: ['calculate'],
    capabilities: { memory: 'read-write' },
    input: {
      type: 'object',
      properties: {
        fact: { type: 'string' },
        query: { type: 'string' },
        a: { type: 'number' },
        b: { type: 'number' },
      },
      required: ['fact', 'query', 'a', 'b'],
    },
    output: {
      type: 'object',
      properties: {
        stored: { type: 'boolean' },
        found: { type: 'array', items: { type: 'string' } },
        sources: { type: 'array', items: { type: 'string' } },
        locale: { type: 'string' },
        sum: { type: 'number' },
        runs: { type: 'integer' },
      },
      required: ['stored', 'found', 'sources', 'locale', 'sum', 'runs'],
    },
  },
  execute({ fact, query, a, b }, run) {
    const { stored } = run.step('store', { fact }, () => context.memoryStore(fact, 'fact'));
    const found = run.step('search', { query }, () => context.memorySearch(query, 3)).map((e) => e.text);
    // Since evo:skill 0.2.0: a search kept to one source, and the run's environment.
    const sources = context.memoryQuery(query, { limit: 3, sources: ['user'] }).map((e) => e.source);
    const { locale } = context.env();
    const { result } = context.call('calculate', { expression: `${a} + ${b}` });
    const runs = (context.scratchGet('js-recall-runs') ?? 0) + 1;
    context.scratchSet('js-recall-runs', runs);
    context.emit({ type: 'recalled', found: found.length });
    context.log('info', `found ${found.length} entries for "${query}"`);
    return { stored, found, sources, locale, sum: result, runs };
  },
});
