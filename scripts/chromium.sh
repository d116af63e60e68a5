# Sourced by ./scripts/test: a real headless Chromium for the tests that drive the web
# console (Debian's `chromium` package), installed here where missing; stops with a
# message if that fails (the console tests would fail without it, never skip).
#
# Exports EVO_TEST_CHROMIUM (the binary).

if ! command -v chromium >/dev/null 2>&1; then
    echo "installing chromium (the console tests drive evo serve's web console with it)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } >&2; then
        echo "error: could not install chromium (the console tests need a real browser)" >&2
        exit 1
    fi
fi
EVO_TEST_CHROMIUM=$(command -v chromium)
export EVO_TEST_CHROMIUM
