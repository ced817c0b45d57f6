//! The `faregate-sim` binary: the provider simulator alone, until Ctrl-C or SIGTERM.
//!
//! `faregate sim` (the gateway's binary) runs the same simulator with the same flags; this one
//! needs no gateway build, for load scripts and for developing an adapter against it.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "faregate-sim",
    version,
    about = "Fake Duffel and Amadeus APIs with fault injection"
)]
struct Args {
    /// Where the simulator listens.
    #[arg(long, default_value = "127.0.0.1:8081")]
    listen: SocketAddr,
    /// Seed of the deterministic data.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("faregate-sim: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    if let Ok(addr) = listener.local_addr() {
        print!("{}", faregate_sim::banner(addr));
    }
    let simulator = faregate_sim::Simulator::new(args.seed);
    match faregate_sim::serve(listener, simulator, stop_requested()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("faregate-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves at Ctrl-C, or at SIGTERM where there are Unix signals.
async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
