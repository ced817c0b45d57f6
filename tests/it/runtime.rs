//! The binary's runtime: `--worker-threads` (or `FAREGATE_WORKER_THREADS`) sets how many
//! threads run the calls, `serve` says how many it runs, and a bad count, or tokio's own
//! `TOKIO_WORKER_THREADS` set to nonsense, is an error that says what to fix, never a panic.

use std::process::{Command, ExitStatus};
use std::time::Duration;

use crate::support::{PROVIDER_CREDENTIALS, ServeProcess, repo, run_to_end};

/// Starts `faregate serve` on the shipped configuration with `args` before the command and
/// `env`, in a temporary directory of its own (where its store's file is).
fn serve(args: &[&str], env: &[(&str, &str)]) -> (ServeProcess, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let serve = ServeProcess::start(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(args)
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(repo().join("faregate.toml"))
            .current_dir(dir.path())
            .envs(PROVIDER_CREDENTIALS)
            .env("FAREGATE_CLIENT_KEYS", "")
            .env("RUST_LOG", "info")
            .envs(env.iter().copied()),
    );
    (serve, dir)
}

/// How many of the process's threads bear `name`: the workers' (`faregate-worker`), or the
/// blocking pool's (`faregate-block`), started when something needs one.
#[cfg(target_os = "linux")]
fn threads_named(pid: u32, name: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap_or_else(|e| panic!("{e}"))
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .count()
}

#[test]
fn serve_runs_as_many_worker_threads_as_asked_and_says_so() {
    let (three, _dir) = serve(&["--worker-threads", "3"], &[]);
    assert!(
        three.listening.contains("(3 worker threads)"),
        "{}",
        three.log
    );
    #[cfg(target_os = "linux")]
    assert_eq!(
        threads_named(three.id(), "faregate-worker"),
        3,
        "{}",
        three.log
    );

    // The environment variable, and tokio's own one ignored.
    let (mut one, _other_dir) = serve(
        &[],
        &[
            ("FAREGATE_WORKER_THREADS", "1"),
            ("TOKIO_WORKER_THREADS", "4"),
        ],
    );
    assert!(one.listening.contains("(1 worker thread)"), "{}", one.log);
    #[cfg(target_os = "linux")]
    assert_eq!(threads_named(one.id(), "faregate-worker"), 1, "{}", one.log);

    // A reload runs on a blocking thread, which outlives it (idle) for a while: it is not
    // counted as a worker.
    #[cfg(target_os = "linux")]
    {
        let hup = Command::new("kill")
            .args(["-HUP", &one.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(hup.success(), "kill -HUP {}", one.id());
        one.wait_for_line("SIGHUP: configuration reloaded", Duration::from_secs(30));
        assert!(
            threads_named(one.id(), "faregate-block") >= 1,
            "{}",
            one.log
        );
        assert_eq!(threads_named(one.id(), "faregate-worker"), 1, "{}", one.log);
    }
}

/// Runs the binary to its end with `args` and `env` (besides the shipped configuration's
/// provider credentials); what it printed must hold no panic.
fn run(args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
    let (status, text) = run_to_end(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(args)
            .envs(PROVIDER_CREDENTIALS)
            .env("FAREGATE_CLIENT_KEYS", "")
            .envs(env.iter().copied()),
    );
    assert!(!text.contains("panicked"), "{text}");
    (status, text)
}

#[test]
fn a_bad_worker_count_is_refused_with_what_to_fix() {
    let config = repo().join("faregate.toml");
    let config = config.to_str().unwrap_or_else(|| panic!("a UTF-8 path"));
    for (args, env) in [
        (
            vec!["--worker-threads", "0", "check", "--config", config],
            vec![],
        ),
        (
            vec!["check", "--config", config, "--worker-threads", "many"],
            vec![],
        ),
        (
            vec!["check", "--config", config],
            vec![("FAREGATE_WORKER_THREADS", "-2")],
        ),
        (
            vec!["--worker-threads", "100000", "check", "--config", config],
            vec![],
        ),
    ] {
        let (status, text) = run(&args, &env);
        assert_eq!(status.code(), Some(2), "{args:?} {env:?}: {text}");
        assert!(
            text.contains("--worker-threads") && text.contains("a whole number from 1 to 1024"),
            "{args:?} {env:?}: {text}"
        );
    }
}

#[test]
fn tokio_s_own_variable_set_to_nonsense_is_not_read() {
    let config = repo().join("faregate.toml");
    for value in ["0", "abc"] {
        let (status, text) = run(
            &["check", "--config", &config.to_string_lossy()],
            &[("TOKIO_WORKER_THREADS", value)],
        );
        assert!(status.success(), "TOKIO_WORKER_THREADS={value}: {text}");
    }
}
