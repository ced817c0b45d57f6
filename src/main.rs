//! The `faregate` binary: parses arguments and hands over to its commands ([`cli`]), which use
//! the library. Nothing else.

mod cli;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "faregate",
    version,
    about = "A tool-call gateway for AI travel agents"
)]
struct Cli {
    /// How many threads run the gateway's calls, or the simulator's answers for `sim`
    /// (default: one per CPU this process may use).
    /// On cores shared with other processes, fewer threads cost less CPU per call and answer
    /// sooner at a light load (BENCHMARKS.md, "One worker thread per replica"). tokio's own
    /// `TOKIO_WORKER_THREADS` is not read.
    #[arg(
        long,
        global = true,
        env = "FAREGATE_WORKER_THREADS",
        value_name = "N",
        value_parser = worker_count
    )]
    worker_threads: Option<NonZeroUsize>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway.
    Serve {
        /// The configuration file.
        #[arg(long, default_value = "faregate.toml")]
        config: PathBuf,
        /// Overrides `server.listen`.
        #[arg(long)]
        listen: Option<SocketAddr>,
    },
    /// Gateway and built-in provider simulator in one process; no credentials needed.
    #[cfg(feature = "demo")]
    Demo {
        /// Where the gateway listens.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Where the simulator listens.
        #[arg(long, default_value = "127.0.0.1:8081")]
        sim_listen: SocketAddr,
        /// A configuration file instead of the embedded defaults.
        #[arg(long)]
        config: Option<PathBuf>,
        /// The job store URL (`sqlite://FILE` or `postgres://…`); default: `store.url`.
        #[arg(long)]
        store: Option<String>,
    },
    /// The provider simulator alone (Duffel and Amadeus wire formats and the example APIs of
    /// the tools from configuration, with fault injection).
    #[cfg(feature = "demo")]
    Sim(faregate_sim::SimArgs),
    /// Validate the configuration, tools and prompts; list every problem.
    Check {
        /// The configuration file.
        #[arg(long, default_value = "faregate.toml")]
        config: PathBuf,
    },
    /// Write tool files of kind http from operations of an OpenAPI 3.0/3.1 document (JSON), for
    /// a person to review before `faregate check` and serving.
    ImportOpenapi {
        /// The OpenAPI document, as JSON.
        document: PathBuf,
        /// An operation id to import as one tool; repeat for several.
        #[arg(long = "operation", required = true)]
        operations: Vec<String>,
        /// The provider of kind http that serves the tools (its `[providers.NAME]`).
        #[arg(long)]
        provider: String,
        /// Where `tools/` and `prompts/` are (the directory of faregate.toml).
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
    /// Print the tool manifest.
    Manifest {
        /// The configuration file.
        #[arg(long, default_value = "faregate.toml")]
        config: PathBuf,
        /// The manifest format: native, openai, anthropic, mcp or gemini.
        #[arg(long, default_value = "native")]
        format: String,
    },
}

/// `--worker-threads`: a whole number from 1 to [`MAX_WORKERS`].
fn worker_count(text: &str) -> Result<NonZeroUsize, String> {
    match text.trim().parse::<NonZeroUsize>() {
        Ok(n) if n.get() <= MAX_WORKERS => Ok(n),
        _ => Err(format!(
            "{text:?} is not a number of threads: give a whole number from 1 to {MAX_WORKERS}"
        )),
    }
}

/// More worker threads than any machine a replica runs on has cores; far more would fail to
/// start (tokio panics when the system refuses a thread).
const MAX_WORKERS: usize = 1024;

/// The name of a worker thread, as `top -H`, `perf` and `/proc/PID/task/*/comm` show it (at
/// most 15 bytes there).
const WORKER_THREAD: &str = "faregate-worker";

/// The name of a thread of the runtime's blocking pool (a reload reading files, a name looked
/// up for a callback), started when needed and ended when idle.
const BLOCKING_THREAD: &str = "faregate-block";

/// Names the runtime's threads: tokio starts its `workers` worker threads first, while the
/// runtime is built (before anything can ask for a blocking one), so the first `workers` names
/// are theirs. With one name for both, as tokio's default, an operator counting a replica's
/// workers also counts whatever blocking threads are alive at that moment.
fn thread_namer(workers: usize) -> impl Fn() -> String + Send + Sync + 'static {
    let started = std::sync::atomic::AtomicUsize::new(0);
    move || {
        let n = started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n < workers {
            WORKER_THREAD
        } else {
            BLOCKING_THREAD
        }
        .to_string()
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Always set, so that tokio never reads `TOKIO_WORKER_THREADS` itself: it panics on a
    // value that is not a positive number, and a bad setting must be an error that says what
    // to fix (clap refuses `--worker-threads 0` and `FAREGATE_WORKER_THREADS=x` with one).
    let workers = cli
        .worker_threads
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name_fn(thread_namer(workers))
        .enable_all()
        .build()
        .context("cannot start the async runtime")
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("faregate: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve { config, listen } => cli::serve(&config, listen).await,
            #[cfg(feature = "demo")]
            Command::Demo {
                listen,
                sim_listen,
                config,
                store,
            } => cli::demo::demo(listen, sim_listen, config.as_deref(), store.as_deref()).await,
            #[cfg(feature = "demo")]
            Command::Sim(args) => cli::demo::sim(&args).await,
            Command::Check { config } => cli::check(&config),
            Command::Manifest { config, format } => cli::manifest(&config, &format),
            Command::ImportOpenapi {
                document,
                operations,
                provider,
                out,
            } => cli::import_openapi(&document, &operations, &provider, &out),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("faregate: {e:#}");
            ExitCode::FAILURE
        }
    }
}
