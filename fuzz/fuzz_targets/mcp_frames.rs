//! MCP JSON-RPC frames as `evo serve` reads them: every line becomes one message for the
//! session or one JSON-RPC error answer (-32700 not JSON, -32600 not a message MCP
//! knows, or too long), never a panic, and never more than one of either per line.
#![no_main]

use evo_host::serve::stdio::LineTransport;
use libfuzzer_sys::fuzz_target;
use rmcp::RoleServer;
use rmcp::transport::Transport;
use tokio::io::AsyncReadExt as _;

/// Small enough that the fuzzer reaches the too-long answer.
const MAX_BYTES: usize = 512;

fuzz_target!(|bytes: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (write, mut answers) = tokio::io::duplex(8 << 20);
        let (mut transport, eof) =
            LineTransport::new(std::io::Cursor::new(bytes.to_vec()), write, MAX_BYTES);
        let mut messages = 0;
        while let Some(message) = Transport::<RoleServer>::receive(&mut transport).await {
            serde_json::to_string(&message).expect("a message received serialises again");
            messages += 1;
        }
        eof.cancelled().await;
        drop(transport);
        let mut written = String::new();
        answers
            .read_to_string(&mut written)
            .await
            .expect("answers are UTF-8");
        let lines = bytes.split(|b| *b == b'\n').count();
        let mut errors = 0;
        for answer in written.lines() {
            let answer: serde_json::Value = serde_json::from_str(answer).expect("JSON");
            assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
            let code = answer["error"]["code"].as_i64().expect("an error code");
            assert!(code == -32700 || code == -32600, "{answer}");
            assert!(!answer["error"]["message"].as_str().unwrap_or("").is_empty());
            errors += 1;
        }
        assert!(messages + errors <= lines, "{messages} + {errors} > {lines} lines");
    });
});
