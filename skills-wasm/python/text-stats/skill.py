"""`py-text-stats`: counts the lines, words and characters of a text and names its most
common words. A Python skill built with componentize-py and evo_skill; the same answers
as `js-text-stats`."""

import re
from collections import Counter

from evo_skill import SkillError, define_skill

WORD = re.compile(r"[\w']+")


def execute(input, run):
    text = input["text"]
    top = input.get("top", 3)
    if not text.strip():
        raise SkillError.invalid_input("text: is empty; give some words to count")
    words = WORD.findall(text.lower())
    counts = Counter(words)
    common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    return {
        "lines": len(text.split("\n")),
        "words": len(words),
        "characters": len(text),
        "top": [{"word": word, "count": count} for word, count in common],
    }


Skill = define_skill(
    {
        "name": "py-text-stats",
        "description": "Counts the lines, words and characters of a text and lists its most common words.",
        "category": "text",
        "tags": ["text", "python"],
        "timeout": 2000,
        "input": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The text to measure."},
                "top": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 3,
                    "description": "How many common words to list.",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "lines": {"type": "integer"},
                "words": {"type": "integer"},
                "characters": {"type": "integer"},
                "top": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"word": {"type": "string"}, "count": {"type": "integer"}},
                    },
                },
            },
            "required": ["lines", "words", "characters", "top"],
        },
    },
    execute,
)
