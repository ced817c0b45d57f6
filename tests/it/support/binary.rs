//! The real `faregate` binary as a child process: a command run to its end with what it printed
//! ([`run_to_end`]), and `faregate serve` ([`ServeProcess`]) started with the caller's
//! arguments and environment, its log (stderr) read line by line, ready once it says where it
//! listens, read on until a line a test waits for, stopped with SIGTERM to read the rest of its
//! log, and killed if a test fails first.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::time::Instant;

/// Runs `command` to its end: how it exited, and what it printed (stdout, then stderr).
pub(crate) fn run_to_end(command: &mut Command) -> (ExitStatus, String) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("run faregate: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, text)
}

/// A running `faregate serve`.
pub(crate) struct ServeProcess {
    child: Child,
    /// Where it listens (`127.0.0.1:PORT`), read off its "listening on" line.
    pub(crate) addr: String,
    /// That line.
    pub(crate) listening: String,
    /// Its log so far, one line each, up to and including [`ServeProcess::listening`].
    pub(crate) log: String,
    lines: Receiver<String>,
    reader: Option<JoinHandle<()>>,
}

impl ServeProcess {
    /// Starts `command` (the binary, its arguments, environment and directory set by the
    /// caller) and waits up to 30 s for its "listening on" line.
    pub(crate) fn start(command: &mut Command) -> ServeProcess {
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn faregate: {e}"));
        let stderr = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut serve = ServeProcess {
            child,
            addr: String::new(),
            listening: String::new(),
            log: String::new(),
            lines,
            reader: Some(reader),
        };
        let started = Instant::now();
        loop {
            let line = serve
                .lines
                .recv_timeout(Duration::from_secs(30).saturating_sub(started.elapsed()))
                .unwrap_or_else(|e| panic!("no listening line: {e}\n{}", serve.log));
            serve.log.push_str(&line);
            serve.log.push('\n');
            if let Some(rest) = line.split("listening on http://").nth(1) {
                serve.addr = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                    .collect();
                serve.listening = line;
                return serve;
            }
        }
    }

    /// Reads its log (into [`ServeProcess::log`]) until a line contains `text`, for up to
    /// `within`; the test fails with the log read so far when none does.
    pub(crate) fn wait_for_line(&mut self, text: &str, within: Duration) {
        let started = Instant::now();
        loop {
            let line = self
                .lines
                .recv_timeout(within.saturating_sub(started.elapsed()))
                .unwrap_or_else(|e| panic!("no line with {text:?}: {e}\n{}", self.log));
            self.log.push_str(&line);
            self.log.push('\n');
            if line.contains(text) {
                return;
            }
        }
    }

    /// The process id, for signals and `/proc`.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM, waits for the exit, and adds the rest of the log to [`ServeProcess::log`].
    pub(crate) fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(sent.success(), "kill -TERM {}", self.child.id());
        let exit = self.child.wait().unwrap_or_else(|e| panic!("{e}"));
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.log.extend(self.lines.try_iter().map(|l| l + "\n"));
        exit
    }
}

impl Drop for ServeProcess {
    /// A test that fails before [`ServeProcess::terminate`] leaves no process behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
