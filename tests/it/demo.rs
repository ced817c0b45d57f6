//! `faregate demo` as a new user runs it: a Ctrl-C (SIGTERM) while calls are in flight lets
//! them finish against the built-in simulator within `shutdown_grace`, as `serve` does against
//! real providers, instead of the simulator going first and failing them.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::in_days;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn a_ctrl_c_lets_the_calls_in_flight_finish_against_the_simulator() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (gw, sim) = (free_port(), free_port());
    let mut demo = Command::new(env!("CARGO_BIN_EXE_faregate"))
        .args(["demo", "--listen", &format!("127.0.0.1:{gw}")])
        .args(["--sim-listen", &format!("127.0.0.1:{sim}")])
        .current_dir(dir.path())
        .env("FAREGATE_CLIENT_KEYS", "")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn faregate demo: {e}"));
    let http = reqwest::Client::new();
    let url = |port: u16, path: &str| format!("http://127.0.0.1:{port}{path}");
    let mut up = false;
    for _ in 0..300 {
        if http.get(url(gw, "/healthz")).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(up, "faregate demo did not answer on 127.0.0.1:{gw}");
    // Hotel searches that take 1.5 s at the simulator, well within the demo's deadline and
    // its shutdown grace.
    let slow = http
        .put(url(sim, "/_sim/faults/duffel_stays"))
        .json(&json!({"latency_ms": 1500}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(slow.status().is_success(), "{}", slow.status());
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let call = http
                .post(url(gw, "/v1/tools/search_hotels/call"))
                .json(&json!({
                "arguments": {"city_code": "PAR", "check_in_date": in_days(30 + i),
                              "check_out_date": in_days(32 + i), "adults": 2}}));
            tokio::spawn(async move {
                let res = call.send().await.unwrap_or_else(|e| panic!("{e}"));
                res.json::<Value>().await.unwrap_or_else(|e| panic!("{e}"))
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sent = Command::new("kill")
        .args(["-TERM", &demo.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(sent.success());
    for call in calls {
        let env = call.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            env["status"], "ok",
            "a call in flight at the Ctrl-C is answered by its provider: {env:#}"
        );
    }
    let exit = demo.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(exit.success(), "{exit}");
}
