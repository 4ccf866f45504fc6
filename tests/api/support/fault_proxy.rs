//! A TCP proxy in front of a real backend that can pass traffic, delay it, or cut it: latency
//! injection and outages without touching the backend itself. In front of DynamoDB (plain
//! HTTP/1.1 to DynamoDB Local) it also notes the operation each request calls, from its
//! `X-Amz-Target` header (`DynamoDB_20120810.Query`), for the IAM policy's test.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything as it comes.
    None,
    /// Hold every chunk this long before forwarding it.
    Delay(Duration),
    /// Close every connection at once, existing ones included.
    Refuse,
}

#[derive(Debug)]
pub struct FaultProxy {
    pub address: SocketAddr,
    state: Arc<Mutex<(Fault, CancellationToken)>>,
    stop: CancellationToken,
    targets: Targets,
}

/// The `X-Amz-Target` values of the requests that went through, in order.
type Targets = Arc<Mutex<Vec<String>>>;

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let address = listener.local_addr().expect("proxy address");
        let state = Arc::new(Mutex::new((Fault::None, CancellationToken::new())));
        let stop = CancellationToken::new();
        let targets = Targets::default();
        let (state2, stop2, targets2) = (state.clone(), stop.clone(), targets.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    () = stop2.cancelled() => return,
                };
                let Ok((client, _)) = accepted else { continue };
                let (fault, cut) = state2.lock().expect("proxy state").clone();
                if fault == Fault::Refuse {
                    drop(client);
                    continue;
                }
                let (state, targets) = (state2.clone(), targets2.clone());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    let requests = TargetReader::new(targets);
                    tokio::select! {
                        () = pump(cr, sw, state.clone(), Some(requests)) => {}
                        () = pump(sr, cw, state, None) => {}
                        () = cut.cancelled() => {}
                    }
                });
            }
        });
        Self {
            address,
            state,
            stop,
            targets,
        }
    }

    /// The `X-Amz-Target` of every request since the last call, in order, and forgets them.
    pub fn take_targets(&self) -> Vec<String> {
        std::mem::take(&mut *self.targets.lock().expect("proxy targets"))
    }

    /// Changes the fault for new traffic; `Refuse` also cuts every open connection.
    pub fn set(&self, fault: Fault) {
        let mut state = self.state.lock().expect("proxy state");
        if fault == Fault::Refuse {
            state.1.cancel();
            state.1 = CancellationToken::new();
        }
        state.0 = fault;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.state.lock().expect("proxy state").1.cancel();
    }
}

/// Reads the `X-Amz-Target` header lines out of a client's bytes, however they are cut into
/// chunks. Lines longer than any header (request bodies) are skipped, not kept.
struct TargetReader {
    line: Vec<u8>,
    skipping: bool,
    targets: Targets,
}

impl TargetReader {
    const HEADER: &'static [u8] = b"x-amz-target:";
    const LONGEST: usize = 256;

    fn new(targets: Targets) -> Self {
        Self {
            line: Vec::new(),
            skipping: false,
            targets,
        }
    }

    fn read(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' {
                let line = std::mem::take(&mut self.line);
                if !self.skipping && line.len() > Self::HEADER.len() {
                    let (name, value) = line.split_at(Self::HEADER.len());
                    if name.eq_ignore_ascii_case(Self::HEADER) {
                        let value = String::from_utf8_lossy(value).trim().to_owned();
                        self.targets.lock().expect("proxy targets").push(value);
                    }
                }
                self.skipping = false;
            } else if self.line.len() < Self::LONGEST {
                self.line.push(byte);
            } else {
                self.skipping = true;
            }
        }
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    state: Arc<Mutex<(Fault, CancellationToken)>>,
    mut requests: Option<TargetReader>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some(requests) = &mut requests {
            requests.read(&buffer[..n]);
        }
        let fault = state.lock().expect("proxy state").0;
        match fault {
            Fault::Refuse => return,
            Fault::Delay(delay) => tokio::time::sleep(delay).await,
            Fault::None => {}
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
