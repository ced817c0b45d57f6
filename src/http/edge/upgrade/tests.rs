//! The byte-level corrections of a switched connection: where the replayed request goes in
//! what the HTTP/2 server reads, and what leaves its WINDOW_UPDATE frames.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

fn settings(payload_len: usize) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&(payload_len as u32).to_be_bytes()[1..]);
    f.extend_from_slice(&[SETTINGS, 0, 0, 0, 0, 0]);
    f.extend(std::iter::repeat_n(7u8, payload_len));
    f
}

fn window_update(stream: u32, increment: u32) -> Vec<u8> {
    let mut f = vec![0, 0, 4, WINDOW_UPDATE, 0];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(&increment.to_be_bytes());
    f
}

#[test]
fn hpack_integers_follow_the_rfc_examples() {
    // HPACK's own worked examples: 10 and 1337 with a 5-bit prefix.
    let mut out = Vec::new();
    integer(&mut out, 5, 10);
    assert_eq!(out, [0x0a]);
    out.clear();
    integer(&mut out, 5, 1337);
    assert_eq!(out, [0x1f, 0x9a, 0x0a]);
    out.clear();
    integer(&mut out, 7, 127);
    assert_eq!(
        out,
        [0x7f, 0x00],
        "the prefix's own maximum takes a second byte"
    );
}

#[test]
fn the_request_becomes_stream_one_without_connection_fields() {
    let request = axum::http::Request::builder()
        .method("POST")
        .uri("/v1/tools/search_flights/call?x=1")
        .header("host", "gw.example:8080")
        .header("connection", "Upgrade, HTTP2-Settings")
        .header("upgrade", "h2c")
        .header("http2-settings", "AAMAAABkAAQAoAAAAAIAAAAA")
        .header("content-type", "application/json")
        .header("content-length", "2")
        .body(())
        .unwrap_or_else(|e| panic!("{e}"));
    let (parts, ()) = request.into_parts();
    let frames = stream_one(&parts, b"{}");
    // HEADERS on stream 1, all headers in it, the body still to come.
    assert_eq!(frames[3], HEADERS);
    assert_eq!(frames[4], END_HEADERS);
    assert_eq!(&frames[5..9], &[0, 0, 0, 1]);
    let len = u32::from_be_bytes([0, frames[0], frames[1], frames[2]]) as usize;
    let block = &frames[9..9 + len];
    let mut expect = Vec::new();
    for (n, v) in [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"http"),
        (b":authority", b"gw.example:8080"),
        (b":path", b"/v1/tools/search_flights/call?x=1"),
        (b"content-type", b"application/json"),
        (b"content-length", b"2"),
    ] {
        literal(&mut expect, n, v);
    }
    assert_eq!(block, &expect[..]);
    // Then one DATA frame that ends the stream.
    assert_eq!(
        &frames[9 + len..],
        &[0, 0, 2, DATA, END_STREAM, 0, 0, 0, 1, b'{', b'}']
    );
}

#[tokio::test]
async fn the_replayed_request_follows_the_clients_settings_however_they_arrive() {
    let replay = vec![0xAA; 20];
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let mut switched = Switched::new(server, replay.clone(), 0);
    let mut sent = PREFACE.to_vec();
    sent.extend(settings(12));
    let after = window_update(0, 5);
    sent.extend_from_slice(&after);
    let writer = tokio::spawn(async move {
        for piece in sent.chunks(5) {
            client.write_all(piece).await?;
            client.flush().await?;
            tokio::task::yield_now().await;
        }
        Ok::<_, io::Error>(client)
    });
    let mut expect = PREFACE.to_vec();
    expect.extend(settings(12));
    expect.extend_from_slice(&replay);
    expect.extend_from_slice(&after);
    let mut got = vec![0u8; expect.len()];
    switched
        .read_exact(&mut got)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, expect);
    drop(writer);
}

#[tokio::test]
async fn a_client_that_sends_no_preface_is_refused() {
    let (mut client, server) = tokio::io::duplex(1 << 16);
    let mut switched = Switched::new(server, vec![1, 2, 3], 0);
    client
        .write_all(b"GET / HTTP/1.1\r\n\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut got = [0u8; 8];
    let e = switched.read(&mut got).await.err().map(|e| e.kind());
    assert_eq!(e, Some(io::ErrorKind::InvalidData));
}

/// Writes `frames` through a switch owing `debt` window bytes, `piece` bytes at a time, and
/// returns what reached the client.
async fn written(frames: &[u8], debt: u32, piece: usize) -> Vec<u8> {
    let (client, server) = tokio::io::duplex(1 << 16);
    let mut switched = Switched::new(server, Vec::new(), debt);
    for p in frames.chunks(piece) {
        switched
            .write_all(p)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    switched.flush().await.unwrap_or_else(|e| panic!("{e}"));
    drop(switched);
    let mut client = client;
    let mut out = Vec::new();
    client
        .read_to_end(&mut out)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    out
}

#[tokio::test]
async fn connection_window_updates_give_back_only_what_the_client_spent() {
    let mut frames = settings(6);
    frames.extend(window_update(1, 1000)); // stream-level: untouched
    frames.extend(window_update(0, 300)); // all owed: dropped
    frames.extend(window_update(0, 1000)); // 200 still owed
    frames.extend(window_update(0, 1000)); // nothing owed any more
    let mut expect = settings(6);
    expect.extend(window_update(1, 1000));
    expect.extend(window_update(0, 800));
    expect.extend(window_update(0, 1000));
    for piece in [1, 3, 13, 1 << 10] {
        assert_eq!(
            written(&frames, 500, piece).await,
            expect,
            "written {piece} at a time"
        );
    }
}

#[tokio::test]
async fn with_nothing_owed_every_byte_passes() {
    let mut frames = settings(6);
    frames.extend(window_update(0, 300));
    assert_eq!(written(&frames, 0, 4).await, frames);
}
