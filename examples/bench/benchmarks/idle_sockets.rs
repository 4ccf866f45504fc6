//! `idle-sockets`: the server's memory per idle WebSocket (issue 25, BENCHMARKS.md "Idle
//! sockets"). The embedded server with its socket and connection limits raised past the
//! sockets opened; N `graphql-transport-ws` sockets opened one after another
//! (`connection_init`, then, for the second kind, one `commentEvents` subscription each),
//! answering the server's pings and held open; the server's `VmRSS` (`/proc/PID/status`)
//! before the clients and a few seconds after the last socket was ready, divided by N. Each
//! kind has a fresh server. A socket's memory is its buffers and tasks, which the build
//! profile does not change much: `--build debug` will do.

use std::time::Duration;

use anyhow::{Context as _, bail};
use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::parse_seconds;
use crate::context::Context;
use crate::machine::Machine;
use crate::proc_stat::{loadavg, open_files_limit, rss_kb};
use crate::report::{Summary, log};
use crate::server::{Server, strings};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sockets of each kind
    #[arg(long, default_value_t = 2000)]
    sockets: u32,
    /// How long after the last socket was ready the memory is read
    #[arg(long, default_value = "3s", value_parser = parse_seconds)]
    settle: u64,
    /// The result file's name in bench/results, without `.txt`
    #[arg(long, default_value = "idle-sockets")]
    result_name: String,
}

const EVENTS: &str =
    r#"subscription { commentEvents(sku: "IDLE") { kind edge { node { id body } } } }"#;

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<()> {
    let limit = open_files_limit().unwrap_or(0);
    if limit < u64::from(args.sockets) + 100 {
        bail!(
            "the open-files limit ({limit}) is below {} sockets and a margin: raise it (ulimit -n 65536)",
            args.sockets
        );
    }
    ctx.build_dynapage()?;
    let mut out = Summary::create(&ctx.result(&format!("{}.txt", args.result_name)))?;
    for line in Machine::describe(ctx).header() {
        out.line(&line)?;
    }
    out.line(&format!(
        "# {} sockets of each kind, VmRSS read {} s after the last was ready; load before: {}",
        args.sockets,
        args.settle,
        loadavg()
    ))?;
    out.line("| socket | server RSS before | after | per socket |")?;
    out.line("|---|--:|--:|--:|")?;
    for (kind, subscribe) in [
        ("after `connection_init`", false),
        ("with one subscription", true),
    ] {
        let line = measure(ctx, &args, kind, subscribe).await?;
        log(&line);
        out.line(&line)?;
    }
    out.line(&format!("# load after: {}", loadavg()))?;
    log(&format!("wrote {}", out.path().display()));
    Ok(())
}

/// One kind of socket on a fresh server: its table row.
async fn measure(
    ctx: &Context,
    args: &Args,
    kind: &str,
    subscribe: bool,
) -> anyhow::Result<String> {
    let limit = (args.sockets * 5 / 2).max(5000).to_string();
    let connections = (args.sockets * 5).max(10_000).to_string();
    let serve = strings(&[
        "--demo-comments",
        "0",
        "--max-sockets-per-client",
        &limit,
        "--max-subscriptions-per-client",
        &limit,
        "--rate-limit-subscriptions",
        "0",
        "--rate-limit-cost",
        "0",
        "--rate-limit-writes",
        "0",
        "--max-connections-per-address",
        &limit,
        "--max-connections",
        &connections,
    ]);
    let server = Server::start(ctx, "idle-sockets", &serve).await?;
    let before = rss_kb(server.pid()).context("the server's VmRSS")?;
    let url = format!("{}/graphql", server.api.url.replacen("http", "ws", 1));
    let mut held = Vec::with_capacity(args.sockets as usize);
    for n in 0..args.sockets {
        let socket = open(&url, subscribe)
            .await
            .with_context(|| format!("socket {n}"))?;
        held.push(tokio::spawn(hold(socket)));
    }
    log(&format!("READY {}", held.len()));
    tokio::time::sleep(Duration::from_secs(args.settle)).await;
    let after = rss_kb(server.pid()).context("the server's VmRSS")?;
    for socket in held {
        socket.abort();
    }
    drop(server);
    let per_socket = (after.saturating_sub(before) * 1024) as f64 / f64::from(args.sockets);
    Ok(format!(
        "| {kind} | {before} kB | {after} kB | {} B |",
        crate::stats::thousands(per_socket, 0)
    ))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A socket after `connection_ack` (and its `subscribe`, if asked).
async fn open(url: &str, subscribe: bool) -> anyhow::Result<Socket> {
    let mut request = url.into_client_request()?;
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "graphql-transport-ws".parse()?);
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    let text = |value: serde_json::Value| Message::Text(value.to_string().into());
    socket
        .send(text(json!({ "type": "connection_init", "payload": {} })))
        .await?;
    loop {
        match socket.next().await.context("closed before its ack")?? {
            Message::Text(t) if t.contains("connection_ack") => break,
            Message::Text(t) if t.contains("\"ping\"") => {
                socket.send(text(json!({ "type": "pong" }))).await?;
            }
            _ => {}
        }
    }
    if subscribe {
        socket
            .send(text(
                json!({ "id": "1", "type": "subscribe", "payload": { "query": EVENTS } }),
            ))
            .await?;
    }
    Ok(socket)
}

/// Reads the socket until it closes, answering pings, as an idle client does.
async fn hold(mut socket: Socket) {
    while let Some(Ok(message)) = socket.next().await {
        if let Message::Text(text) = message {
            if text.contains("\"ping\"") {
                let pong = Message::Text(json!({ "type": "pong" }).to_string().into());
                if socket.send(pong).await.is_err() {
                    return;
                }
            }
        }
    }
}
