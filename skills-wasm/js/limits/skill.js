// `js-limits`: a JavaScript skill that misbehaves on request, for the tests of the
// limits every guest runs under: `loop` never returns, `bomb` allocates without end,
// `flood` returns more than the output cap, `print` writes to stdout, `ok` behaves.
import { defineSkill } from '../../../guest-sdk/js/evo-skill.js';

export const skill = defineSkill({
  manifest: {
    name: 'js-limits',
    description: 'Misbehaves on request (loop, bomb, flood, print) for the limit tests.',
    category: 'test',
    timeout: 2000,
    input: {
      type: 'object',
      properties: { mode: { type: 'string', enum: ['ok', 'loop', 'bomb', 'flood', 'print'] } },
      required: ['mode'],
    },
    output: { type: 'object' },
  },
  execute({ mode }) {
    if (mode === 'loop') {
      for (;;) {}
    }
    if (mode === 'bomb') {
      // Large buffers reach the cap in a few steps, well inside the deadline even on a
      // loaded machine (a bomb that times out first would test the wrong limit).
      const hoard = [];
      for (;;) hoard.push(new Uint8Array(8 << 20).fill(1));
    }
    if (mode === 'flood') {
      // About 2 MiB of output in strings of 1 KB: the output cap, not the deadline or
      // the memory cap, must stop it. (One 2 MiB string makes the engine ask for over
      // 100 MiB at once while it serializes; 24,000 strings of 80 bytes took over the
      // 2 s deadline on a loaded machine.)
      return { lines: Array.from({ length: 2100 }, (_, i) => `line ${i} `.padEnd(1000, '.')) };
    }
    if (mode === 'print') {
      console.log('printed by js-limits');
    }
    return { mode };
  },
});
