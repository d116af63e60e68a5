"""`py-limits`: a Python skill that misbehaves on request, for the tests of the limits
every guest runs under: `loop` never returns, `bomb` allocates without end, `flood`
returns more than the output cap, `read` opens a host file it was not granted, `print`
writes to stdout, `ok` behaves."""

from evo_skill import define_skill


def execute(input, run):
    mode = input["mode"]
    if mode == "loop":
        while True:
            pass
    if mode == "bomb":
        hoard = []
        while True:
            hoard.append(bytearray(8 << 20))
    if mode == "flood":
        # About 2 MiB of output in strings of 1 KB: the output cap, not the deadline, must
        # stop it (24,000 strings of 80 bytes cost a JavaScript guest over the 2 s
        # deadline on a loaded machine).
        return {"lines": [f"line {i} ".ljust(1000, ".") for i in range(2100)]}
    if mode == "read":
        with open("/etc/passwd") as f:
            return {"read": f.read()}
    if mode == "print":
        print("printed by py-limits")
    return {"mode": mode}


Skill = define_skill(
    {
        "name": "py-limits",
        "description": "Misbehaves on request (loop, bomb, flood, read, print) for the limit tests.",
        "category": "test",
        "timeout": 2000,
        "input": {
            "type": "object",
            "properties": {"mode": {"type": "string", "enum": ["ok", "loop", "bomb", "flood", "read", "print"]}},
            "required": ["mode"],
        },
        "output": {"type": "object"},
    },
    execute,
)
