# Sourced by ./scripts/test: Sigstore's JavaScript verifier (@sigstore/verify and
# @sigstore/bundle, pinned with their dependencies in scripts/sigstore-js/package-lock.json,
# from npm), which the registry tests use to check that the Sigstore bundles Evo writes
# verify with a Sigstore client that is not Evo's (scripts/sigstore-js/verify.js). Installed
# under target/ and reused while the lock file does not change; stops with a message if it
# cannot be installed (the tests would fail without it, never skip).

sigstore_prefix=target/sigstore-js
if [ ! -d "$sigstore_prefix/node_modules/@sigstore/verify" ] \
    || ! cmp -s scripts/sigstore-js/package-lock.json "$sigstore_prefix/package-lock.json"; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "error: Node.js 20 or later (node and npm) is needed to check Evo's signatures with Sigstore's verifier" >&2
        exit 1
    fi
    rm -rf "$sigstore_prefix"
    mkdir -p "$sigstore_prefix"
    cp scripts/sigstore-js/package.json scripts/sigstore-js/package-lock.json "$sigstore_prefix/"
    if ! npm ci --prefix "$sigstore_prefix" --no-audit --no-fund --silent >&2 \
        || [ ! -d "$sigstore_prefix/node_modules/@sigstore/verify" ]; then
        echo "error: could not install the pinned Sigstore verifier (scripts/sigstore-js) into $sigstore_prefix" >&2
        exit 1
    fi
fi
# The script runs from the install, where it finds its modules.
cp scripts/sigstore-js/verify.js "$sigstore_prefix/verify.js"
EVO_SIGSTORE_VERIFY="$(pwd)/$sigstore_prefix/verify.js"
export EVO_SIGSTORE_VERIFY
