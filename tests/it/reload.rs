//! The whole configuration reloaded without a restart (`POST /v1/admin/reload`, as SIGHUP
//! does): real files on disk edited while the gateway serves the simulator. Tools are added,
//! removed and changed in every list; an open breaker of an unchanged key stays open; a call in
//! flight finishes; a broken configuration changes nothing and names every problem; settings
//! only a restart applies are named; and reloads under load drop no call.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use faregate::config::{self, Config, DiskFiles};
use faregate::http::ConfigSource;
use faregate_sim::{Fault, RouteGroup};
use serde_json::{Value, json};

use crate::support::{MapEnv, TestGateway, in_days, repo, requests, send, start_sim, wait_until};

pub(crate) const ADMIN: &str = "admin-key";
pub(crate) const KEY: &str = "client-key";

pub(crate) fn env() -> MapEnv {
    MapEnv(vec![
        ("FAREGATE_ADMIN_KEY", ADMIN),
        ("FAREGATE_CLIENT_KEYS", KEY),
        ("DUFFEL_ACCESS_TOKEN", "duffel_test_token"),
        ("AMADEUS_CLIENT_ID", "id"),
        ("AMADEUS_CLIENT_SECRET", "secret"),
    ])
}

/// The shipped configuration, tools and prompts in a directory of their own, the providers
/// pointed at the simulator and the per-client limits off (the tests send many calls at once).
pub(crate) struct OnDisk {
    dir: tempfile::TempDir,
}

impl OnDisk {
    pub(crate) fn new(sim_url: &str) -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for sub in ["tools", "prompts"] {
            let to = dir.path().join(sub);
            std::fs::create_dir_all(&to).unwrap_or_else(|e| panic!("{e}"));
            for entry in std::fs::read_dir(repo().join(sub)).unwrap_or_else(|e| panic!("{e}")) {
                let entry = entry.unwrap_or_else(|e| panic!("{e}"));
                std::fs::copy(entry.path(), to.join(entry.file_name()))
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let shipped = std::fs::read_to_string(repo().join("faregate.toml")).unwrap_or_default();
        let main = shipped
            .replace("\"http://127.0.0.1:8081\"", &format!("\"{sim_url}\""))
            .replace("client_rate = \"20/s\"", "client_rate = \"off\"")
            .replace(
                "client_max_concurrent_calls = 32",
                "client_max_concurrent_calls = 0",
            );
        assert!(
            main.contains(sim_url),
            "the providers point at the simulator"
        );
        std::fs::write(dir.path().join("faregate.toml"), main).unwrap_or_else(|e| panic!("{e}"));
        OnDisk { dir }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Rewrites one file: `old` must be in it.
    fn edit(&self, relative: &str, old: &str, new: &str) {
        let path = self.path(relative);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.contains(old), "{relative} has no {old:?}");
        std::fs::write(&path, text.replacen(old, new, 1)).unwrap_or_else(|e| panic!("{e}"));
    }

    pub(crate) fn remove(&self, relative: &str) {
        std::fs::remove_file(self.path(relative)).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Puts the shipped copy of a file back.
    fn restore(&self, relative: &str) {
        std::fs::copy(repo().join(relative), self.path(relative)).unwrap_or_else(|e| panic!("{e}"));
    }

    pub(crate) fn load(path: &Path) -> Result<Config, Vec<String>> {
        config::load(&DiskFiles, path, &faregate::tools::names())
            .map(|(config, _)| config)
            .map_err(|e| e.errors.iter().map(ToString::to_string).collect())
    }

    /// The gateway `faregate serve` would run on these files, reloading from them.
    async fn serve(&self) -> TestGateway {
        let path = self.path("faregate.toml");
        let config = Self::load(&path).unwrap_or_else(|e| panic!("{e:?}"));
        let mut app = faregate::app::build(config, &env()).unwrap_or_else(|e| panic!("{e:?}"));
        app.state.config_source = Some(ConfigSource::new(move || Self::load(&path), env()));
        TestGateway::serve(app).await
    }
}

async fn reload(http: &reqwest::Client, gw: &TestGateway) -> (u16, Value) {
    let (status, _, body) = send(http.post(gw.url("/v1/admin/reload")).bearer_auth(ADMIN)).await;
    (status, body)
}

async fn get(http: &reqwest::Client, gw: &TestGateway, path: &str) -> Value {
    let (status, _, body) = send(http.get(gw.url(path)).bearer_auth(KEY)).await;
    assert_eq!(status, 200, "{path}: {body:#}");
    body
}

async fn call(
    http: &reqwest::Client,
    gw: &TestGateway,
    tool: &str,
    arguments: Value,
) -> (u16, Value) {
    let (status, _, body) = send(
        http.post(gw.url(&format!("/v1/tools/{tool}/call")))
            .bearer_auth(KEY)
            .json(&json!({ "arguments": arguments })),
    )
    .await;
    (status, body)
}

fn flights_on(days: i64) -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(days)})
}

fn hotels_on(days: i64) -> Value {
    json!({"city_code": "PAR", "check_in_date": in_days(days), "check_out_date": in_days(days + 2)})
}

/// The tools `GET /v1/tools` lists, by name, with their descriptions.
async fn listed(http: &reqwest::Client, gw: &TestGateway) -> Vec<(String, String)> {
    get(http, gw, "/v1/tools").await["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list"))
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["description"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn names(tools: &[(String, String)]) -> Vec<&str> {
    tools.iter().map(|(name, _)| name.as_str()).collect()
}

/// The breakers `/v1/breakers` lists: (tool, provider) → state.
async fn breakers(http: &reqwest::Client, gw: &TestGateway) -> Vec<(String, String, String)> {
    get(http, gw, "/v1/breakers").await["breakers"]
        .as_array()
        .unwrap_or_else(|| panic!("a breaker list"))
        .iter()
        .map(|b| {
            let s = |k: &str| b[k].as_str().unwrap_or_default().to_string();
            (s("tool"), s("provider"), s("state"))
        })
        .collect()
}

#[tokio::test]
async fn a_reload_adds_removes_and_changes_tools_and_an_open_breaker_stays_open() {
    let sim = start_sim(91).await;
    let disk = OnDisk::new(&sim.url());
    disk.remove("tools/get_flight_status.toml");
    let gw = disk.serve().await;
    let http = reqwest::Client::new();
    assert!(!names(&listed(&http, &gw).await).contains(&"get_flight_status"));

    // Duffel's flight search fails five times in a row: its breaker opens (Amadeus answers).
    sim.sim.set_fault(
        RouteGroup::DuffelAirSearch,
        Fault {
            outage: true,
            ..Fault::default()
        },
    );
    for day in 0..5 {
        let (status, envelope) = call(&http, &gw, "search_flights", flights_on(30 + day)).await;
        assert_eq!(
            (status, envelope["provider"].as_str()),
            (200, Some("amadeus")),
            "{envelope:#}"
        );
    }
    let open = (
        "search_flights".to_string(),
        "duffel".to_string(),
        "open".to_string(),
    );
    assert!(breakers(&http, &gw).await.contains(&open));

    // A hotel search is at the provider (1.5 s) when its tool is removed.
    sim.sim.set_fault(
        RouteGroup::DuffelStays,
        Fault {
            latency_ms: 1500,
            ..Fault::default()
        },
    );
    let running = {
        let request = http
            .post(gw.url("/v1/tools/search_hotels/call"))
            .bearer_auth(KEY)
            .json(&json!({ "arguments": hotels_on(40) }));
        tokio::spawn(send(request))
    };
    wait_until(
        Duration::from_secs(5),
        "the hotel search to reach the provider",
        || async {
            match requests(&sim.sim, RouteGroup::DuffelStays) {
                0 => Err("not yet".to_string()),
                _ => Ok(()),
            }
        },
    )
    .await;

    disk.remove("tools/search_hotels.toml");
    disk.restore("tools/get_flight_status.toml");
    disk.edit(
        "tools/search_flights.toml",
        "description = \"\"\"\n",
        "description = \"\"\"\nReloaded. ",
    );
    let (status, summary) = reload(&http, &gw).await;
    assert_eq!(status, 200, "{summary:#}");
    assert_eq!(
        summary["tools"],
        json!({"added": ["get_flight_status"], "removed": ["search_hotels"], "changed": ["search_flights"]}),
        "{summary:#}"
    );
    assert_eq!(summary["needs_restart"], json!([]), "{summary:#}");
    assert_eq!(summary["prompts_changed"], false, "{summary:#}");

    let (status, _, envelope) = running.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (status, envelope["status"].as_str()),
        (200, Some("ok")),
        "the call in flight finished: {envelope:#}"
    );

    let tools = listed(&http, &gw).await;
    let now = names(&tools);
    assert!(
        now.contains(&"get_flight_status") && !now.contains(&"search_hotels"),
        "{now:?}"
    );
    let flights = tools.iter().find(|(name, _)| name == "search_flights");
    assert!(
        flights.is_some_and(|(_, description)| description.starts_with("Reloaded. ")),
        "{flights:?}"
    );
    let (status, refused) = call(&http, &gw, "search_hotels", hotels_on(41)).await;
    assert_eq!(status, 404, "{refused:#}");

    let after = breakers(&http, &gw).await;
    assert!(
        after.contains(&open),
        "the unchanged key stays open: {after:?}"
    );
    assert!(
        after.iter().all(|(tool, _, _)| tool != "search_hotels"),
        "{after:?}"
    );
    assert!(
        after.iter().any(|(tool, _, _)| tool == "get_flight_status"),
        "{after:?}"
    );
    let (_, _, metrics) = send(http.get(gw.url("/metrics"))).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    let hotel_gauges: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("faregate_breaker_state{") && l.contains("tool=\"search_hotels\"")
        })
        .collect();
    assert!(
        hotel_gauges.is_empty(),
        "a removed breaker's state is not reported: {hotel_gauges:?}"
    );
    assert!(
        metrics.contains("tool=\"get_flight_status\""),
        "an added tool is"
    );
    let asked = requests(&sim.sim, RouteGroup::DuffelAirSearch);
    let (_, envelope) = call(&http, &gw, "search_flights", flights_on(50)).await;
    assert_eq!(envelope["provider"], "amadeus", "{envelope:#}");
    assert_eq!(
        requests(&sim.sim, RouteGroup::DuffelAirSearch),
        asked,
        "the open breaker asks no one"
    );
}

#[tokio::test]
async fn a_broken_configuration_changes_nothing_and_names_every_problem() {
    let sim = start_sim(92).await;
    let disk = OnDisk::new(&sim.url());
    let gw = disk.serve().await;
    let http = reqwest::Client::new();
    let before = listed(&http, &gw).await;

    // Three mistakes in three files, and a tool removed that must stay served.
    disk.edit(
        "tools/search_flights.toml",
        "timeout = \"8s\"",
        "timeout = \"soon\"",
    );
    disk.edit("faregate.toml", "client_burst = 40", "client_burts = 40");
    disk.remove("prompts/search_hotels.unavailable.md");
    disk.remove("tools/book_hotel.toml");
    let (status, refused) = reload(&http, &gw).await;
    assert_eq!(status, 422, "{refused:#}");
    let problems: Vec<&str> = refused["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("{refused:#}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for (file, key) in [
        ("search_flights.toml", "timeout"),
        ("faregate.toml", "client_burts"),
        ("search_hotels", "search_hotels.unavailable.md"),
    ] {
        assert!(
            problems.iter().any(|p| p.contains(file) && p.contains(key)),
            "a problem naming {file} and {key}: {problems:#?}"
        );
    }
    assert_eq!(
        listed(&http, &gw).await,
        before,
        "the running configuration keeps serving"
    );
    let (status, envelope) = call(&http, &gw, "search_flights", flights_on(30)).await;
    assert_eq!(
        (status, envelope["status"].as_str()),
        (200, Some("ok")),
        "{envelope:#}"
    );

    // Fixed, with one setting only a restart applies: the rest is applied, that one named.
    disk.restore("tools/search_flights.toml");
    disk.edit("faregate.toml", "client_burts = 40", "client_burst = 40");
    disk.restore("prompts/search_hotels.unavailable.md");
    disk.edit(
        "faregate.toml",
        "max_connections = 1024",
        "max_connections = 99",
    );
    let (status, summary) = reload(&http, &gw).await;
    assert_eq!(status, 200, "{summary:#}");
    assert_eq!(
        summary["tools"]["removed"],
        json!(["book_hotel"]),
        "{summary:#}"
    );
    let restart = summary["needs_restart"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(restart.len(), 1, "{summary:#}");
    let named = restart[0].as_str().unwrap_or_default();
    assert!(
        named.starts_with("[server] max_connections: 1024 in force, 99 read"),
        "{named}"
    );
}

#[tokio::test]
async fn a_reload_under_load_drops_no_call() {
    const CALLERS: i64 = 8;
    const RELOADS: usize = 6;
    let sim = start_sim(93).await;
    for group in [RouteGroup::DuffelAirSearch, RouteGroup::DuffelStays] {
        sim.sim.set_fault(
            group,
            Fault {
                latency_ms: 60,
                ..Fault::default()
            },
        );
    }
    let disk = OnDisk::new(&sim.url());
    let gw = disk.serve().await;
    let http = reqwest::Client::new();
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..CALLERS)
        .map(|caller| {
            let (http, base, stop) = (http.clone(), gw.url(""), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut answers = Vec::new();
                // Calls one after another until the reloads are over, flights and hotels in
                // turn, on dates the providers sell (within a year).
                for i in 0_i64.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let day = 10 + (caller * 37 + i) % 300;
                    let (tool, arguments) = match i % 2 {
                        0 => ("search_flights", flights_on(day)),
                        _ => ("search_hotels", hotels_on(day)),
                    };
                    let request = http
                        .post(format!("{base}/v1/tools/{tool}/call"))
                        .bearer_auth(KEY)
                        .json(&json!({ "arguments": arguments }));
                    let (status, _, body) = send(request).await;
                    answers.push((tool, status, body["status"].as_str().map(str::to_string)));
                }
                answers
            })
        })
        .collect();

    // Two configurations in turn while the callers call: other timeouts, bulkheads, memory
    // windows and breaker policies for both tools.
    wait_until(
        Duration::from_secs(10),
        "the callers to reach the provider",
        || async {
            match requests(&sim.sim, RouteGroup::DuffelAirSearch) {
                0 => Err("not yet".to_string()),
                _ => Ok(()),
            }
        },
    )
    .await;
    for reload_number in 0..RELOADS {
        if reload_number % 2 == 0 {
            disk.edit(
                "tools/search_flights.toml",
                "timeout = \"8s\"",
                "timeout = \"7s\"",
            );
            disk.edit(
                "tools/search_flights.toml",
                "slow_call = \"6s\"",
                "slow_call = \"5s\"\nconsecutive_failures = 7",
            );
            disk.edit(
                "tools/search_hotels.toml",
                "max_concurrent = 64",
                "max_concurrent = 40",
            );
            disk.edit(
                "tools/search_hotels.toml",
                "stale_for = \"15m\"",
                "stale_for = \"10m\"",
            );
        } else {
            disk.restore("tools/search_flights.toml");
            disk.restore("tools/search_hotels.toml");
        }
        let (status, summary) = reload(&http, &gw).await;
        assert_eq!(status, 200, "{summary:#}");
        assert_eq!(
            summary["tools"]["changed"],
            json!(["search_flights", "search_hotels"]),
            "{summary:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        let answers = caller.await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!answers.is_empty(), "every caller called");
        for (tool, status, envelope_status) in answers {
            assert_eq!(
                (status, envelope_status.as_deref()),
                (200, Some("ok")),
                "a {tool} call"
            );
        }
    }
}

/// A due job whose tool a reload took away says so when read, and what ends it, instead of
/// looking stuck in `queued`.
#[tokio::test]
async fn a_job_whose_tool_a_reload_removed_says_why_it_waits() {
    let sim = start_sim(93).await;
    let disk = OnDisk::new(&sim.url());
    let path = disk.path("faregate.toml");
    let config = OnDisk::load(&path).unwrap_or_else(|e| panic!("{e:?}"));
    let (store, _dir) = crate::support::sqlite_store().await;
    let source = ConfigSource::new(move || OnDisk::load(&path), env());
    let gw = TestGateway::start_in_fleet_from(config, &env(), store, Some(source)).await;
    let http = reqwest::Client::new();

    // The job waits behind its tool's breakers, forced open.
    let (_, _, listed) = send(http.get(gw.url("/v1/breakers")).bearer_auth(ADMIN)).await;
    for key in &crate::support::breaker_keys(&listed, "search_hotels") {
        let force = http
            .post(gw.url(&format!("/v1/breakers/{key}/force")))
            .bearer_auth(ADMIN)
            .json(&json!({"state": "open"}));
        let (status, _, body) = send(force).await;
        assert_eq!(status, 200, "{body:#}");
    }
    let submit = http
        .post(gw.url("/v1/tools/search_hotels/call"))
        .bearer_auth(KEY)
        .json(&json!({"arguments": hotels_on(40), "mode": "background"}));
    let (status, _, queued) = send(submit).await;
    assert_eq!(status, 202, "{queued:#}");
    let id = queued["job_id"].as_str().unwrap_or_default().to_string();

    disk.remove("tools/search_hotels.toml");
    let (status, body) = reload(&http, &gw).await;
    assert_eq!(status, 200, "{body:#}");
    let job = get(&http, &gw, &format!("/v1/jobs/{id}")).await;
    assert_eq!(job["status"], "queued", "{job:#}");
    let waiting = job["waiting"].as_str().unwrap_or_default();
    assert!(
        waiting.starts_with(
            "due, and waiting: this gateway's configuration does not serve search_hotels now"
        ) && waiting.contains("[jobs] max_age"),
        "{job:#}"
    );
}

/// `faregate manifest` prints, offline, the native manifest `GET /v1/tools` serves from the
/// same files: policy and providers included, not only the schemas.
#[tokio::test]
async fn the_offline_native_manifest_is_what_the_gateway_serves() {
    let sim = start_sim(94).await;
    let disk = OnDisk::new(&sim.url());
    let gw = disk.serve().await;
    let served = get(&reqwest::Client::new(), &gw, "/v1/tools").await;
    let config = disk.path("faregate.toml");
    let (status, printed) = crate::support::run_to_end(
        std::process::Command::new(env!("CARGO_BIN_EXE_faregate"))
            .args(["manifest", "--format", "native", "--config"])
            .arg(&config)
            .envs(env().0.iter().map(|(k, v)| (*k, *v))),
    );
    assert!(status.success(), "{printed}");
    let offline: Value =
        serde_json::from_str(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert_eq!(offline, served);
    assert!(
        served["tools"][0]["policy"]["timeout_ms"].is_u64(),
        "{served:#}"
    );
}
