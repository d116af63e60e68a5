# Sourced by the scripts in this directory: makes sure the pinned Rust toolchain and the
# wasm32-wasip2 target are installed, or stops with a message saying what to do.

if ! command -v rustup >/dev/null 2>&1; then
    echo "error: rustup is not installed; install it from https://rustup.rs and run this again" >&2
    exit 1
fi
toolchain=$(sed -n 's/^channel *= *"\(.*\)"/\1/p' rust-toolchain.toml)
if ! rustup toolchain install "$toolchain" --profile minimal \
        --component rustfmt --component clippy --component rust-analyzer --target wasm32-wasip2 >/dev/null 2>&1; then
    echo "error: could not install Rust $toolchain with the wasm32-wasip2 target;" >&2
    echo "       try: rustup toolchain install $toolchain --target wasm32-wasip2" >&2
    exit 1
fi
if ! rustup target list --installed --toolchain "$toolchain" | grep -qx wasm32-wasip2; then
    echo "error: the wasm32-wasip2 target is still missing from Rust $toolchain" >&2
    exit 1
fi
