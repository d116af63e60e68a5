"""evo_skill: the Evo guest helper for Python skills (componentize-py).

    from evo_skill import SkillError, context, define_skill

    def execute(input, run):
        return {"greeting": f"Hello, {input['name']}!"}

    Skill = define_skill(
        {"name": "greet", "description": "Greets someone.", "input": {...}, "output": {...}},
        execute,
    )

`execute` gets the input already checked against the input schema (parsed JSON) and
returns the output (any JSON value). Raise a `SkillError` for an expected failure;
any other exception is reported as `failed` with its message. `context` reaches the
host (other skills, the model, memory, scratch, events, the log): each call is gated
by what the manifest asks for and the operator grants, and raises a `SkillError`.

The module that componentize-py builds must bind the result of `define_skill` to the
name `Skill`: that is the class it exports as the skill.
"""

import json
import time

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import context as _host
from wit_world.imports import types as _types

__all__ = ["SkillError", "context", "define_skill"]

_KINDS = {
    "invalid-input": _types.SkillError_InvalidInput,
    "not-found": _types.SkillError_NotFound,
    "denied": _types.SkillError_Denied,
    "timeout": _types.SkillError_Timeout,
    "failed": _types.SkillError_Failed,
}


class SkillError(Exception):
    """An expected failure, reported to the caller with its kind and message."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind if kind in _KINDS else "failed"
        self.message = str(message)

    @classmethod
    def invalid_input(cls, message):
        return cls("invalid-input", message)

    @classmethod
    def not_found(cls, message):
        return cls("not-found", message)

    @classmethod
    def denied(cls, message):
        return cls("denied", message)

    @classmethod
    def timeout(cls, message):
        return cls("timeout", message)

    @classmethod
    def failed(cls, message):
        return cls("failed", message)


def _from_host(err):
    """A `skill-error` the host returned (inside `Err`), as a `SkillError`."""
    value = err.value
    for kind, variant in _KINDS.items():
        if isinstance(value, variant):
            return SkillError(kind, value.value)
    return SkillError.failed(str(value))


def _host_call(f, *args):
    try:
        return f(*args)
    except Err as err:
        raise _from_host(err) from None


_LEVELS = {
    "trace": _types.LogLevel.TRACE,
    "debug": _types.LogLevel.DEBUG,
    "info": _types.LogLevel.INFO,
    "warn": _types.LogLevel.WARN,
    "error": _types.LogLevel.ERROR,
}


def _entry(e):
    """A memory entry the host returned, as a dict."""
    return {
        "id": e.id,
        "text": e.text,
        "score": e.score,
        "category": e.category,
        "created_at": e.created_at,
        "source": e.source,
        "superseded_by": e.superseded_by,
    }


class _Context:
    """What a skill may ask of the host."""

    def call(self, skill, input=None):
        """Calls another skill (listed in the manifest's `calls`); returns its output."""
        return json.loads(_host_call(_host.call, skill, json.dumps(input or {})))

    def llm(self, prompt, system=None, max_tokens=None, temperature=None, model=None):
        """Asks the model (needs `capabilities.llm`); returns its answer. `model` must
        be one the operator allows."""
        request = _types.LlmRequest(system, prompt, max_tokens, temperature, model)
        return _host_call(_host.llm, request)

    def memory_search(self, query, limit=5):
        """Searches memory (needs `capabilities.memory`): a list of dicts."""
        return [_entry(e) for e in _host_call(_host.memory_search, query, limit)]

    def memory_query(self, query, limit=5, sources=(), since=None, until=None,
                     include_superseded=False):
        """Searches memory with filters: `sources` (`user`, `capture`, `skill`, `file`,
        `log`), `since` / `until` (`YYYY-MM-DD`), and `include_superseded` for entries
        a later store replaced (their `superseded_by` says by which)."""
        request = _types.MemoryRequest(
            query, limit, list(sources), since, until, include_superseded
        )
        return [_entry(e) for e in _host_call(_host.memory_query, request)]

    def env(self):
        """The run's environment: `session`, `locale`, `model`, and the operator's
        `[env]` values."""
        return json.loads(_host.env())

    def memory_store(self, text, category=None):
        """Stores text now (needs `memory: "read-write"`): `{"stored", "reason"}`."""
        outcome = _host_call(_host.memory_store, text, category)
        return {"stored": outcome.stored, "reason": outcome.reason}

    def memory_forget(self, query):
        """Forgets entries matching an id or a query; returns how many."""
        return _host_call(_host.memory_forget, query)

    def scratch_get(self, key):
        """A value from the run's scratch space, or `None`."""
        value = _host.scratch_get(key)
        return None if value is None else json.loads(value)

    def scratch_set(self, key, value):
        """Writes a value to the run's scratch space."""
        _host.scratch_set(key, json.dumps(value))

    def emit(self, event):
        """Emits an event (a dict) to whoever watches the run."""
        _host.emit(json.dumps(event))

    def log(self, level, message):
        """Writes to the host's log: `trace`, `debug`, `info`, `warn` or `error`."""
        _host.log(_LEVELS.get(level, _types.LogLevel.INFO), str(message))


context = _Context()


class _Run:
    """One call's extras: memory to keep afterwards and the steps of its trace."""

    def __init__(self):
        self.memory_writes = []
        self.steps = []

    def remember(self, text, category=None):
        """Suggests keeping `text` in memory once the call succeeds."""
        self.memory_writes.append(_types.MemoryWrite(text, category))

    def step(self, name, input, f):
        """Runs `f()`, recording it as a step of the call's trace; returns its value."""
        started = time.monotonic()
        output = None
        error = None
        try:
            output = f()
            return output
        except Exception as e:
            error = str(e)
            raise
        finally:
            self.steps.append(
                _types.StepTrace(
                    f"step-{len(self.steps) + 1}",
                    name,
                    json.dumps(input),
                    json.dumps(output),
                    max(0, int((time.monotonic() - started) * 1000)),
                    error,
                )
            )


def define_skill(manifest, execute):
    """The skill class for a manifest and an `execute(input, run)` function.

    The manifest takes the fields of `skill.json` (`name`, `description`, `input` and
    `output` JSON Schemas, `category`, `version`, `tags`, `timeout`, `calls`,
    `limits`, `capabilities`).
    """
    for field in ("name", "description", "input", "output"):
        if manifest.get(field) is None:
            raise ValueError(f"define_skill: the manifest needs `{field}`")
    text = json.dumps(
        {
            "category": "general",
            "version": "0.1.0",
            "capabilities": {},
            **manifest,
            "mode": "code",
        }
    )

    class Skill(exports.Skill):
        def manifest(self):
            return text

        def execute(self, input):
            run = _Run()
            try:
                output = execute(json.loads(input), run)
            except SkillError as e:
                raise Err(_KINDS[e.kind](e.message)) from None
            except Exception as e:
                raise Err(_types.SkillError_Failed(f"{type(e).__name__}: {e}")) from None
            return _types.SkillOutput(json.dumps(output), run.memory_writes, run.steps)

    return Skill
