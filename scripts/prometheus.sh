# Sourced by ./scripts/test: a real Prometheus for the test that scrapes `evo serve`'s
# `/metrics` (Debian's `prometheus` package), installed here where missing; stops with
# a message if that fails (the test would fail without it, never skip). Only the
# binary is used: the test starts its own server on a free port and stops it.
#
# Exports EVO_TEST_PROMETHEUS (the binary).

if ! command -v prometheus >/dev/null 2>&1; then
    source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
    debian_install "the metrics test scrapes evo serve with a real Prometheus" prometheus
fi
EVO_TEST_PROMETHEUS=$(command -v prometheus)
export EVO_TEST_PROMETHEUS
