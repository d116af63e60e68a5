# Sourced by ./scripts/test and ./scripts/bench: three throwaway OCI registries on
# loopback for the registry tests — the CNCF distribution registry from Debian's
# `docker-registry` package (2.8), one open to anonymous pushes and pulls, one behind
# basic auth (htpasswd), one behind the token flow — plus `skopeo`, a third-party OCI client the tests push with.
# Both packages are installed here where missing; the script stops with a message if
# that fails (the tests would fail without them, never skip). The registries are stopped
# and their storage removed when the sourcing script exits.
#
# Exports EVO_TEST_REGISTRY (host:port, anonymous), EVO_TEST_REGISTRY_AUTH (host:port,
# user `evo`, password EVO_TEST_REGISTRY_PASSWORD), EVO_TEST_REGISTRY_STORAGE (the open
# one's blob store, which tests tamper with), and for the token flow
# EVO_TEST_REGISTRY_TOKEN (host:port), EVO_TEST_TOKEN_PORT (where the test serves
# tokens), EVO_TEST_TOKEN_KEY and EVO_TEST_TOKEN_CERT (the signing key, PEM).

registry_missing=()
command -v docker-registry >/dev/null 2>&1 || registry_missing+=(docker-registry)
command -v skopeo >/dev/null 2>&1 || registry_missing+=(skopeo)
if [ "${#registry_missing[@]}" != 0 ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
    debian_install "the registry tests need a real registry and skopeo" "${registry_missing[@]}"
fi

registry_dir=$(mktemp -d /tmp/evo-registry.XXXXXX)
registry_pids=()
stop_registries() {
    for pid in "${registry_pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    rm -rf "$registry_dir"
}
# Chained with any EXIT trap set before (postgres.sh's).
registry_previous_trap=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT$//")
trap "stop_registries; ${registry_previous_trap:-true}" EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_registry NAME PORT [AUTH_YAML]
start_registry() {
    local name=$1 port=$2 auth=${3:-}
    mkdir -p "$registry_dir/$name"
    cat >"$registry_dir/$name/config.yml" <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $registry_dir/$name/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$auth
YAML
    docker-registry serve "$registry_dir/$name/config.yml" >"$registry_dir/$name/log" 2>&1 &
    registry_pids+=($!)
    for _ in $(seq 1 100); do
        if curl -s -o /dev/null "http://127.0.0.1:$port/v2/"; then
            return 0
        fi
        sleep 0.1
    done
    echo "error: the registry $name did not start on 127.0.0.1:$port:" >&2
    cat "$registry_dir/$name/log" >&2
    exit 1
}

EVO_TEST_REGISTRY_PASSWORD=evo-registry-pass
python3 -W ignore -c 'import crypt, sys; print("evo:" + crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH)))' \
    "$EVO_TEST_REGISTRY_PASSWORD" >"$registry_dir/htpasswd"

registry_port=$(free_port)
start_registry open "$registry_port"
registry_auth_port=$(free_port)
start_registry auth "$registry_auth_port" "auth:
  htpasswd:
    realm: evo-test
    path: $registry_dir/htpasswd"

# A third behind the registry token flow (what Docker Hub, GHCR and Harbor use): it
# trusts tokens signed by a throwaway key whose self-signed certificate it is given; the
# token service itself is the test's, on EVO_TEST_TOKEN_PORT, signing with that key.
if ! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=evo-test-token \
    -keyout "$registry_dir/token.key" -out "$registry_dir/token.crt" >/dev/null 2>&1; then
    echo "error: openssl could not make the token service's key" >&2
    exit 1
fi
registry_token_port=$(free_port)
# The test binds this one itself, minutes later: a port the kernel hands out for other
# sockets in between (any outgoing connection's, or a bind to port 0) could take it
# ("Address already in use"), so it is one below the ephemeral range, free now.
EVO_TEST_TOKEN_PORT=$(python3 - <<'PY'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
below = (10000, low) if low > 11000 else (10000, 65536)
for _ in range(500):
    port = random.randrange(*below)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
else:
    raise SystemExit("error: no free port for the token service")
PY
)
start_registry token "$registry_token_port" "auth:
  token:
    realm: http://127.0.0.1:$EVO_TEST_TOKEN_PORT/token
    service: evo-test-registry
    issuer: evo-test-issuer
    rootcertbundle: $registry_dir/token.crt"

EVO_TEST_REGISTRY="127.0.0.1:$registry_port"
EVO_TEST_REGISTRY_TOKEN="127.0.0.1:$registry_token_port"
EVO_TEST_TOKEN_KEY="$registry_dir/token.key"
EVO_TEST_TOKEN_CERT="$registry_dir/token.crt"
EVO_TEST_REGISTRY_AUTH="127.0.0.1:$registry_auth_port"
# Where the open registry keeps its blobs: the tests tamper with them there.
EVO_TEST_REGISTRY_STORAGE="$registry_dir/open/data"
export EVO_TEST_REGISTRY EVO_TEST_REGISTRY_AUTH EVO_TEST_REGISTRY_PASSWORD EVO_TEST_REGISTRY_STORAGE
export EVO_TEST_REGISTRY_TOKEN EVO_TEST_TOKEN_PORT EVO_TEST_TOKEN_KEY EVO_TEST_TOKEN_CERT
