//! Crash safety: background bookings queued while the provider refuses them, the gateway
//! killed with SIGKILL mid-run, restarted on the same SQLite file, provider back: every job
//! ends `succeeded` exactly once, as the simulator's orders per idempotency key show.
//!
//! Real processes (the `faregate` binary for both the simulator and the gateway), real
//! sockets, real time with short configured durations.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::{in_days, send, wait_until};

/// Kills its child when dropped, so a failing test leaves no process behind.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    l.local_addr().unwrap_or_else(|e| panic!("{e}")).to_string()
}

fn spawn(args: &[&str]) -> Proc {
    Proc(
        Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn faregate {args:?}: {e}")),
    )
}

async fn wait_healthy(http: &reqwest::Client, url: &str) {
    wait_until(
        Duration::from_secs(20),
        &format!("{url} to answer"),
        || async {
            match http.get(url).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(format!("status {}", r.status())),
                Err(e) => Err(e.to_string()),
            }
        },
    )
    .await;
}

/// A config directory: the shipped tools and prompts with short timings, providers at `sim`.
fn write_config(dir: &Path, listen: &str, sim: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(dir.join("tools")).unwrap_or_else(|e| panic!("{e}"));
    for entry in std::fs::read_dir(root.join("tools")).unwrap_or_else(|e| panic!("{e}")) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = text
            .replace("timeout = \"15s\"", "timeout = \"2s\"")
            .replace("deadline = \"20s\"", "deadline = \"3s\"");
        std::fs::write(
            dir.join("tools").join(path.file_name().unwrap_or_default()),
            text,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let config = format!(
        r#"
[server]
listen = "{listen}"
tools_dir = "tools"
prompts_dir = "{prompts}"

[store]
url = "sqlite://{db}"

[providers.duffel]
kind = "duffel"
base_url = "http://{sim}"
token_env = "CRASH_TEST_DUFFEL_TOKEN"

[providers.amadeus]
kind = "amadeus"
base_url = "http://{sim}"
client_id_env = "CRASH_TEST_AMADEUS_ID"
client_secret_env = "CRASH_TEST_AMADEUS_SECRET"

[providers.flightaware]
kind = "http"
base_url = "http://{sim}/aeroapi"

[providers.hotel_content]
kind = "http"
base_url = "http://{sim}/content/v1"

[defaults.breaker]
open_for = "300ms"
open_for_max = "1s"
probe_interval = "100ms"
ramp = ["50%:200ms"]

[defaults.jobs]
workers = 4
lease_margin = "1s"
"#,
        prompts = root.join("prompts").display(),
        db = dir.join("jobs.db").display(),
    );
    let path = dir.join("faregate.toml");
    std::fs::write(&path, config).unwrap_or_else(|e| panic!("{e}"));
    path.display().to_string()
}

#[tokio::test]
async fn jobs_survive_sigkill_and_run_exactly_once() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let (sim_addr, gw_addr) = (free_addr(), free_addr());
    let config = write_config(dir.path(), &gw_addr, &sim_addr);
    let http = reqwest::Client::new();
    let _sim = spawn(&["sim", "--listen", &sim_addr]);
    wait_healthy(&http, &format!("http://{sim_addr}/_sim/stats")).await;
    let mut gateway = spawn(&["serve", "--config", &config]);
    let gw = format!("http://{gw_addr}");
    wait_healthy(&http, &format!("{gw}/healthz")).await;

    // Offers to book, while the provider is healthy.
    let date = in_days(40);
    let body = json!({"arguments": {"origin": "JFK", "destination": "LHR", "departure_date": date, "max_results": 6}});
    let (_, _, search) = send(
        http.post(format!("{gw}/v1/tools/search_flights/call"))
            .json(&body),
    )
    .await;
    let offers: Vec<String> = search["data"]["offers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["offer_id"].as_str().map(str::to_string))
        .collect();
    assert!(offers.len() >= 4, "{search:#}");

    // The provider now refuses orders with 429 (nothing is booked), so jobs requeue.
    http.put(format!("http://{sim_addr}/_sim/faults/duffel_air_orders"))
        .json(&json!({"rate_limited": {"retry_after_s": 1}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut jobs = Vec::new();
    for (i, offer) in offers.iter().enumerate() {
        let body = json!({
            "arguments": {"offer_id": offer, "travellers": [{"given_name": "Ana", "family_name": "Garcia",
                "born_on": "1990-02-15", "gender": "f", "title": "ms", "email": "ana@example.com",
                "phone_number": "+34600000000"}]},
            "mode": "background", "idempotency_key": format!("crash-{i}")});
        let (_, _, res) = send(
            http.post(format!("{gw}/v1/tools/book_flight/call"))
                .json(&body),
        )
        .await;
        assert_eq!(res["status"], "queued", "{res:#}");
        jobs.push(res["job_id"].as_str().unwrap_or_default().to_string());
    }
    // Let the workers attempt and requeue, then kill the gateway without warning.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, _, before) = send(http.get(format!("{gw}/v1/jobs?tool=book_flight"))).await;
    let listed = before["jobs"].as_array().cloned().unwrap_or_default();
    assert_eq!(listed.len(), offers.len());
    assert!(
        listed.iter().all(|j| j["status"] != "succeeded"),
        "{before:#}"
    );
    assert!(
        listed.iter().any(|j| j["attempts"].as_u64() >= Some(1)),
        "the kill comes after attempts were made: {before:#}"
    );
    let _ = gateway.0.kill();
    let _ = gateway.0.wait();

    http.delete(format!("http://{sim_addr}/_sim/faults"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let _gateway = spawn(&["serve", "--config", &config]);
    wait_healthy(&http, &format!("{gw}/healthz")).await;
    wait_until(Duration::from_secs(40), "every job to succeed", || async {
        for id in &jobs {
            let (_, _, job) = send(http.get(format!("{gw}/v1/jobs/{id}"))).await;
            assert_ne!(job["status"], "dead", "{job:#}");
            if job["status"] != "succeeded" {
                return Err(format!("job stuck: {job:#}"));
            }
        }
        Ok(())
    })
    .await;
    let (_, _, stats) = send(http.get(format!("http://{sim_addr}/_sim/stats"))).await;
    for i in 0..offers.len() {
        let key = format!("crash-{i}");
        assert_eq!(
            stats["orders_by_idempotency_key"][&key]["orders"], 1,
            "{key}: {stats:#}"
        );
        assert_eq!(
            stats["orders_by_idempotency_key"][&key]["duplicates_rejected"], 0,
            "{key}"
        );
    }
    assert_eq!(stats["duplicate_bookings"], 0);
}
