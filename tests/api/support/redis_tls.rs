//! A `redis-server` that speaks TLS, with a CA and a server certificate for 127.0.0.1 made by
//! the `openssl` command line for this one server, so no key or certificate lives in the
//! repository and the CA is trusted by nothing but the test that asks for it.
//!
//! The server also listens without TLS on a second port, used only to see that it is ready;
//! the tests talk to the TLS port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use crate::support::redis_server::{free_port, spawn, wait_until_ready};

/// A TLS `redis-server` owned by one test, killed on drop with its certificates.
#[derive(Debug)]
pub struct TlsRedis {
    dir: TempDir,
    tls_port: u16,
    child: Child,
}

impl TlsRedis {
    /// Makes a CA and a certificate for 127.0.0.1 signed by it, then starts a server that
    /// presents it on a free TLS port (and does not ask clients for certificates).
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        make_certificates(dir.path());
        let file = |name: &str| dir.path().join(name).display().to_string();
        for _ in 0..5 {
            let (port, tls_port) = (free_port(), free_port());
            let tls_port_arg = tls_port.to_string();
            let (cert, key, ca) = (file("server.pem"), file("server.key"), file("ca.pem"));
            let mut child = spawn(
                port,
                &[
                    "--tls-port",
                    &tls_port_arg,
                    "--tls-cert-file",
                    &cert,
                    "--tls-key-file",
                    &key,
                    "--tls-ca-cert-file",
                    &ca,
                    "--tls-auth-clients",
                    "no",
                ],
                None,
            );
            if wait_until_ready(port) {
                return Self {
                    dir,
                    tls_port,
                    child,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("could not start a TLS redis-server (five attempts): is it built with TLS?");
    }

    /// `rediss://127.0.0.1:<tls port>`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.tls_port)
    }

    /// `redis://127.0.0.1:<tls port>`: plaintext to the port that only speaks TLS.
    pub fn plaintext_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.tls_port)
    }

    /// The PEM file of the CA that signed the server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ca.pem` (self-signed) and `server.pem`/`server.key` for IP 127.0.0.1, signed by it.
fn make_certificates(dir: &Path) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write the extensions file");
    for args in [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=dynapage test CA",
        ][..],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    ] {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("could not run `openssl` ({e}): install it"));
        assert!(
            output.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
