# Sourced by ./scripts/test: ComponentizeJS (pinned with its whole dependency tree in
# scripts/componentize-js/package-lock.json, from npm), which builds the JavaScript
# skills in skills-wasm/js into components. Installed under target/ and reused while the
# lock file does not change; stops with a message if it cannot be installed (the
# JavaScript skills' tests would fail without it, never skip).

prefix=target/componentize-js
cli=$prefix/node_modules/@bytecodealliance/componentize-js/src/cli.js
if [ ! -f "$cli" ] || ! cmp -s scripts/componentize-js/package-lock.json "$prefix/package-lock.json"; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "error: Node.js 18 or later (node and npm) is needed to build the JavaScript skills" >&2
        exit 1
    fi
    rm -rf "$prefix"
    mkdir -p "$prefix"
    cp scripts/componentize-js/package.json scripts/componentize-js/package-lock.json "$prefix/"
    if ! npm ci --prefix "$prefix" --no-audit --no-fund --silent >&2 || [ ! -f "$cli" ]; then
        echo "error: could not install the pinned ComponentizeJS (scripts/componentize-js) into $prefix" >&2
        exit 1
    fi
fi
EVO_COMPONENTIZE_JS="$(pwd)/$cli"
export EVO_COMPONENTIZE_JS
