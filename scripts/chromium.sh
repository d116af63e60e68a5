# Sourced by ./scripts/test: a real headless Chromium for the tests that drive the web
# console (Debian's `chromium` package), installed here where missing; stops with a
# message if that fails (the console tests would fail without it, never skip).
#
# Exports EVO_TEST_CHROMIUM (the binary).

if ! command -v chromium >/dev/null 2>&1; then
    source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
    debian_install "the console tests drive evo serve's web console with a real Chromium" chromium
fi
EVO_TEST_CHROMIUM=$(command -v chromium)
export EVO_TEST_CHROMIUM
