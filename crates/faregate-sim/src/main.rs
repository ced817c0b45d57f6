//! The `faregate-sim` binary: the provider simulator alone, until Ctrl-C or SIGTERM.
//!
//! `faregate sim` (the gateway's binary) runs the same command with the same flags; this one
//! needs no gateway build, for load scripts and for developing an adapter against it.

use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "faregate-sim",
    version,
    about = "Fake Duffel and Amadeus APIs with fault injection"
)]
struct Cli {
    #[command(flatten)]
    args: faregate_sim::SimArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    match faregate_sim::run(&cli.args, stop_requested()).await {
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
