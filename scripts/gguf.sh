# Sourced by ./scripts/test: the `gguf` Python package (pinned, with its dependencies
# pinned), in a virtual environment under target/, with which the local-model tests
# write tiny GGUF models of random weights for each family `evo model install --file`
# takes (tests/fixtures/tiny_gguf.py). Stops with a message if it cannot be installed
# (the tests would fail without it, never skip).

GGUF_VERSION=0.17.1
gguf_venv=target/python-gguf-$GGUF_VERSION
if ! "$gguf_venv/bin/python" -c "import gguf, numpy" >/dev/null 2>&1; then
    rm -rf "$gguf_venv"
    if ! python3 -m venv "$gguf_venv" >&2 ||
        ! "$gguf_venv/bin/pip" install --quiet "gguf==$GGUF_VERSION" numpy==2.4.6 PyYAML==6.0.4 tqdm==4.70.1 >&2; then
        echo "error: could not install the gguf package (gguf==$GGUF_VERSION) into $gguf_venv" >&2
        exit 1
    fi
fi
EVO_TEST_GGUF_PYTHON="$(pwd)/$gguf_venv/bin/python"
export EVO_TEST_GGUF_PYTHON
