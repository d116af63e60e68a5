// evo-skill.js: the Evo guest helper for JavaScript skills (ComponentizeJS).
//
//     import { defineSkill, SkillError, context } from './evo-skill.js';
//
//     export const skill = defineSkill({
//       manifest: { name: 'greet', description: 'Greets someone.', input: {...}, output: {...} },
//       execute(input, run) { return { greeting: `Hello, ${input.name}!` }; },
//     });
//
// `execute` gets the input already checked against the input schema (parsed JSON) and
// returns the output (any JSON value). Throw a `SkillError` for an expected failure;
// anything else thrown is reported as `failed` with its message. `context` reaches the
// host (other skills, the model, memory, scratch, events, the log): each call is gated
// by what the manifest asks for and the operator grants, and fails with a `SkillError`.

import * as host from 'evo:skill/context@0.2.0';

/** The kinds of `skill-error` in wit/skill.wit. */
const KINDS = ['invalid-input', 'not-found', 'denied', 'timeout', 'failed'];

/** An expected failure, reported to the caller with its kind and message. */
export class SkillError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = KINDS.includes(kind) ? kind : 'failed';
  }
  static invalidInput(message) { return new SkillError('invalid-input', message); }
  static notFound(message) { return new SkillError('not-found', message); }
  static denied(message) { return new SkillError('denied', message); }
  static timeout(message) { return new SkillError('timeout', message); }
  static failed(message) { return new SkillError('failed', message); }
}

/** A `skill-error` the host returned, as a `SkillError`. */
function fromHost(e) {
  const err = e && e.payload !== undefined ? e.payload : e;
  if (err && typeof err.tag === 'string') return new SkillError(err.tag, String(err.val));
  return SkillError.failed(String(err && err.message ? err.message : err));
}

/** Runs a host call, turning its error into a `SkillError`. */
function hostCall(f) {
  try {
    return f();
  } catch (e) {
    throw fromHost(e);
  }
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'];

/** A memory entry the host returned, with plain numbers. */
function entry(e) {
  return {
    id: e.id,
    text: e.text,
    score: e.score,
    category: e.category,
    createdAt: Number(e.createdAt),
    source: e.source,
    supersededBy: e.supersededBy,
  };
}

/** What a skill may ask of the host. */
export const context = {
  /** Calls another skill (listed in the manifest's `calls`) and returns its output. */
  call(skill, input) {
    return JSON.parse(hostCall(() => host.call(skill, JSON.stringify(input ?? {}))));
  },
  /** Asks the model (needs `capabilities.llm`); `model` must be one the operator allows. */
  llm(prompt, { system, maxTokens, temperature, model } = {}) {
    return hostCall(() => host.llm({ system, prompt, maxTokens, temperature, model }));
  },
  /** Searches memory (needs `capabilities.memory`); `createdAt` in ms since the epoch. */
  memorySearch(query, limit = 5) {
    return hostCall(() => host.memorySearch(query, limit)).map(entry);
  },
  /**
   * Searches memory with filters: `sources` (`user`, `capture`, `skill`, `file`, `log`),
   * `since` / `until` (`YYYY-MM-DD`), and `includeSuperseded` for entries a later store
   * replaced (their `supersededBy` says by which).
   */
  memoryQuery(query, { limit = 5, sources = [], since, until, includeSuperseded = false } = {}) {
    const request = { query, limit, sources, since, until, includeSuperseded };
    return hostCall(() => host.memoryQuery(request)).map(entry);
  },
  /** The run's environment: `session`, `locale`, `model`, and the operator's `[env]`. */
  env() {
    return JSON.parse(host.env());
  },
  /** Stores text in memory now (needs `memory: "read-write"`): `{ stored, reason }`. */
  memoryStore(text, category) {
    return hostCall(() => host.memoryStore(text, category));
  },
  /** Forgets entries matching an id or a query; returns how many. */
  memoryForget(query) {
    return hostCall(() => host.memoryForget(query));
  },
  /** A value from the run's scratch space, or `undefined`. */
  scratchGet(key) {
    const value = host.scratchGet(key);
    return value === undefined ? undefined : JSON.parse(value);
  },
  /** Writes a value to the run's scratch space. */
  scratchSet(key, value) {
    host.scratchSet(key, JSON.stringify(value));
  },
  /** Emits an event (an object) to whoever watches the run. */
  emit(event) {
    host.emit(JSON.stringify(event));
  },
  /** Writes to the host's log: `trace`, `debug`, `info`, `warn` or `error`. */
  log(level, message) {
    host.log(LEVELS.includes(level) ? level : 'info', String(message));
  },
};

/**
 * A skill from its manifest and `execute`. The manifest takes the fields of
 * `skill.json` (`name`, `description`, `input` and `output` JSON Schemas, `category`,
 * `version`, `tags`, `timeout`, `calls`, `limits`, `capabilities`).
 */
export function defineSkill({ manifest, execute }) {
  for (const field of ['name', 'description', 'input', 'output']) {
    if (manifest == null || manifest[field] == null) {
      throw new Error(`defineSkill: the manifest needs \`${field}\``);
    }
  }
  const text = JSON.stringify({
    category: 'general',
    version: '0.1.0',
    capabilities: {},
    ...manifest,
    mode: 'code',
  });
  return {
    manifest() {
      return text;
    },
    execute(input) {
      const memoryWrites = [];
      const intermediateSteps = [];
      const run = {
        /** Suggests keeping `text` in memory once the call succeeds. */
        remember(text, category) {
          memoryWrites.push({ text, category });
        },
        /** Runs `f`, recording it as a step of the call's trace. */
        step(name, input, f) {
          const started = Date.now();
          let output = null;
          let error;
          try {
            output = f();
            return output;
          } catch (e) {
            error = String(e && e.message ? e.message : e);
            throw e;
          } finally {
            intermediateSteps.push({
              stepId: `step-${intermediateSteps.length + 1}`,
              stepName: name,
              input: JSON.stringify(input ?? null),
              output: JSON.stringify(output ?? null),
              durationMs: BigInt(Math.max(0, Date.now() - started)),
              error,
            });
          }
        },
      };
      let output;
      try {
        output = execute(JSON.parse(input), run);
      } catch (e) {
        const err = e instanceof SkillError ? e : SkillError.failed(String(e && e.message ? e.message : e));
        throw { tag: err.kind, val: err.message };
      }
      return { output: JSON.stringify(output ?? null), memoryWrites, intermediateSteps };
    },
  };
}
