//! [`ZkAccessArgs`]: how every shipped tool (the example node, `shardcronctl` and its console) is
//! told the namespace's credentials and the TLS files, flattened into each tool's clap command line.
//!
//! Credentials never travel in argv, where `ps` shows them: they come from the environment
//! ([`ZK_AUTH_ENV`]) or from a file named by `--zk-auth-file`, each holding `digest:USER:PASSWORD`
//! (ElasticJob's `digest` option, with ZooKeeper's `addauth` scheme in front). TLS files are paths,
//! not secrets, so they are flags (with environment variables for containers).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{ZkConfig, ZkConfigError};

/// The environment variable that holds `digest:USER:PASSWORD`.
pub const ZK_AUTH_ENV: &str = "SHARDCRON_ZK_AUTH";

/// Bound of a credentials file: one line.
const MAX_AUTH_FILE_BYTES: u64 = 4096;

/// Why the credentials or TLS settings of a tool were refused. No variant carries a password.
#[derive(Debug, thiserror::Error)]
pub enum ZkAccessError {
    /// Both the environment variable and the flag give credentials.
    #[error("both {ZK_AUTH_ENV} and --zk-auth-file give ZooKeeper credentials; use one")]
    TwoSources,
    /// The credentials file cannot be read.
    #[error("--zk-auth-file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The credentials file is larger than one line could be.
    #[error("--zk-auth-file {path}: larger than {MAX_AUTH_FILE_BYTES} bytes; expected one line digest:USER:PASSWORD")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The credentials are not `digest:USER:PASSWORD`.
    #[error("{origin}: {reason}; expected digest:USER:PASSWORD")]
    BadCredentials {
        /// Where they came from (`SHARDCRON_ZK_AUTH` or `--zk-auth-file FILE`).
        origin: String,
        /// What is wrong (never the value itself).
        reason: &'static str,
    },
    /// The TLS settings are refused (a file, or TLS files without a `tcp+tls://` host).
    #[error(transparent)]
    Tls(ZkConfigError),
}

/// The ZooKeeper credentials and TLS flags of the shipped tools; `#[command(flatten)]` it into a
/// clap command and call [`ZkAccessArgs::apply`] on the tool's [`ZkConfig`].
///
/// ```
/// use clap::Parser;
/// use shardcron::registry::zookeeper::{ZkAccessArgs, ZkConfig};
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     access: ZkAccessArgs,
/// }
/// let cli = Cli::parse_from(["tool", "--zk-tls-ca", "/etc/zk/ca.pem"]);
/// let plain = ZkConfig::new("127.0.0.1:2181", "ns").unwrap();
/// // TLS files without a tcp+tls:// host are refused.
/// assert!(cli.access.apply_from(plain, None).is_err());
/// ```
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ZkAccessArgs {
    /// File holding the namespace's ZooKeeper credentials, one line `digest:USER:PASSWORD` (or set
    /// SHARDCRON_ZK_AUTH); every node written is then readable and writable with them only.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "SHARDCRON_ZK_AUTH_FILE"
    )]
    pub zk_auth_file: Option<PathBuf>,
    /// PEM CA certificates that sign the ZooKeeper servers' certificates, for tcp+tls://host:port
    /// hosts.
    #[arg(long, global = true, value_name = "FILE", env = "SHARDCRON_ZK_TLS_CA")]
    pub zk_tls_ca: Option<PathBuf>,
    /// PEM client certificate for mutual TLS (servers with ssl.clientAuth=need); needs --zk-tls-key.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "SHARDCRON_ZK_TLS_CERT",
        requires = "zk_tls_key"
    )]
    pub zk_tls_cert: Option<PathBuf>,
    /// PEM private key of --zk-tls-cert.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "SHARDCRON_ZK_TLS_KEY",
        requires = "zk_tls_cert"
    )]
    pub zk_tls_key: Option<PathBuf>,
}

impl ZkAccessArgs {
    /// Adds the credentials (from [`ZK_AUTH_ENV`] or `--zk-auth-file`) and the TLS files to
    /// `config`, reading every file once so that a wrong one fails the tool at start, named.
    pub fn apply(&self, config: ZkConfig) -> Result<ZkConfig, ZkAccessError> {
        self.apply_from(config, std::env::var(ZK_AUTH_ENV).ok())
    }

    /// [`ZkAccessArgs::apply`] with the environment variable's value given.
    pub fn apply_from(
        &self,
        mut config: ZkConfig,
        env_auth: Option<String>,
    ) -> Result<ZkConfig, ZkAccessError> {
        let env_auth = env_auth.filter(|v| !v.is_empty());
        let credentials = match (env_auth, &self.zk_auth_file) {
            (Some(_), Some(_)) => return Err(ZkAccessError::TwoSources),
            (Some(value), None) => Some((value, ZK_AUTH_ENV.to_owned())),
            (None, Some(path)) => Some((
                read_auth_file(path)?,
                format!("--zk-auth-file {}", path.display()),
            )),
            (None, None) => None,
        };
        if let Some((value, origin)) = credentials {
            config = with_credentials(config, &value, origin)?;
        }
        if let Some(ca) = &self.zk_tls_ca {
            config = config.with_tls_ca(ca);
        }
        if let (Some(cert), Some(key)) = (&self.zk_tls_cert, &self.zk_tls_key) {
            config = config.with_tls_client_cert(cert, key);
        }
        config.check_tls().map_err(ZkAccessError::Tls)?;
        Ok(config)
    }
}

fn read_auth_file(path: &Path) -> Result<String, ZkAccessError> {
    let read_error = |source| ZkAccessError::ReadFile {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut text = String::new();
    file.take(MAX_AUTH_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(read_error)?;
    if text.len() as u64 > MAX_AUTH_FILE_BYTES {
        return Err(ZkAccessError::FileTooLarge {
            path: path.to_owned(),
        });
    }
    // One line: the end of line an editor adds is not part of the password.
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

fn with_credentials(
    config: ZkConfig,
    value: &str,
    origin: String,
) -> Result<ZkConfig, ZkAccessError> {
    let bad = |reason| ZkAccessError::BadCredentials {
        origin: origin.clone(),
        reason,
    };
    let Some((scheme, rest)) = value.split_once(':') else {
        return Err(bad("no scheme"));
    };
    if scheme != "digest" {
        return Err(bad("only the digest scheme is supported"));
    }
    if rest.contains(['\n', '\r']) {
        return Err(bad("more than one line"));
    }
    config
        .with_digest(rest)
        .map_err(|_| bad("no USER:PASSWORD with a non-empty user"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> ZkConfig {
        ZkConfig::new("127.0.0.1:2181", "ns").unwrap()
    }

    #[test]
    fn credentials_come_from_the_environment_or_a_file_never_both() {
        let none = ZkAccessArgs::default();
        let c = none
            .apply_from(plain(), Some("digest:ops:s3cret".into()))
            .unwrap();
        assert_eq!(c.digest(), Some("ops:s3cret"));
        assert_eq!(
            none.apply_from(plain(), Some(String::new()))
                .unwrap()
                .digest(),
            None
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth");
        std::fs::write(&file, "digest:ops:pa:ss\n").unwrap();
        let from_file = ZkAccessArgs {
            zk_auth_file: Some(file.clone()),
            ..Default::default()
        };
        assert_eq!(
            from_file.apply_from(plain(), None).unwrap().digest(),
            Some("ops:pa:ss")
        );
        assert!(matches!(
            from_file.apply_from(plain(), Some("digest:a:b".into())),
            Err(ZkAccessError::TwoSources)
        ));
    }

    #[test]
    fn bad_credentials_are_refused_without_echoing_them() {
        let none = ZkAccessArgs::default();
        for value in [
            "ops:s3cret",
            "sasl:ops:s3cret",
            "digest::s3cret",
            "digest:ops",
        ] {
            let e = none.apply_from(plain(), Some(value.into())).unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(ZK_AUTH_ENV), "{value}: {text}");
            assert!(!text.contains("s3cret"), "{value}: {text}");
        }
        let missing = ZkAccessArgs {
            zk_auth_file: Some("/nonexistent/auth".into()),
            ..Default::default()
        };
        assert!(missing
            .apply_from(plain(), None)
            .unwrap_err()
            .to_string()
            .contains("/nonexistent/auth"));
    }

    #[test]
    fn tls_files_need_a_tls_host_and_name_the_file_that_fails() {
        let ca = ZkAccessArgs {
            zk_tls_ca: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        assert!(matches!(
            ca.apply_from(plain(), None),
            Err(ZkAccessError::Tls(ZkConfigError::TlsWithoutTlsHost))
        ));
        let tls = ZkConfig::new("tcp+tls://127.0.0.1:2281", "ns").unwrap();
        let e = ca.apply_from(tls.clone(), None).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        assert!(matches!(
            ZkAccessArgs::default().apply_from(tls, None),
            Err(ZkAccessError::Tls(ZkConfigError::TlsWithoutCa { .. }))
        ));
    }
}
