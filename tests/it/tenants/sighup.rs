//! `faregate serve` reads its configuration again on SIGHUP (`[[clients]]`, `tools/`), and logs
//! each problem of one it refuses, as it does for `POST /v1/admin/reload`: the real binary,
//! configuration files edited while it runs, and a signal.

use std::process::Command;
use std::time::Duration;

use super::{config_dir, hex, write_config};
use crate::support::{PROVIDER_CREDENTIALS, ServeProcess, send, wait_until};

/// One named client whose key is `key`.
fn client_with(key: &str) -> String {
    format!(
        "[[clients]]\nname = \"travel-app\"\nkey_sha256 = \"{}\"\n",
        hex(key)
    )
}

#[tokio::test]
async fn sighup_reloads_the_clients_and_tools_of_a_running_serve() {
    let dir = config_dir(&client_with("key-one"));
    let mut serve = ServeProcess::start(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.path().join("faregate.toml"))
            .current_dir(dir.path())
            .envs(PROVIDER_CREDENTIALS)
            .envs([("FAREGATE_CLIENT_KEYS", ""), ("RUST_LOG", "info")]),
    );
    let addr = serve.addr.clone();
    let http = reqwest::Client::new();
    let tools = format!("http://{addr}/v1/tools");
    let status = |key: &'static str| {
        let request = http.get(&tools).bearer_auth(key);
        async move { send(request).await.0 }
    };
    assert_eq!(status("key-one").await, 200);
    assert_eq!(status("key-two").await, 401);
    write_config(dir.path(), &client_with("key-two"));
    std::fs::remove_file(dir.path().join("tools/get_flight_status.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let hup = Command::new("kill")
        .args(["-HUP", &serve.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(hup.success());
    wait_until(
        Duration::from_secs(10),
        "the new key to be accepted",
        || async {
            match status("key-two").await {
                200 => Ok(()),
                other => Err(format!("key-two: {other}")),
            }
        },
    )
    .await;
    assert_eq!(status("key-one").await, 401, "the removed key is refused");
    let (_, _, listed) = send(http.get(&tools).bearer_auth("key-two")).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"search_flights") && !names.contains(&"get_flight_status"),
        "the removed tool file is no longer served: {names:?}"
    );
    let exit = serve.terminate();
    let log = &serve.log;
    assert!(exit.success(), "{exit:?}\n{log}");
    assert!(log.contains("SIGHUP: configuration reloaded"), "{log}");
}

/// A reload refused for a broken configuration leaves each problem in the server's log at
/// ERROR, asked by the route (whose 422 only its caller reads) as by SIGHUP.
#[tokio::test]
async fn a_refused_reload_logs_each_problem_by_route_and_by_sighup() {
    let dir = config_dir(&client_with("key-one"));
    let mut serve = ServeProcess::start(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(dir.path().join("faregate.toml"))
            .current_dir(dir.path())
            .envs(PROVIDER_CREDENTIALS)
            .envs([
                ("FAREGATE_CLIENT_KEYS", ""),
                ("FAREGATE_ADMIN_KEY", "admin-key"),
                ("RUST_LOG", "info"),
            ]),
    );
    let flights = dir.path().join("tools/search_flights.toml");
    let shipped = std::fs::read_to_string(&flights).unwrap_or_else(|e| panic!("{e}"));
    assert!(shipped.contains("timeout = \"8s\""));
    std::fs::write(
        &flights,
        shipped.replacen("timeout = \"8s\"", "timeout = \"soon\"", 1),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let http = reqwest::Client::new();
    let reload = http
        .post(format!("http://{}/v1/admin/reload", serve.addr))
        .bearer_auth("admin-key");
    let (status, _, body) = send(reload).await;
    assert_eq!(status, 422, "{body:#}");
    let refused = "configuration not reloaded";
    serve.wait_for_line(refused, Duration::from_secs(10));
    let hup = Command::new("kill")
        .args(["-HUP", &serve.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(hup.success());
    serve.wait_for_line(refused, Duration::from_secs(10));
    let exit = serve.terminate();
    let log = &serve.log;
    assert!(exit.success(), "{exit:?}\n{log}");
    let problem: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains("search_flights.toml: timeout"))
        .collect();
    assert_eq!(problem.len(), 2, "once per reload:\n{log}");
    let summaries = log
        .lines()
        .filter(|l| l.contains("ERROR") && l.contains(refused))
        .count();
    assert_eq!(summaries, 2, "{log}");
}
