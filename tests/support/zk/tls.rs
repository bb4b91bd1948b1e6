//! [`TestPki`]: a throw-away certificate authority, a server certificate and a client certificate,
//! generated with `openssl` into a temporary directory when a test asks (keys are never committed).
//!
//! Both certificates name `127.0.0.1` and `localhost`: the client checks the server's name, and
//! ZooKeeper checks the client's name against its address when it asks for a certificate.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::server::ServerTls;

/// The files of one test PKI; the directory goes with the value.
#[derive(Debug)]
pub struct TestPki {
    dir: tempfile::TempDir,
}

impl TestPki {
    /// Generates the CA and both certificates (EC P-256, valid two days); `None` when `openssl`
    /// cannot be run (the caller skips, or fails under CI).
    pub fn generate() -> Option<TestPki> {
        let dir = tempfile::Builder::new()
            .prefix("shardcron-pki-")
            .tempdir()
            .expect("creating the PKI directory");
        let pki = TestPki { dir };
        let ext = pki.path("leaf.ext");
        std::fs::write(
            &ext,
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .expect("writing the leaf extensions");
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let ca = [
            &[
                "req",
                "-x509",
                "-days",
                "2",
                "-subj",
                "/CN=shardcron test CA",
            ][..],
            &ec,
            &["-addext", "basicConstraints=critical,CA:TRUE"],
            &["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            &["-keyout", "ca.key", "-out", "ca.pem"],
        ]
        .concat();
        pki.openssl(&ca)?;
        for leaf in ["server", "client"] {
            let subject = format!("/CN=shardcron test {leaf}");
            let (key, csr, pem) = (
                format!("{leaf}.key"),
                format!("{leaf}.csr"),
                format!("{leaf}.pem"),
            );
            let req = [
                &["req", "-subj", subject.as_str()][..],
                &ec,
                &["-keyout", key.as_str(), "-out", csr.as_str()],
            ]
            .concat();
            pki.openssl(&req)?;
            pki.openssl(&[
                "x509",
                "-req",
                "-days",
                "2",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-extfile",
                "leaf.ext",
                "-out",
                &pem,
            ])?;
        }
        // ZooKeeper's PEM key store: the key and its certificate in one file.
        let bundle = [
            std::fs::read_to_string(pki.path("server.key")).expect("the server key"),
            std::fs::read_to_string(pki.path("server.pem")).expect("the server certificate"),
        ]
        .concat();
        std::fs::write(pki.path("server-store.pem"), bundle).expect("writing the key store");
        Some(pki)
    }

    /// The CA certificate, which signs both certificates.
    pub fn ca(&self) -> PathBuf {
        self.path("ca.pem")
    }

    /// The client's certificate.
    pub fn client_cert(&self) -> PathBuf {
        self.path("client.pem")
    }

    /// The client's private key.
    pub fn client_key(&self) -> PathBuf {
        self.path("client.key")
    }

    /// The server's side of it, asking for client certificates or not.
    pub fn server(&self, client_auth: bool) -> ServerTls {
        ServerTls {
            key_store: self.path("server-store.pem"),
            trust_store: self.ca(),
            client_auth,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn openssl(&self, args: &[&str]) -> Option<()> {
        let out = run_openssl(self.dir.path(), args)?;
        assert!(
            out.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(())
    }
}

fn run_openssl(dir: &Path, args: &[&str]) -> Option<std::process::Output> {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()
}
