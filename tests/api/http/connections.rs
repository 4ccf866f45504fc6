//! Sockets that wait: the exact reproductions of issue 22, item 7 (sockets that send nothing,
//! stall mid-header or mid-body, or hold every file descriptor), each closed or bounded by the
//! server, and a normal client served afterwards.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::process::{dynapage_command, free_port};
use crate::helpers::{DEMO_SKU, TestApp};

/// Short timeouts, so the tests wait for them.
const SHORT: [&str; 6] = [
    "--header-timeout-ms",
    "600",
    "--body-timeout-ms",
    "900",
    "--idle-timeout-ms",
    "2500",
];

fn host_port(address: &str) -> String {
    address.trim_start_matches("http://").to_owned()
}

/// A raw socket to `address` from the local address `from` (any 127.x.y.z).
async fn try_connect_from(from: &str, address: &str) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(format!("{from}:0").parse().expect("an address"))?;
    socket
        .connect(host_port(address).parse().expect("the server's address"))
        .await
}

async fn connect_from(from: &str, address: &str) -> TcpStream {
    try_connect_from(from, address).await.expect("connected")
}

/// Reads until the server closes the socket (or `limit` passes): what it sent, and when.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buffer)).await {
            Err(_) => return (String::from_utf8_lossy(&received).into(), None),
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&received).into(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

/// A normal client still pages.
async fn still_serves(app: &TestApp) {
    let page = app.page(DEMO_SKU, serde_json::json!({ "first": 3 })).await;
    assert_eq!(page.ids.len(), 3);
}

#[tokio::test]
async fn silent_sockets_and_sockets_stalled_mid_header_are_closed_by_the_header_timeout() {
    let mut args = vec!["--demo-comments", "10"];
    args.extend(SHORT);
    let app = TestApp::spawn(&args).await;
    let mut silent = connect_from("127.0.0.1", &app.address).await;
    let mut stalled = connect_from("127.0.0.1", &app.address).await;
    stalled
        .write_all(b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: appl")
        .await
        .expect("sent");
    // A slowloris: one header byte every 100 ms, never the end of the head.
    let mut dripping = connect_from("127.0.0.1", &app.address).await;
    let drip = tokio::spawn(async move {
        dripping
            .write_all(b"GET /healthz HTTP/1.1\r\n")
            .await
            .ok()?;
        let started = Instant::now();
        for _ in 0..100 {
            if dripping.write_all(b"X").await.is_err() {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    });
    for (case, socket) in [("silent", &mut silent), ("mid-header", &mut stalled)] {
        let (_, closed) = until_closed(socket, Duration::from_secs(5)).await;
        let closed = closed.unwrap_or_else(|| panic!("{case}: still open after 5 s"));
        assert!(closed < Duration::from_millis(1_600), "{case}: {closed:?}");
    }
    let dripped = drip.await.expect("no panic");
    assert!(
        dripped.is_some_and(|d| d < Duration::from_secs(3)),
        "a head sent a byte at a time is cut by the header timeout: {dripped:?}"
    );
    still_serves(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_body_stalled_midway_answers_408_and_its_connection_is_closed() {
    let mut args = vec!["--demo-comments", "10"];
    args.extend(SHORT);
    let app = TestApp::spawn(&args).await;
    let mut socket = connect_from("127.0.0.1", &app.address).await;
    socket
        .write_all(
            b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"query\": \"{ produ",
        )
        .await
        .expect("sent");
    let (answer, closed) = until_closed(&mut socket, Duration::from_secs(5)).await;
    let closed = closed.expect("closed within 5 s");
    assert!(
        closed < Duration::from_millis(2_500),
        "closed after {closed:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    still_serves(&app).await;
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_keep_alive_connection_outlives_the_header_timeout_and_closes_when_idle() {
    let mut args = vec!["--demo-comments", "10"];
    args.extend(SHORT);
    let app = TestApp::spawn(&args).await;
    let mut socket = connect_from("127.0.0.1", &app.address).await;
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    socket.write_all(request).await.expect("sent");
    let mut buffer = [0u8; 1024];
    let n = socket.read(&mut buffer).await.expect("an answer");
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"));
    // Idle for longer than the header timeout: still open, and serves the next request.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    socket.write_all(request).await.expect("sent again");
    let n = socket.read(&mut buffer).await.expect("a second answer");
    assert!(buffer[..n].starts_with(b"HTTP/1.1 200"), "kept alive");
    let (_, closed) = until_closed(&mut socket, Duration::from_secs(6)).await;
    let closed = closed.expect("closed when idle");
    assert!(
        closed > Duration::from_millis(2_000) && closed < Duration::from_millis(3_500),
        "closed after {closed:?}, the idle timeout is 2.5 s"
    );
    app.stop().await.expect("clean stop");
}

#[tokio::test]
async fn one_address_holding_its_share_of_sockets_leaves_the_server_reachable_to_others() {
    let mut args = vec![
        "--demo-comments",
        "10",
        "--max-connections-per-address",
        "5",
    ];
    args.extend(SHORT);
    let app = TestApp::spawn(&args).await;
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(connect_from("127.0.0.3", &app.address).await);
    }
    // The sixth from the same address is closed at once, without an answer.
    let mut sixth = connect_from("127.0.0.3", &app.address).await;
    let (answer, closed) = until_closed(&mut sixth, Duration::from_secs(2)).await;
    assert!(
        closed.is_some_and(|c| c < Duration::from_millis(500)),
        "{closed:?}"
    );
    assert_eq!(answer, "");
    // Another address still reaches /healthz, and the API.
    let mut other = connect_from("127.0.0.4", &app.address).await;
    other
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("sent");
    let (answer, _) = until_closed(&mut other, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    still_serves(&app).await;
    // Every series is served from start-up (`http::metrics`): the refusal moved it.
    let metrics = app.metrics().await;
    let refused = [("reason", "max_connections_per_address")];
    assert!(
        metrics.value("dynapage_http_connections_refused_total", &refused) >= 1.0,
        "{}",
        metrics.text
    );
    assert!(metrics.value("dynapage_http_connections_open", &[]) >= 1.0);
    drop(held);
    app.stop().await.expect("clean stop");
}

/// The reproduction: a process with 64 file descriptors and 60 idle sockets from one
/// address. The server caps the connections under its limit and the address to its share, so
/// `/healthz` still answers another client.
#[tokio::test]
async fn sixty_idle_sockets_do_not_take_a_64_descriptor_server_off_the_network() {
    let port = free_port();
    let address = format!("http://127.0.0.1:{port}");
    let binary = dynapage_command("serve").as_std().get_program().to_owned();
    let mut child = tokio::process::Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(binary)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args([
            "--demo-comments",
            "0",
            "--max-connections-per-address",
            "20",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("dynapage serve starts");
    let healthz = |from: &'static str| {
        let address = address.clone();
        async move {
            let mut socket = try_connect_from(from, &address).await.ok()?;
            socket
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .ok()?;
            let (answer, _) = until_closed(&mut socket, Duration::from_secs(2)).await;
            answer.starts_with("HTTP/1.1 200").then_some(())
        }
    };
    let mut up = false;
    for _ in 0..300 {
        if let Ok(Some(())) =
            tokio::time::timeout(Duration::from_secs(3), healthz("127.0.0.1")).await
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "the server came up");
    let mut idle = Vec::new();
    for _ in 0..60 {
        idle.push(connect_from("127.0.0.5", &address).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        assert_eq!(
            healthz("127.0.0.6").await,
            Some(()),
            "another client is served"
        );
    }
    drop(idle);
    child.kill().await.expect("stopped");
}

#[tokio::test]
async fn over_max_connections_a_new_socket_is_closed_at_once_and_a_freed_place_serves_again() {
    let mut args = vec!["--demo-comments", "10", "--max-connections", "3"];
    args.extend(SHORT);
    let app = TestApp::spawn(&args).await;
    // Three places (one may be the test client's own pooled connection): fill them.
    let mut held = Vec::new();
    for from in ["127.0.0.7", "127.0.0.8", "127.0.0.9"] {
        held.push(connect_from(from, &app.address).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut over = connect_from("127.0.0.10", &app.address).await;
    let (answer, closed) = until_closed(&mut over, Duration::from_secs(2)).await;
    assert!(
        closed.is_some_and(|c| c < Duration::from_millis(500)),
        "{closed:?} {answer}"
    );
    // The held sockets send nothing: the header timeout frees their places, and the server
    // serves again.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let mut again = connect_from("127.0.0.10", &app.address).await;
    again
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("sent");
    let (answer, _) = until_closed(&mut again, Duration::from_secs(2)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(held);
    app.stop().await.expect("clean stop");
}
