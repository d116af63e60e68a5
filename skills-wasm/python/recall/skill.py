"""`py-recall`: remembers a fact and searches memory for it, then asks the `calculate`
skill for a sum: the host's context (memory, other skills, scratch, events, the log)
from Python."""

from evo_skill import context, define_skill


def execute(input, run):
    fact, query = input["fact"], input["query"]
    stored = run.step("store", {"fact": fact}, lambda: context.memory_store(fact, "fact"))["stored"]
    found = [e["text"] for e in run.step("search", {"query": query}, lambda: context.memory_search(query, 3))]
    # Since evo:skill 0.2.0: a search kept to one source, and the run's environment.
    sources = [e["source"] for e in context.memory_query(query, limit=3, sources=["user"])]
    locale = context.env()["locale"]
    total = context.call("calculate", {"expression": f"{input['a']} + {input['b']}"})["result"]
    runs = (context.scratch_get("py-recall-runs") or 0) + 1
    context.scratch_set("py-recall-runs", runs)
    context.emit({"type": "recalled", "found": len(found)})
    context.log("info", f'found {len(found)} entries for "{query}"')
    return {"stored": stored, "found": found, "sources": sources, "locale": locale,
            "sum": total, "runs": runs}


Skill = define_skill(
    {
        "name": "py-recall",
        "description": "Stores a fact in memory, searches for it, and has calculate add two numbers.",
        "category": "memory",
        "tags": ["memory", "python"],
        "calls": ["calculate"],
        "capabilities": {"memory": "read-write"},
        "input": {
            "type": "object",
            "properties": {
                "fact": {"type": "string"},
                "query": {"type": "string"},
                "a": {"type": "number"},
                "b": {"type": "number"},
            },
            "required": ["fact", "query", "a", "b"],
        },
        "output": {
            "type": "object",
            "properties": {
                "stored": {"type": "boolean"},
                "found": {"type": "array", "items": {"type": "string"}},
                "sources": {"type": "array", "items": {"type": "string"}},
                "locale": {"type": "string"},
                "sum": {"type": "number"},
                "runs": {"type": "integer"},
            },
            "required": ["stored", "found", "sources", "locale", "sum", "runs"],
        },
    },
    execute,
)
