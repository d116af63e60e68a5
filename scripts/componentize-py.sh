# Sourced by ./scripts/test: componentize-py (pinned, from PyPI; a single wheel with no
# dependencies), which builds the Python skills in skills-wasm/python into components.
# Kept in a virtual environment under target/ and reused while the pin does not
# change; stops with a message if it cannot be installed (the Python skills' tests
# would fail without it, never skip).

COMPONENTIZE_PY_VERSION=0.25.1
venv=target/componentize-py
if [ "$("$venv/bin/componentize-py" --version 2>/dev/null)" != "componentize-py $COMPONENTIZE_PY_VERSION" ]; then
    if ! command -v python3 >/dev/null 2>&1; then
        echo "error: python3 is needed to build the Python skills; install Python 3.10 or later" >&2
        exit 1
    fi
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2 ||
        ! "$venv/bin/pip" install --quiet "componentize-py==$COMPONENTIZE_PY_VERSION" >&2; then
        echo "error: could not install componentize-py==$COMPONENTIZE_PY_VERSION into $venv" >&2
        exit 1
    fi
fi
EVO_COMPONENTIZE_PY="$(pwd)/$venv/bin/componentize-py"
export EVO_COMPONENTIZE_PY
