# Sourced by ./scripts/test: makes sure the kernel can swap, for the test that pages
# `evo serve`'s memory out while calls run (swapped_memory.rs). A machine with swap is
# left as it is; on one without, a 256 MiB swap file is turned on for the run and turned
# off and removed when the sourcing script exits. Stops with a message if it cannot
# (the test would fail without swap, never skip).

# A run killed before its trap ran leaves its swap file on, and every later bench then
# measures the pool putting slots back whole: such a file (its run's process gone) is
# turned off and removed first.
for stale in /var/tmp/evo-test-swap.*; do
    [ -e "$stale" ] || continue
    owner=${stale#/var/tmp/evo-test-swap.}
    owner=${owner%%.*}
    if [ -n "$owner" ] && [ "$owner" != "$$" ] && ! kill -0 "$owner" 2>/dev/null; then
        swapoff "$stale" 2>/dev/null || true
        rm -f "$stale"
    fi
done
if [ "$(wc -l </proc/swaps)" -le 1 ]; then
    swap_file=$(mktemp "/var/tmp/evo-test-swap.$$.XXXXXX")
    # Written out where `fallocate` cannot make a file swap accepts.
    if ! { { fallocate -l 256M "$swap_file" || dd if=/dev/zero of="$swap_file" bs=1M count=256 status=none; } && chmod 600 "$swap_file" &&
        mkswap -q "$swap_file" && swapon "$swap_file"; } >&2; then
        rm -f "$swap_file"
        echo "error: could not turn on a swap file (the swapped-memory test needs swap; it needs root, or turn swap on yourself)" >&2
        exit 1
    fi
    stop_swap() {
        swapoff "$swap_file" 2>/dev/null || true
        rm -f "$swap_file"
    }
    # Chained with any EXIT trap set before (the registries' and PostgreSQL's).
    swap_previous_trap=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT$//")
    trap "stop_swap; ${swap_previous_trap:-true}" EXIT
fi
