//! A TCP proxy a test can cut and restore: the way to take PostgreSQL away from one gateway
//! without stopping the server every other test (and agent) shares.
//!
//! Cut, it closes every connection it carries and refuses new ones at once (accepts, then
//! drops them), as a database that went away does; hung, it closes them and holds new ones
//! open without an answer, as a database behind a dead network path does (a connection attempt
//! then waits out its timeout); restored, it forwards again.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A proxy on `127.0.0.1:0` to one target; stops when dropped.
pub(crate) struct CutProxy {
    /// Where clients connect.
    pub(crate) addr: SocketAddr,
    open: Arc<AtomicBool>,
    hung: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<AbortHandle>>>,
    accept: AbortHandle,
}

impl CutProxy {
    /// Forwards every connection to `target`.
    pub(crate) async fn start(target: SocketAddr) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let open = Arc::new(AtomicBool::new(true));
        let hung = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let (open2, hung2, connections2) = (open.clone(), hung.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut client, _)) = listener.accept().await {
                if hung2.load(Ordering::SeqCst) {
                    held.push(client);
                    continue;
                }
                held.clear();
                if !open2.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                connections2
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(task.abort_handle());
            }
        })
        .abort_handle();
        CutProxy {
            addr,
            open,
            hung,
            connections,
            accept,
        }
    }

    /// Closes every connection and refuses new ones.
    pub(crate) fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for task in self
            .connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }

    /// Closes every connection and holds new ones open, unanswered.
    pub(crate) fn hang(&self) {
        self.hung.store(true, Ordering::SeqCst);
        self.cut();
    }

    /// Forwards new connections again.
    pub(crate) fn restore(&self) {
        self.hung.store(false, Ordering::SeqCst);
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
