# Sourced by ./scripts/test: a real Prometheus for the test that scrapes `evo serve`'s
# `/metrics` (Debian's `prometheus` package), installed here where missing; stops with
# a message if that fails (the test would fail without it, never skip). Only the
# binary is used: the test starts its own server on a free port and stops it.
#
# Exports EVO_TEST_PROMETHEUS (the binary).

if ! command -v prometheus >/dev/null 2>&1; then
    echo "installing prometheus (the metrics test scrapes evo serve with it)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } >&2; then
        echo "error: could not install prometheus (the metrics test needs a real Prometheus)" >&2
        exit 1
    fi
fi
EVO_TEST_PROMETHEUS=$(command -v prometheus)
export EVO_TEST_PROMETHEUS
