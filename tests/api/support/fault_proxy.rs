//! A TCP proxy in front of a real backend that can pass traffic, delay it, or cut it: latency
//! injection and outages without touching the backend itself.

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
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let address = listener.local_addr().expect("proxy address");
        let state = Arc::new(Mutex::new((Fault::None, CancellationToken::new())));
        let stop = CancellationToken::new();
        let (state2, stop2) = (state.clone(), stop.clone());
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
                let state = state2.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::select! {
                        () = pump(cr, sw, state.clone()) => {}
                        () = pump(sr, cw, state) => {}
                        () = cut.cancelled() => {}
                    }
                });
            }
        });
        Self {
            address,
            state,
            stop,
        }
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

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    state: Arc<Mutex<(Fault, CancellationToken)>>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
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
