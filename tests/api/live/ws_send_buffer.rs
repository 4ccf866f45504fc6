//! What a WebSocket client that stops reading leaves in the server's kernel (issue 22, item 2):
//! at most `--websocket-send-buffer-bytes` (doubled by Linux), where the kernel's own sizing
//! would let it grow to megabytes, all written (copies and system calls) before the send
//! deadline even starts. Read from `/proc/net/tcp` (the unsent bytes of each of the server's
//! sockets), with both settings, so the test shows the difference it guards.

use std::time::Duration;

use serde_json::json;

use crate::helpers::process::ServerProcess;
use crate::helpers::websocket::{Client, EVENTS};
use crate::live::ws_attacks::a_normal_client_still_subscribes;

/// The most bytes the kernel holds unsent on any connection of the server listening on
/// `port` (`/proc/net/tcp`'s `tx_queue`, the local address being the server's).
fn most_queued_on(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // "0100007F:1F90" (local address), then "tx_queue:rx_queue", in hex.
            let (_, local_port) = fields.get(1)?.split_once(':')?;
            if u16::from_str_radix(local_port, 16).ok()? != port {
                return None;
            }
            let (tx, _) = fields.get(4)?.split_once(':')?;
            u64::from_str_radix(tx, 16).ok()
        })
        .max()
        .unwrap_or(0)
}

/// [`most_queued_on`] once the silent socket's writer has pushed what the kernel takes (two
/// reads 100 ms apart agree), or after 5 s on a slow machine: the most it read meanwhile.
async fn settled_queue(port: u16) -> u64 {
    let mut last = most_queued_on(port);
    let mut most = last;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = most_queued_on(port);
        most = most.max(now);
        if now == last && now > 0 {
            break;
        }
        last = now;
    }
    most
}

/// A server with `--websocket-send-buffer-bytes send_buffer`, a socket that subscribes four
/// times and then reads nothing, and 1.7 MB of events for it (100 comments of 4 kB); what the
/// kernel holds unsent for it then. A normal client still subscribes and hears a comment.
async fn queued_for_a_silent_socket(send_buffer: &str) -> u64 {
    let mut server = ServerProcess::unmetered(&[
        // Long enough that the socket is still open when its queue is read.
        "--websocket-send-timeout-ms",
        "60000",
        "--subscription-buffer",
        "100000",
        "--websocket-send-buffer-bytes",
        send_buffer,
    ])
    .await;
    let port: u16 = server
        .address
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .expect("a port");
    let mut silent = Client::ready_at(&server.address, &[], false).await;
    for id in 0..4 {
        silent
            .subscribe_to(&id.to_string(), EVENTS, json!({ "sku": "FLOOD" }))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let body = "x".repeat(4_000);
    for _ in 0..100 {
        server.add_comment(None, "FLOOD", &body, 3).await;
    }
    let queued = settled_queue(port).await;
    let mut normal = Client::ready_at(&server.address, &[], false).await;
    a_normal_client_still_subscribes(&server, &mut normal, "FLOOD").await;
    drop(silent);
    server.terminate(Duration::from_secs(10)).await;
    queued
}

/// What Linux may hold for a socket whose send buffer is `bytes`: twice that (its bookkeeping),
/// and one packet more, since a write that starts below the limit is taken whole up to a
/// packet (64 KiB on the loopback interface).
fn bound(bytes: u64) -> u64 {
    2 * bytes + 64 * 1024
}

#[tokio::test]
async fn item2_a_socket_that_never_reads_leaves_at_most_its_send_buffer_in_the_servers_kernel() {
    let capped = queued_for_a_silent_socket("16384").await;
    let kernels_own = queued_for_a_silent_socket("0").await;
    eprintln!("unsent bytes for the silent socket: capped {capped}, kernel's sizing {kernels_own}");
    assert!(
        capped > 0,
        "the silent socket's sends are stuck in the kernel"
    );
    assert!(
        capped <= bound(16_384),
        "at most the send buffer and a packet: {capped} bytes"
    );
    assert!(
        kernels_own > 4 * bound(16_384),
        "without the cap the kernel holds far more: {kernels_own} bytes"
    );
}
