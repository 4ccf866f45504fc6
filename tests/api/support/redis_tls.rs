//! Redis over TLS for the tests: [`TlsFiles`], a CA and a certificate for 127.0.0.1 made by
//! the `openssl` command line for one server or one Cluster, so no key or certificate lives in
//! the repository and the CA is trusted by nothing but the test that asks for it; and
//! [`TlsRedis`], one `redis-server` that presents it. (A Cluster whose nodes speak only TLS is
//! `RedisCluster::start_tls`.)
//!
//! The single server also listens without TLS on a second port, used only to see that it is
//! ready; the tests talk to the TLS port.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tempfile::TempDir;

use crate::support::redis_server::{free_port, spawn, wait_until_ready};
use crate::support::services::{Process, RedisOptions};

/// A CA and a certificate for 127.0.0.1 signed by it, in a temporary directory removed on drop.
#[derive(Debug)]
pub struct TlsFiles {
    dir: TempDir,
}

impl TlsFiles {
    /// Makes the CA (`ca.pem`) and the certificate (`server.pem`, `server.key`).
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        make_certificates(dir.path());
        Self { dir }
    }

    /// The PEM file of the CA that signed the certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A file that is no CA (the certificate's private key).
    pub fn key_file(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }

    /// The `redis-server` arguments that present the certificate on its TLS port and trust
    /// the CA, without asking clients for a certificate. Cluster nodes present the same
    /// certificate to each other (the cluster bus always asks for one).
    pub fn server_args(&self) -> Vec<String> {
        let file = |name: &str| self.dir.path().join(name).display().to_string();
        vec![
            "--tls-cert-file".to_owned(),
            file("server.pem"),
            "--tls-key-file".to_owned(),
            file("server.key"),
            "--tls-ca-cert-file".to_owned(),
            file("ca.pem"),
            "--tls-auth-clients".to_owned(),
            "no".to_owned(),
        ]
    }

    /// The `redis-cli` arguments that speak TLS and trust the CA.
    pub fn cli_args(&self) -> Vec<String> {
        vec![
            "--tls".to_owned(),
            "--cacert".to_owned(),
            self.ca_file().display().to_string(),
        ]
    }
}

/// A TLS `redis-server` owned by one test, killed on drop with its certificates.
#[derive(Debug)]
pub struct TlsRedis {
    files: TlsFiles,
    tls_port: u16,
    process: Process,
}

impl TlsRedis {
    /// Makes a CA and a certificate for 127.0.0.1 signed by it, then starts a server that
    /// presents it on a free TLS port (and does not ask clients for certificates).
    pub fn start() -> Self {
        let files = TlsFiles::new();
        for _ in 0..5 {
            let (port, tls_port) = (free_port(), free_port());
            let mut args = vec!["--tls-port".to_owned(), tls_port.to_string()];
            args.extend(files.server_args());
            let mut process = spawn(port, &RedisOptions::with_args(&args));
            if wait_until_ready(port) {
                return Self {
                    files,
                    tls_port,
                    process,
                };
            }
            process.kill();
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
        self.files.ca_file()
    }

    /// A file that is no CA (the server's private key).
    pub fn key_file(&self) -> PathBuf {
        self.files.key_file()
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        self.process.kill();
    }
}

/// `ca.pem` (self-signed) and `server.pem`/`server.key` for IP 127.0.0.1, signed by it, for
/// servers and (the nodes of a Cluster, to each other) clients.
fn make_certificates(dir: &Path) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
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
