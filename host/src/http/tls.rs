//! TLS for `coremcp serve` (`--tls-cert FILE --tls-key FILE`, PEM), with rustls.
//!
//! Invariants: the certificate and key are read and checked to match before the server starts
//! (a bad file is a usage error naming it); SIGHUP reads them again and swaps them in for new
//! handshakes only — connections already open keep theirs, and a reload that fails keeps the
//! certificate in use and says why; only TLS 1.2 and 1.3 with rustls's safe defaults; ALPN
//! offers `http/1.1`, the only protocol served.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::PrivateKeyDer;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why the certificate or key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("--tls-cert {path}: {reason}")]
    Cert { path: PathBuf, reason: String },
    #[error("--tls-key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    #[error("--tls-cert and --tls-key do not belong together: {0}")]
    Mismatch(String),
    #[error("--tls-cert and --tls-key go together: give both or neither")]
    Half,
}

/// The certificate files and the key pair served from them.
#[derive(Debug)]
pub struct Certs {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl Certs {
    /// Reads and checks the pair.
    pub fn load(cert: &Path, key: &Path) -> Result<Self, TlsError> {
        let pair = read_pair(cert, key)?;
        Ok(Self {
            cert: cert.to_owned(),
            key: key.to_owned(),
            current: RwLock::new(Arc::new(pair)),
        })
    }

    /// Reads the files again (SIGHUP); on failure the pair in use stays, and the error says why.
    pub fn reload(&self) -> Result<(), TlsError> {
        let pair = read_pair(&self.cert, &self.key)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(pair);
        Ok(())
    }

    /// The rustls configuration that serves these certificates.
    pub fn server_config(self: &Arc<Self>) -> rustls::ServerConfig {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("rustls's safe defaults are supported by its own provider")
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config
    }
}

impl ResolvesServerCert for Certs {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(
            &self.current.read().unwrap_or_else(PoisonError::into_inner),
        ))
    }
}

fn read_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let chain = coremcp_net::client::pem_certificates(cert).map_err(|reason| TlsError::Cert {
        path: cert.to_owned(),
        reason,
    })?;
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        reason: format!("no PEM private key in it: {e}"),
    })?;
    let signing = any_supported_type(&der).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        reason: format!("not a usable key: {e}"),
    })?;
    let pair = CertifiedKey::new(chain, signing);
    pair.keys_match()
        .map_err(|e| TlsError::Mismatch(e.to_string()))?;
    Ok(pair)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_and_empty_files_are_named() {
        let dir = std::env::temp_dir().join(format!("coremcp-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "").expect("write");
        let err = Certs::load(&dir.join("missing.pem"), &empty).expect_err("missing");
        assert!(err.to_string().starts_with("--tls-cert "), "{err}");
        assert!(err.to_string().contains("missing.pem"), "{err}");
        let err = Certs::load(&empty, &empty).expect_err("empty");
        assert!(err.to_string().contains("holds no CERTIFICATE"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
