//! A hostile plain WIT component built with `wit-bindgen` alone: every function tries
//! to take more than a call is given — time, memory, result size, stdout, error size.

#![allow(
    unsafe_code,
    clippy::undocumented_unsafe_blocks,
    reason = "the glue wit-bindgen generates"
)]

wit_bindgen::generate!({ world: "hostile", path: "wit" });

use std::io::Write as _;

struct Component;

impl Guest for Component {
    fn spin() -> u64 {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
            if n == u64::MAX {
                return n;
            }
        }
    }

    fn hoard(mib: u32) -> u32 {
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for _ in 0..mib {
            kept.push(vec![1; 1 << 20]);
        }
        std::hint::black_box(&kept);
        u32::try_from(kept.len()).unwrap_or(u32::MAX)
    }

    fn flood(bytes: u32) -> String {
        "x".repeat(bytes as usize)
    }

    fn heap(n: u32) -> Vec<u8> {
        vec![7; n as usize]
    }

    fn shout(bytes: u32) -> u32 {
        let line = [b'!'; 1024];
        let mut out = std::io::stdout();
        let mut written = 0;
        while written < bytes {
            if out.write_all(&line).is_err() {
                break;
            }
            written = written.saturating_add(1024);
        }
        written
    }

    fn complain(bytes: u32) -> Result<u32, String> {
        Err("e".repeat(bytes as usize))
    }
}

export!(Component);
