//! A call's memory stays its own when the kernel swaps it out: a page of one call moved
//! to swap while the call runs is not what the next call's fresh instance finds.
//!
//! wasmtime's pooling allocator can reset a slot's memory by asking the kernel which
//! pages were written (`PAGEMAP_SCAN`); that scan only reports pages that are present,
//! so a written page that is in swap was neither put back nor dropped, and the next
//! instance in the slot read it. Evo resets every slot without the scan. This test
//! needs swap (`./scripts/test` turns on a swap file when the machine has none) and
//! pages `evo serve`'s memory out while its calls run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use evo_tests::cli::HttpServer;
use serde_json::{Value, json};

/// Whether the kernel has somewhere to swap to.
fn swap_is_on() -> bool {
    std::fs::read_to_string("/proc/swaps").is_ok_and(|swaps| swaps.lines().count() > 1)
}

/// The writable memory of `pid`'s Wasm memory slots: the runs of writable mappings
/// that each end where a reservation of at least 1 GiB with no access begins (a slot's
/// memory, then the rest of its reservation and its guard).
fn slot_memory(maps: &str) -> Vec<(usize, usize)> {
    let mut slots = Vec::new();
    let mut run: Vec<(usize, usize)> = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (
            usize::from_str_radix(start, 16),
            usize::from_str_radix(end, 16),
        ) else {
            continue;
        };
        if run.last().is_some_and(|&(_, last_end)| last_end != start) {
            run.clear();
        }
        if perms.starts_with("rw") && perms.ends_with('p') {
            run.push((start, end));
        } else {
            if perms == "---p" && end - start >= 1 << 30 {
                slots.append(&mut run);
            }
            run.clear();
        }
    }
    slots
}

/// Asks the kernel to move the pages of `pid`'s Wasm memory slots to swap.
#[allow(
    unsafe_code,
    reason = "pidfd_open and process_madvise have no safe wrapper in the test dependencies"
)]
fn page_out(pid: u32) {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return;
    };
    let ranges: Vec<libc::iovec> = slot_memory(&maps)
        .into_iter()
        .map(|(start, end)| libc::iovec {
            iov_base: start as *mut libc::c_void,
            iov_len: end - start,
        })
        .collect();
    // SAFETY: a plain system call; the descriptor it returns is closed below.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return;
    }
    for chunk in ranges.chunks(512) {
        // SAFETY: the ranges name the other process's memory, which MADV_PAGEOUT only
        // moves to swap (its contents are kept); this process's memory is not touched.
        unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                pidfd,
                chunk.as_ptr(),
                chunk.len(),
                libc::MADV_PAGEOUT,
                0,
            )
        };
    }
    // SAFETY: `pidfd` is a descriptor this function opened and no one else holds.
    unsafe { libc::close(pidfd as libc::c_int) };
}

/// How much of `pid`'s Wasm memory slots is in swap now, in KiB (the `Swap:` lines of
/// `/proc/PID/smaps` for the slots' mappings).
fn slots_in_swap(pid: u32) -> u64 {
    let (Ok(maps), Ok(smaps)) = (
        std::fs::read_to_string(format!("/proc/{pid}/maps")),
        std::fs::read_to_string(format!("/proc/{pid}/smaps")),
    ) else {
        return 0;
    };
    let slots = slot_memory(&maps);
    let mut in_slot = false;
    let mut kib = 0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if let Some((start, _)) = first.split_once('-')
            && let Ok(start) = usize::from_str_radix(start, 16)
        {
            in_slot = slots.iter().any(|&(s, e)| (s..e).contains(&start));
        } else if in_slot && let Some(value) = line.strip_prefix("Swap:") {
            kib += value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .unwrap_or(0);
        }
    }
    kib
}

#[test]
fn a_call_never_finds_memory_of_an_earlier_call_that_was_swapped_out() {
    assert!(
        swap_is_on(),
        "this test needs swap: ./scripts/test turns on a swap file (scripts/swap.sh); run it, or turn swap on with swapon"
    );
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let skill = home.join("skills/fixture-probe");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::copy(evo_tests::skills::FIXTURE_PROBE, skill.join("skill.wasm")).unwrap();
    let server = HttpServer::start(&home, &[]);
    let pid = server.child.id();

    let stop = Arc::new(AtomicBool::new(false));
    // The most of the slots' memory seen in swap while the calls ran: a run in which
    // nothing was swapped out proves nothing, and fails.
    let pager = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut most = 0;
            while !stop.load(Ordering::Relaxed) {
                page_out(pid);
                most = most.max(slots_in_swap(pid));
            }
            most
        }
    });
    let url = format!("{}/v1/skills/fixture-probe/call", server.base);
    let mut troubles = Vec::new();
    for i in 0..60 {
        // The text is left in a static while the call writes to stdout for a while,
        // long enough for its pages to be moved to swap before the call ends.
        let input = json!({ "leave": format!("secret of call {i}"), "stdout_bytes": 60_000 });
        let response = ureq::post(&url)
            .header("content-type", "application/json")
            .config()
            .http_status_as_error(false)
            .build()
            .send(input.to_string())
            .unwrap();
        let status = response.status().as_u16();
        let body: Value =
            serde_json::from_str(&response.into_body().read_to_string().unwrap()).unwrap();
        if status != 200 {
            troubles.push(format!("call {i}: {status} {body}"));
        } else if !body["output"]["left"].is_null() {
            troubles.push(format!("call {i} found {}", body["output"]["left"]));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swapped = pager.join().unwrap();
    assert!(
        swapped > 0,
        "nothing of the Wasm memory slots went to swap while the calls ran, so this run proved nothing: process_madvise(MADV_PAGEOUT) moved no page of `evo serve` (pid {pid}) out"
    );
    assert!(
        troubles.is_empty(),
        "every call has a fresh instance, so none may fail on or find what an earlier call left ({swapped} KiB of the slots were in swap): {troubles:#?}"
    );
}
