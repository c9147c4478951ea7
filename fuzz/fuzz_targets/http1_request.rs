//! Arbitrary bytes as what a client sends on a connection of the pooled HTTP/1.1 driver: a request head
//! (parsed by httparse, then checked for ambiguous framing) and the body after it (Content-Length or chunked).
//!
//! The first byte sets how many bytes the body decoder is handed at a time (1–256), as reads of a socket
//! would cut them. The parsing must never panic, and:
//! - the body decoded from those pieces is the body decoded from all the bytes at once (the cut of the reads
//!   never changes a request);
//! - the body is no longer than the bytes after the head.

#![no_main]

use janitor_axum::serve::parse_request_bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, bytes)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first) + 1;
    let whole = parse_request_bytes(bytes, bytes.len());
    let cut = parse_request_bytes(bytes, piece);
    assert_eq!(
        whole, cut,
        "reading {piece} bytes at a time changed the body"
    );
    if let Some(body) = whole {
        assert!(body.len() <= bytes.len(), "a body longer than its input");
    }
});
