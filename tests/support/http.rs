//! A tiny HTTP/1.1 server on loopback that records what arrives and answers as each test asks (or
//! never answers): the peer of the HTTP job type and of the webhook error notifiers.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// The body of a GET of `url`; a failure names `what` was asked.
pub async fn get_text(url: &str, what: &str) -> String {
    let answer = (reqwest::get(url).await).unwrap_or_else(|e| panic!("{what}: GET {url}: {e}"));
    (answer.text().await).unwrap_or_else(|e| panic!("{what}: reading {url}: {e}"))
}

/// One request as the server read it.
#[derive(Debug)]
pub struct Received {
    pub method: String,
    pub target: String,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// What the server does once it has read a request.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    Status(u16, &'static str),
    /// Never answers; reports when the client closes the connection.
    Never,
    /// Answers this status with a body that never ends, sent as fast as the client reads;
    /// reports when the client closes the connection.
    Endless(u16),
    /// Answers 200 with a body of one byte every 100 ms, forever; reports when the client
    /// closes the connection.
    Trickle,
    /// Answers `302 Found` pointing at this location.
    Redirect(&'static str),
}

/// The server's reports.
#[derive(Debug)]
pub enum Seen {
    Request(Received),
    ClientClosed,
}

/// Serves `answer` to every connection on a free loopback port.
pub async fn server(answer: Answer) -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            tokio::spawn(serve(conn, answer, tx.clone()));
        }
    });
    (addr, rx)
}

async fn serve(mut conn: TcpStream, answer: Answer, seen: mpsc::UnboundedSender<Seen>) {
    let Some(request) = read_request(&mut conn).await else {
        return;
    };
    let _ = seen.send(Seen::Request(request));
    match answer {
        Answer::Status(code, body) => {
            let response = format!(
                "HTTP/1.1 {code} Test\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(response.as_bytes()).await;
        }
        Answer::Endless(_) | Answer::Trickle => {
            let code = if let Answer::Endless(code) = answer {
                code
            } else {
                200
            };
            let head = format!("HTTP/1.1 {code} Test\r\ntransfer-encoding: chunked\r\n\r\n");
            let mut alive = conn.write_all(head.as_bytes()).await.is_ok();
            let chunk = if matches!(answer, Answer::Trickle) {
                "1\r\nx\r\n".to_owned()
            } else {
                format!("4000\r\n{}\r\n", "x".repeat(0x4000))
            };
            while alive {
                alive = conn.write_all(chunk.as_bytes()).await.is_ok();
                if matches!(answer, Answer::Trickle) {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
            let _ = seen.send(Seen::ClientClosed);
        }
        Answer::Redirect(location) => {
            let response = format!(
                "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = conn.write_all(response.as_bytes()).await;
        }
        Answer::Never => {
            let mut rest = [0u8; 64];
            // Zero bytes (or an error) means the client has gone.
            while matches!(conn.read(&mut rest).await, Ok(n) if n > 0) {}
            let _ = seen.send(Seen::ClientClosed);
        }
    }
}

async fn read_request(conn: &mut TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next()?.split(' ');
    let (method, target) = (start.next()?.to_owned(), start.next()?.to_owned());
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Received {
        method,
        target,
        headers,
        body: String::from_utf8(body).unwrap(),
    })
}
