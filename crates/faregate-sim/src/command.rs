//! The simulator as a command: its flags and what starting it does. Two binaries start it, the
//! `faregate-sim` binary and the gateway's `faregate sim`, so both take their flags and their
//! behaviour from here and cannot drift apart.

use std::future::Future;
use std::net::SocketAddr;

use crate::{Simulator, serve};

/// The simulator's command-line flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// Where the simulator listens.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub listen: SocketAddr,
    /// Seed of the deterministic data.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// Listens where `args` say, prints where (and where the faults and counters are), and serves
/// a simulator seeded as `args` say until `shutdown` completes.
pub async fn run(
    args: &SimArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", args.listen))
        })?;
    let addr = listener.local_addr()?;
    println!("faregate provider simulator on http://{addr}");
    println!("  faults: curl http://{addr}/_sim/faults   stats: curl http://{addr}/_sim/stats");
    serve(listener, Simulator::new(args.seed), shutdown).await
}
