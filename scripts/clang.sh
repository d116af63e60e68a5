# Sourced by ./scripts/test: clang, lld, wasi-libc, the compiler runtime and libc++ for
# WebAssembly (Debian's packages, the version Debian pins), with which the tests build C
# and C++ skills as `evo new --lang c|cpp` projects; installed here where missing. Stops
# with a message if that fails (the C and C++ tests would fail without it, never skip).
# `evo skill build` finds them on PATH, as it does for a user.

clang_packages=(clang lld wasi-libc libclang-rt-dev-wasm32 libc++-dev-wasm32)
installed=$(dpkg-query -W -f='${Status}\n' "${clang_packages[@]}" 2>/dev/null | grep -c '^install ok installed$' || true)
if [ "$installed" -ne "${#clang_packages[@]}" ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/debian.sh"
    debian_install "the authoring tests build C and C++ skills with clang and wasi-libc" "${clang_packages[@]}"
fi
