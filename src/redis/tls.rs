//! The private CA a `rediss://` Redis is trusted by.
//!
//! Managed Redis (ElastiCache, MemoryDB, Upstash, Redis Cloud) often accepts only TLS. Their
//! certificates chain to public roots, which `rediss://` checks against the system's trust
//! store; a self-hosted Redis with a private CA needs that CA instead. The file is read and
//! checked once, when the settings are read, so a missing, unreadable or empty file stops the
//! process at start-up rather than failing every request later with a handshake error.
//! The flag that names the file is `crate::config`'s; this module only reads it.

use std::path::{Path, PathBuf};

/// The PEM marker every certificate in a CA bundle starts with.
const PEM_CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----";

/// A PEM CA bundle (one or more certificates) that replaces the system roots for `rediss://`.
#[derive(Clone, PartialEq, Eq)]
pub struct TrustedCa {
    pem: Vec<u8>,
}

impl std::fmt::Debug for TrustedCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustedCa")
            .field("bytes", &self.pem.len())
            .finish()
    }
}

/// Why a CA file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaFileError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Unreadable {
        /// The file's path.
        path: PathBuf,
        /// Why reading it failed.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no PEM certificate.
    #[error("{path} holds no PEM certificate (`{PEM_CERTIFICATE}`)")]
    NoCertificate {
        /// The file's path.
        path: PathBuf,
    },
}

impl TrustedCa {
    /// Reads the PEM CA bundle at `path`. Its certificates themselves are parsed when the
    /// connection is built, which reports a malformed one.
    pub fn from_file(path: &Path) -> Result<Self, CaFileError> {
        let pem = std::fs::read(path).map_err(|source| CaFileError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        Self::from_pem(pem).ok_or_else(|| CaFileError::NoCertificate {
            path: path.to_owned(),
        })
    }

    /// A CA from PEM text; `None` unless it holds at least one certificate.
    pub fn from_pem(pem: Vec<u8>) -> Option<Self> {
        let text = String::from_utf8_lossy(&pem);
        text.contains(PEM_CERTIFICATE).then_some(Self { pem })
    }

    /// The certificates as the redis crate takes them: this CA, and no client certificate.
    pub(super) fn certificates(&self) -> redis::TlsCertificates {
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(self.pem.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_certificate_or_no_file_at_all_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        assert!(matches!(
            TrustedCa::from_file(&empty),
            Err(CaFileError::NoCertificate { .. })
        ));
        assert!(matches!(
            TrustedCa::from_file(&dir.path().join("missing.pem")),
            Err(CaFileError::Unreadable { .. })
        ));
    }
}
