# Sourced by ./scripts/test: a Python virtual environment with the official MCP SDK
# (`mcp`, pinned), which the `evo serve` tests drive as a real client. Kept under
# target/ and reused while the pin does not change; stops with a message if it cannot
# be installed (the tests would fail without it, never skip).

MCP_SDK_VERSION=2.3.0
venv=target/python-mcp-$MCP_SDK_VERSION
if ! "$venv/bin/python" -c "import mcp" >/dev/null 2>&1; then
    if ! command -v python3 >/dev/null 2>&1; then
        echo "error: python3 is needed for the MCP client tests; install Python 3.10 or later" >&2
        exit 1
    fi
    rm -rf "$venv"
    if ! python3 -m venv "$venv" >&2 || ! "$venv/bin/pip" install --quiet "mcp==$MCP_SDK_VERSION" >&2; then
        echo "error: could not install the Python MCP SDK (mcp==$MCP_SDK_VERSION) into $venv" >&2
        exit 1
    fi
fi
EVO_TEST_PYTHON="$(pwd)/$venv/bin/python"
export EVO_TEST_PYTHON
