//! The files that secure `tcp+tls://` connections, read (bounded, PEM checked) at every new
//! session, each failure naming the file.

use std::path::{Path, PathBuf};

use super::ZkConfigError;

/// The files that secure `tcp+tls://` connections: the CA that signs the servers' certificates and,
/// for mutual TLS, this client's certificate and key. They are read again at every new session, so a
/// renewed certificate is picked up at the next reconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkTlsFiles {
    /// PEM CA certificates (and CRLs) that sign the servers' certificates.
    pub ca: PathBuf,
    /// PEM client certificate chain and private key, for servers that ask for one (`ssl.clientAuth`).
    pub identity: Option<(PathBuf, PathBuf)>,
}

impl ZkTlsFiles {
    /// Reads the files into the client's TLS options, naming the file that fails.
    pub(in crate::registry::zookeeper) fn load(
        &self,
    ) -> Result<zookeeper_client::TlsOptions, ZkConfigError> {
        let ca = read_pem("CA certificates", &self.ca)?;
        let mut options = zookeeper_client::TlsOptions::new()
            .with_pem_ca(&ca)
            .map_err(|e| tls_file("CA certificates", &self.ca, e.to_string()))?;
        if let Some((cert_path, key_path)) = &self.identity {
            let cert = read_pem("client certificate", cert_path)?;
            let key = read_pem("client key", key_path)?;
            if !key.contains("PRIVATE KEY") {
                return Err(tls_file(
                    "client key",
                    key_path,
                    "holds no PEM private key".into(),
                ));
            }
            options = options
                .with_pem_identity(&cert, &key)
                .map_err(|e| tls_file("client certificate", cert_path, e.to_string()))?;
        }
        Ok(options)
    }
}

/// Bound of a PEM file read: a certificate chain is a few KiB.
const MAX_PEM_BYTES: u64 = 1024 * 1024;

fn read_pem(what: &'static str, path: &Path) -> Result<String, ZkConfigError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| tls_file(what, path, e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| tls_file(what, path, e.to_string()))?;
    if text.len() as u64 > MAX_PEM_BYTES {
        return Err(tls_file(
            what,
            path,
            format!("larger than {MAX_PEM_BYTES} bytes"),
        ));
    }
    if !text.contains("-----BEGIN ") {
        return Err(tls_file(what, path, "holds no PEM block".into()));
    }
    Ok(text)
}

fn tls_file(what: &'static str, path: &Path, reason: String) -> ZkConfigError {
    ZkConfigError::TlsFile {
        what,
        path: path.to_owned(),
        reason,
    }
}
