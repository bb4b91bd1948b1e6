//! A tiny SMTP sink on loopback: it speaks just enough ESMTP (EHLO, AUTH PLAIN and LOGIN, MAIL,
//! RCPT, DATA, QUIT) for a client to deliver a message, and reports every message it received with
//! the credentials it was given. No TLS: tests send with `email.useSsl: false`.

use std::net::SocketAddr;

use base64::Engine as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One message as the sink received it.
#[derive(Debug, Clone, Default)]
pub struct Mail {
    /// `user:password` from AUTH, if the client authenticated.
    pub auth: Option<String>,
    /// The envelope sender (MAIL FROM).
    pub from: String,
    /// The envelope recipients (RCPT TO), in order.
    pub rcpt: Vec<String>,
    /// The message (headers and body) as sent after DATA, dot-stuffing undone.
    pub data: String,
}

/// Starts a sink on a free loopback port.
pub async fn sink() -> (SocketAddr, mpsc::UnboundedReceiver<Mail>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(session(conn, tx.clone()));
        }
    });
    (addr, rx)
}

fn decode(b64: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

async fn session(conn: TcpStream, mails: mpsc::UnboundedSender<Mail>) {
    let (read, mut write) = conn.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut mail = Mail::default();
    let mut auth = None;
    macro_rules! say {
        ($text:expr) => {
            if write.write_all($text.as_bytes()).await.is_err() {
                return;
            }
        };
    }
    say!("220 sink ESMTP\r\n");
    while let Ok(Some(line)) = lines.next_line().await {
        let upper = line.to_ascii_uppercase();
        if upper.starts_with("EHLO") {
            say!("250-sink\r\n250-AUTH PLAIN LOGIN\r\n250 8BITMIME\r\n");
        } else if upper.starts_with("HELO")
            || upper.starts_with("RSET")
            || upper.starts_with("NOOP")
        {
            say!("250 OK\r\n");
        } else if upper.starts_with("AUTH PLAIN") {
            let arg = line[10..].trim().to_owned();
            let arg = if arg.is_empty() {
                say!("334 \r\n");
                lines.next_line().await.ok().flatten().unwrap_or_default()
            } else {
                arg
            };
            // \0user\0password
            let parts: Vec<String> = decode(&arg).split('\0').map(str::to_owned).collect();
            auth = Some(format!(
                "{}:{}",
                parts.get(1).cloned().unwrap_or_default(),
                parts.get(2).cloned().unwrap_or_default()
            ));
            say!("235 2.7.0 accepted\r\n");
        } else if upper.starts_with("AUTH LOGIN") {
            say!("334 VXNlcm5hbWU6\r\n");
            let user = decode(&lines.next_line().await.ok().flatten().unwrap_or_default());
            say!("334 UGFzc3dvcmQ6\r\n");
            let password = decode(&lines.next_line().await.ok().flatten().unwrap_or_default());
            auth = Some(format!("{user}:{password}"));
            say!("235 2.7.0 accepted\r\n");
        } else if upper.starts_with("MAIL FROM:") {
            mail = Mail {
                auth: auth.clone(),
                from: line[10..].trim().to_owned(),
                ..Mail::default()
            };
            say!("250 OK\r\n");
        } else if upper.starts_with("RCPT TO:") {
            mail.rcpt.push(line[8..].trim().to_owned());
            say!("250 OK\r\n");
        } else if upper == "DATA" {
            say!("354 end with <CRLF>.<CRLF>\r\n");
            let mut data = String::new();
            while let Ok(Some(l)) = lines.next_line().await {
                if l == "." {
                    break;
                }
                data.push_str(l.strip_prefix('.').unwrap_or(&l));
                data.push('\n');
            }
            mail.data = data;
            let _ = mails.send(std::mem::take(&mut mail));
            say!("250 OK queued\r\n");
        } else if upper == "QUIT" {
            say!("221 bye\r\n");
            return;
        } else {
            say!("502 not implemented\r\n");
        }
    }
}
