//! Fuzzes every check a request passes before it reads anything (`dynapage::http::OfflineCheck`:
//! the bracket count, the parse, the request check of each transport, the price, async-graphql's
//! validation and execution on a schema without data): whatever the text, the variables and the
//! transport, the check must end without a panic or a stack overflow (run it with `ulimit -s
//! 2048`, a tokio worker's stack, as `scripts/fuzz` does). The first byte picks the transport;
//! the rest is the document, then, after the first NUL, the variables' JSON.
#![no_main]

use std::sync::OnceLock;

use dynapage::http::{OfflineCheck, Transport};
use libfuzzer_sys::fuzz_target;

fn check() -> &'static OfflineCheck {
    static CHECK: OnceLock<OfflineCheck> = OnceLock::new();
    CHECK.get_or_init(OfflineCheck::default)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let transport = match first % 3 {
        0 => Transport::Post,
        1 => Transport::Get,
        _ => Transport::WebSocket,
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let (text, variables) = rest.split_once('\0').unwrap_or((rest, "{}"));
    futures::executor::block_on(check().check_text(text, variables, transport));
});
