//! `live-load`: load on live comments. `subscribers` WebSocket clients subscribe to one
//! product's `commentEvents`, then comments are added through the API at `rate` a second for
//! `seconds`, each with its send time in its body. Every client notes when each ADDED event
//! reaches it, so the delivery lag is measured end to end: from the write request to the
//! client, through the table, its stream, the consumer, the Redis change log and the server's
//! fan-out. `slow` further clients subscribe with a tiny receive window and read nothing until
//! the end: they should be closed rather than held in memory. With `products` above 1, the
//! subscribers and the writes are spread round-robin over that many products (`SKU_0`,
//! `SKU_1`, ...), each client expecting its own product's writes. One JSON line reports the
//! counts and the lag's p50, p99 and maximum (BENCHMARKS.md, `live`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};

use crate::stats::percentile;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The server, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// The product subscribed to and written to (the prefix of each, with `--products`)
    #[arg(long, default_value = "LIVE_LOAD")]
    sku: String,
    /// How many products the subscribers and writes are spread over
    #[arg(long, default_value_t = 1)]
    products: u64,
    /// WebSocket clients subscribed to the product
    #[arg(long, default_value_t = 1000)]
    subscribers: usize,
    /// Clients that read nothing until the end (each should be closed as too slow).
    #[arg(long, default_value_t = 0)]
    slow: usize,
    /// Comments added per second.
    #[arg(long, default_value_t = 100)]
    rate: u64,
    /// How long comments are added
    #[arg(long, default_value_t = 30)]
    seconds: u64,
}

const EVENTS: &str =
    "subscription($sku: String!) { commentEvents(sku: $sku) { kind edge { node { body } } } }";

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl Args {
    /// The product of subscriber or write number `n`.
    fn product(&self, n: u64) -> String {
        if self.products <= 1 {
            self.sku.clone()
        } else {
            format!("{}_{}", self.sku, n % self.products)
        }
    }

    /// The writes (by number, out of `writes`) that subscriber `n` should receive.
    fn expected(&self, n: u64, writes: u64) -> impl Iterator<Item = u64> {
        let step = self.products.max(1);
        (n % step..writes).step_by(step as usize)
    }
}

/// A subscribed client (after `connection_ack` and `subscribe`) of `sku`.
async fn subscribe(args: &Args, sku: String, small_window: bool) -> anyhow::Result<Socket> {
    let url = format!("{}/graphql", args.url.replacen("http", "ws", 1));
    let mut request = url.into_client_request()?;
    request
        .headers_mut()
        .insert("sec-websocket-protocol", "graphql-transport-ws".parse()?);
    let address: std::net::SocketAddr = args.url.trim_start_matches("http://").parse()?;
    let tcp = tokio::net::TcpSocket::new_v4()?;
    if small_window {
        tcp.set_recv_buffer_size(4096)?;
    }
    let stream = tcp.connect(address).await?;
    let (mut socket, _) =
        tokio_tungstenite::client_async(request, tokio_tungstenite::MaybeTlsStream::Plain(stream))
            .await?;
    let send = |value: Value| Message::Text(value.to_string().into());
    socket
        .send(send(json!({ "type": "connection_init", "payload": {} })))
        .await?;
    loop {
        match socket.next().await.context("closed before its ack")?? {
            Message::Text(text) if text.contains("connection_ack") => break,
            _ => continue,
        }
    }
    socket
        .send(send(json!({ "id": "1", "type": "subscribe",
            "payload": { "query": EVENTS, "variables": { "sku": sku } } })))
        .await?;
    Ok(socket)
}

/// Reads events until `deadline`; returns the write number and lag (in microseconds) of each
/// ADDED event.
async fn read_events(mut socket: Socket, deadline: Instant) -> Vec<(u64, u64)> {
    let mut lags = Vec::new();
    while let Ok(Some(Ok(message))) = tokio::time::timeout_at(deadline.into(), socket.next()).await
    {
        let Message::Text(text) = message else {
            continue;
        };
        let received = now_micros();
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        if value["type"] == "ping" {
            let _ = socket
                .send(Message::Text(json!({ "type": "pong" }).to_string().into()))
                .await;
            continue;
        }
        let body = &value["payload"]["data"]["commentEvents"]["edge"]["node"]["body"];
        if let Some((sent, seq)) = body
            .as_str()
            .and_then(|b| b.strip_prefix("t="))
            .and_then(|b| b.split_once(";n="))
        {
            if let (Ok(sent), Ok(seq)) = (sent.parse::<u64>(), seq.parse::<u64>()) {
                lags.push((seq, received.saturating_sub(sent)));
            }
        }
    }
    lags
}

/// How the server ended a slow client: `"slow"` (SLOW_SUBSCRIBER), `"closed"` (the socket was
/// closed, e.g. its keep-alive pings went unanswered for 30 s) or `"open"` (still open).
async fn end_of_slow_client(mut socket: Socket) -> &'static str {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match tokio::time::timeout_at(deadline.into(), socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) if text.contains("SLOW_SUBSCRIBER") => return "slow",
            Ok(Some(Ok(Message::Close(_)))) | Ok(Some(Err(_))) | Ok(None) => return "closed",
            Ok(Some(Ok(_))) => continue,
            Err(_) => return "open",
        }
    }
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let args = Arc::new(args);
    let mut sockets = Vec::with_capacity(args.subscribers);
    for chunk in (0..args.subscribers as u64).collect::<Vec<_>>().chunks(100) {
        let opened = futures::future::try_join_all(
            chunk
                .iter()
                .map(|n| subscribe(&args, args.product(*n), false)),
        )
        .await
        .context("opening the subscribers")?;
        sockets.extend(opened);
    }
    let mut slow = Vec::with_capacity(args.slow);
    for n in 0..args.slow as u64 {
        slow.push(
            subscribe(&args, args.product(n), true)
                .await
                .context("opening a slow client")?,
        );
    }
    // Let every subscription start before the first write.
    tokio::time::sleep(Duration::from_secs(1)).await;

    let writing = Duration::from_secs(args.seconds);
    // Clients read on for 15 s after the last write: an overloaded server delivers late, and a
    // delivery cut off by the deadline counts as missed.
    let deadline = Instant::now() + writing + Duration::from_secs(15);
    let readers: Vec<_> = sockets
        .into_iter()
        .map(|socket| tokio::spawn(read_events(socket, deadline)))
        .collect();

    let client = reqwest::Client::new();
    let endpoint = format!("{}/graphql", args.url);
    let failed = Arc::new(Mutex::new(std::collections::HashSet::<u64>::new()));
    let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / args.rate.max(1)));
    let started = Instant::now();
    let mut writes = 0u64;
    let mut in_flight = Vec::new();
    while started.elapsed() < writing {
        ticker.tick().await;
        let seq = writes;
        let (client, endpoint, failed, sku) = (
            client.clone(),
            endpoint.clone(),
            failed.clone(),
            args.product(writes),
        );
        in_flight.push(tokio::spawn(async move {
            let body = json!({
                "query": "mutation($sku: String!, $body: String!) { addComment(input: { sku: $sku, author: \"load\", body: $body, rating: 4 }) { comment { id } } }",
                "variables": { "sku": sku, "body": format!("t={};n={seq}", now_micros()) },
            });
            let ok = match client.post(&endpoint).json(&body).send().await {
                Ok(response) => response
                    .json::<Value>()
                    .await
                    .is_ok_and(|v| v.get("errors").is_none()),
                Err(_) => false,
            };
            if !ok {
                failed.lock().unwrap_or_else(|p| p.into_inner()).insert(seq);
            }
        }));
        writes += 1;
    }
    let write_seconds = started.elapsed().as_secs_f64();
    futures::future::join_all(in_flight).await;

    let mut lags = Vec::new();
    let mut per_client_min = usize::MAX;
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|p| p.into_inner()));
    // Writes that some client never received, and how many clients missed each.
    let mut missed = std::collections::BTreeMap::<u64, usize>::new();
    let mut expected = 0u64;
    for (n, reader) in readers.into_iter().enumerate() {
        let got = reader.await.unwrap_or_default();
        per_client_min = per_client_min.min(got.len());
        let seen: std::collections::HashSet<u64> = got.iter().map(|(seq, _)| *seq).collect();
        for seq in args.expected(n as u64, writes) {
            if failed.contains(&seq) {
                continue;
            }
            expected += 1;
            if !seen.contains(&seq) {
                *missed.entry(seq).or_default() += 1;
            }
        }
        lags.extend(got.into_iter().map(|(_, lag)| lag));
    }
    let ends = futures::future::join_all(slow.into_iter().map(end_of_slow_client)).await;
    let count = |end: &str| ends.iter().filter(|e| **e == end).count();
    lags.sort_unstable();
    let lags: Vec<f64> = lags
        .into_iter()
        .map(|micros| micros as f64 / 1000.0)
        .collect();
    println!(
        "{}",
        json!({
            "subscribers": args.subscribers,
            "writes": writes,
            "write_rate": (writes as f64 / write_seconds).round(),
            "products": args.products,
            "failed_writes": failed.len(),
            "expected_deliveries": expected,
            "deliveries": lags.len(),
            "fewest_by_one_client": if per_client_min == usize::MAX { 0 } else { per_client_min },
            "writes_missed_by_some": missed.len(),
            "first_missed": missed.iter().take(5).map(|(seq, n)| json!([seq, n])).collect::<Vec<_>>(),
            "lag_ms": {
                "p50": percentile(&lags, 50.0),
                "p99": percentile(&lags, 99.0),
                "max": percentile(&lags, 100.0),
            },
            "slow_clients": args.slow,
            "slow_clients_ended_slow_subscriber": count("slow"),
            "slow_clients_closed_otherwise": count("closed"),
            "slow_clients_still_open": count("open"),
        })
    );
    Ok(())
}
