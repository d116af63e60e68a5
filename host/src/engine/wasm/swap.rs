//! Whether the kernel can move memory to swap, which decides how the pool puts a
//! slot's memory back between calls.
//!
//! The fast way asks the kernel which pages of a slot were written (`PAGEMAP_SCAN`)
//! and puts back only those. wasmtime 48 asks only for written pages that are
//! present: a written page the kernel moved to swap while its call ran is neither put
//! back nor dropped, and the next call's fresh instance in that slot reads what the
//! earlier call left there (measured: the WASI adapter's state of the earlier call,
//! found by the next one, made every fourth call fail while `evo serve`'s memory was
//! paged out). So the scan is used only where nothing can be swapped: on a machine
//! with swap each slot is put back whole, at about twice the cost of a small call.

use std::time::{Duration, Instant};

/// How often the epoch ticker looks again (idle or ticking), to tell an operator who
/// turns swap on while the engine runs with the scan.
pub(super) const RECHECK: Duration = Duration::from_secs(5);

/// Whether any swap area is on (`/proc/swaps` lists one). Where the file cannot be
/// read, swap is assumed to be on, which is the safe side.
pub(super) fn is_on() -> bool {
    std::fs::read_to_string("/proc/swaps").map_or(true, |swaps| lists_an_area(&swaps))
}

/// Whether `/proc/swaps`' text lists an area below its header line.
fn lists_an_area(swaps: &str) -> bool {
    swaps.lines().skip(1).any(|line| !line.trim().is_empty())
}

/// Says, once, that swap was turned on after the engine started resetting memory with
/// the page scan: until Evo restarts, a call's page that goes to swap may be seen by
/// the next call.
pub(super) struct Watch {
    last: Instant,
    told: bool,
}

impl Watch {
    pub(super) fn new() -> Self {
        Self {
            last: Instant::now(),
            told: false,
        }
    }

    /// Called whenever the epoch ticker wakes, ticking or idle; looks at `/proc/swaps`
    /// every [`RECHECK`].
    pub(super) fn check(&mut self) {
        if self.told || self.last.elapsed() < RECHECK {
            return;
        }
        self.last = Instant::now();
        if is_on() {
            self.told = true;
            tracing::error!(
                target: "evo::security",
                "swap was turned on after the Wasm engine started; restart Evo, so that each call's memory is reset in a way that covers pages moved to swap (until then a page of one call moved to swap may be read by a later call of the same skill)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lists_an_area;

    #[test]
    fn an_area_below_the_header_means_swap_is_on() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(!lists_an_area(header));
        assert!(!lists_an_area(""));
        assert!(lists_an_area(&format!(
            "{header}/dev/zram0                              partition\t8388604\t\t0\t\t100\n"
        )));
    }
}
