//! The server's stdio: every line from the client checked before rmcp reads it (JSON-RPC's
//! parse error for anything that is not JSON or is too long), and its answers written as whole
//! lines through one channel.

use super::*;

/// The longest message line read from a client.
pub(super) const MAX_MESSAGE_BYTES: usize = 4 << 20;

/// stdio for rmcp, with JSON-RPC's parse error: rmcp skips a line that is not JSON without a
/// word, and the client waits forever. Every line from stdin goes through here: JSON goes on
/// to rmcp, anything else (or a line over [`MAX_MESSAGE_BYTES`]) is answered with error
/// -32700 and `id: null`, as JSON-RPC 2.0 says. rmcp's output and those answers reach stdout
/// as whole lines through one channel, so they never interleave.
pub(super) fn checked_stdio() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let (rmcp_reads, mut to_rmcp) = tokio::io::duplex(1 << 16);
    let (rmcp_writes, from_rmcp) = tokio::io::duplex(1 << 16);
    let (lines, mut to_stdout) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let errors = lines.clone();
    tokio::spawn(async move {
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = match (&mut stdin)
                .take(MAX_MESSAGE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .await
            {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let complete = line.ends_with(b"\n") || n <= MAX_MESSAGE_BYTES;
            if !complete {
                // Drop the rest of the overlong line without keeping it.
                loop {
                    let buf = match stdin.fill_buf().await {
                        Ok(b) if !b.is_empty() => b,
                        _ => break,
                    };
                    match buf.iter().position(|&b| b == b'\n') {
                        Some(i) => {
                            stdin.consume(i + 1);
                            break;
                        }
                        None => {
                            let n = buf.len();
                            stdin.consume(n);
                        }
                    }
                }
            }
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            let message = if complete {
                serde_json::from_str::<Value>(&text).ok()
            } else {
                None
            };
            // A tool call without its parameters is invalid params (-32602), as JSON-RPC
            // says, not an unknown method (rmcp answers -32601 when it cannot type one).
            if let Some(m) = message.as_ref().filter(|m| {
                m["method"] == "tools/call" && !m["params"].is_object() && !m["id"].is_null()
            }) {
                let reply = json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "Invalid params: tools/call needs params with the tool's name and arguments"}});
                let _ = errors.send(format!("{reply}\n").into_bytes());
                continue;
            }
            if message.is_some() {
                if to_rmcp.write_all(text.trim_end().as_bytes()).await.is_err()
                    || to_rmcp.write_all(b"\n").await.is_err()
                {
                    break;
                }
            } else {
                let reply = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: the line is not a JSON message"}});
                let _ = errors.send(format!("{reply}\n").into_bytes());
            }
        }
        let _ = to_rmcp.shutdown().await;
    });
    tokio::spawn(async move {
        let mut from_rmcp = tokio::io::BufReader::new(from_rmcp);
        let mut line = Vec::new();
        while matches!(from_rmcp.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            if lines.send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = to_stdout.recv().await {
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    (rmcp_reads, rmcp_writes)
}
