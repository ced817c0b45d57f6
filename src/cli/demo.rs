//! The commands that start the provider simulator (crates/faregate-sim): `faregate demo`, the
//! gateway and the simulator in one process with no credentials needed, and `faregate sim`, the
//! simulator alone (as the `faregate-sim` binary runs it). Built with the `demo` feature only,
//! so a gateway built without it carries no simulator.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use tokio::net::TcpListener;

use faregate::app;
use faregate::config::{DiskFiles, EMBEDDED_CONFIG, EmbeddedFiles};

use super::{build, init_telemetry, load_quiet, shutdown_signal};

/// `faregate sim`: the simulator alone, as the `faregate-sim` binary runs it.
pub(crate) async fn sim(args: &faregate_sim::SimArgs) -> anyhow::Result<ExitCode> {
    faregate::telemetry::init_default();
    faregate_sim::run(args, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// The shortest interval of a watch in the demo.
const DEMO_WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// `faregate demo`: the simulator and the gateway in one process.
pub(crate) async fn demo(
    listen: SocketAddr,
    sim_listen: SocketAddr,
    config_path: Option<&Path>,
    store: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let (mut config, warnings) = match config_path {
        Some(p) => load_quiet(&DiskFiles, p)?,
        None => load_quiet(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG))?,
    };
    let replica = faregate::fleet::replica_name();
    let _tracing = init_telemetry(&config, &warnings, &replica)?;
    let sim_listener = TcpListener::bind(sim_listen).await.with_context(|| {
        format!("cannot listen on {sim_listen} for the simulator (try --sim-listen)")
    })?;
    let sim_addr = sim_listener.local_addr()?;
    let sim_url = reqwest::Url::parse(&format!("http://{sim_addr}"))?;
    // Every provider goes to the simulator's host and keeps its base URL's path: an http
    // provider's API may live under one, as the flight tracker's `/aeroapi` does.
    for provider in config.providers.values_mut() {
        let mut url = sim_url.clone();
        url.set_path(provider.base_url.path());
        provider.base_url = url;
    }
    config.server.listen = listen;
    // Watches may run every few seconds in the demo, so one is seen firing within a minute; a
    // gateway in front of real providers keeps the configured minimums.
    config.watches.min_interval = config.watches.min_interval.min(DEMO_WATCH_INTERVAL);
    for tool in &mut config.tools {
        tool.watch_min_interval = tool.watch_min_interval.map(|d| d.min(DEMO_WATCH_INTERVAL));
    }
    let keys = DemoKeys::of(&config, |var| std::env::var(var).ok());
    let app = build(config, store, replica).await?;
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen} (try --listen)"))?;
    let addr = listener.local_addr()?;

    let simulator = faregate_sim::Simulator::new(7);
    // The simulator stops after the gateway has drained: the calls in flight at a Ctrl-C get
    // `shutdown_grace` to finish against it, as against a real provider, instead of its
    // "shutting down" 503s (which would also open breakers that the next start restores).
    let (sim_stop_tx, mut sim_stop) = tokio::sync::watch::channel(false);
    let sim_task = tokio::spawn(faregate_sim::serve(sim_listener, simulator, async move {
        let _ = sim_stop.wait_for(|s| *s).await;
    }));
    print!("{}", keys.sign(&demo_banner(addr, sim_addr), addr));
    let gateway = tokio::spawn(app::run(listener, app, shutdown_signal()));
    let served = gateway.await.context("gateway task");
    let _ = sim_stop_tx.send(true);
    served??;
    sim_task.await.context("simulator task")??;
    Ok(ExitCode::SUCCESS)
}

/// Which keys the gateway's routes ask for, so that the banner's commands work when pasted:
/// with client keys set, a `curl` without one would only be told 401; and whether callbacks
/// can be signed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DemoKeys {
    /// Client keys are on (the flat list's variable is set, or `[[clients]]` are configured).
    client: bool,
    /// The admin key's variable, when it is set.
    admin_env: Option<String>,
    /// The callback secret's variable, when it is not set: every `callback_url` is refused
    /// until it is, which the banner says before anyone tries one.
    unsigned_callbacks: Option<String>,
}

impl DemoKeys {
    fn of(config: &faregate::config::Config, var: impl Fn(&str) -> Option<String>) -> Self {
        let set =
            |name: &str| var(name).is_some_and(|v| v.split(',').any(|k| !k.trim().is_empty()));
        DemoKeys {
            client: set(&config.auth.client_keys_env) || !config.clients.is_empty(),
            admin_env: set(&config.auth.admin_key_env).then(|| config.auth.admin_key_env.clone()),
            unsigned_callbacks: (!set(&config.auth.callback_secret_env))
                .then(|| config.auth.callback_secret_env.clone()),
        }
    }

    /// `banner` with a key on every command the gateway at `addr` would refuse without one (the
    /// simulator's take none), read from a shell variable: the banner never prints a key.
    fn sign(&self, banner: &str, addr: SocketAddr) -> String {
        if !self.client && self.admin_env.is_none() && self.unsigned_callbacks.is_none() {
            return banner.to_string();
        }
        let gateway = format!("http://{addr}/");
        let admin = self.admin_env.as_deref().map(|env| format!("${env}"));
        let mut out = String::with_capacity(banner.len() + 2048);
        for line in banner.lines() {
            let command = line.trim_start().starts_with("curl -s") && line.contains(&gateway);
            let client = self.client.then_some("$FAREGATE_KEY");
            let key = if line.contains("/force") {
                admin.as_deref().or(client)
            } else {
                client
            };
            match key {
                Some(key) if command => {
                    out.push_str(&line.replacen(
                        "curl -s",
                        &format!("curl -s -H \"authorization: Bearer {key}\""),
                        1,
                    ));
                }
                _ => out.push_str(line),
            }
            out.push('\n');
            if line == "Try:" {
                out.push_str(&self.preamble());
            }
        }
        out
    }

    fn preamble(&self) -> String {
        let mut said = String::from("\n");
        if self.client {
            said.push_str(
                "  # client keys are on: put one in FAREGATE_KEY first, and the commands below send it\n  export FAREGATE_KEY=…\n",
            );
        }
        if let Some(env) = &self.admin_env {
            said.push_str(&format!(
                "  # forcing a breaker takes the admin key: the command below reads it from ${env}\n"
            ));
        }
        if let Some(env) = &self.unsigned_callbacks {
            said.push_str(&format!(
                "  # a callback_url (of a background call, a watch or a back-in-service notice) is refused\n  # until {env} holds the secret that signs callbacks; restart with it set to use one\n"
            ));
        }
        said
    }
}

fn demo_banner(addr: SocketAddr, sim: SocketAddr) -> String {
    let day = |n: i64| {
        (faregate::call::Gateway::today() + chrono::Duration::days(n))
            .format("%Y-%m-%d")
            .to_string()
    };
    let (d1, d2) = (day(21), day(23));
    // The simulator's flight tracker (as AeroAPI) lists each flight on today's UTC date.
    let utc_today = faregate::clock::utc_now().format("%Y-%m-%d").to_string();
    format!(
        r#"
faregate demo — gateway and provider simulator, no credentials needed

  API        http://{addr}/v1/tools   (OpenAPI: http://{addr}/openapi.json)
  MCP        http://{addr}/mcp        (Streamable HTTP)
  dashboard  http://{addr}/dashboard   (breakers, alerts; metrics at /metrics, events at /v1/events)
  simulator  http://{sim}  (Duffel, Amadeus and the example APIs; faults at /_sim/faults)

Try:

  # search flights
  curl -s http://{addr}/v1/tools/search_flights/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"origin": "JFK", "destination": "LHR", "departure_date": "{d1}", "adults": 1}}}}'

  # search hotels in Paris
  curl -s http://{addr}/v1/tools/search_hotels/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"city_code": "PAR", "check_in_date": "{d1}", "check_out_date": "{d2}", "adults": 2}}}}'

  # the rooms of one hotel (a hotel_result_id from the search), then book one of its rates
  curl -s http://{addr}/v1/tools/check_hotel_availability/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"hotel_result_id": "srr_…"}}}}'
  curl -s http://{addr}/v1/tools/book_hotel/call -H 'content-type: application/json' \
    -d '{{"idempotency_key": "demo-1", "arguments": {{"rate_id": "rat_…", "email": "ana@example.com", "phone_number": "+34600000000", "guests": [{{"given_name": "Ana", "family_name": "Garcia"}}]}}}}'

  # invalid arguments are named field by field (HTTP 422)
  curl -s http://{addr}/v1/tools/search_flights/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"origin": "jfk", "destination": "LHR", "departure_date": "2020-01-01"}}}}'

  # flight status of a scheduled flight (served by Amadeus)
  curl -s http://{addr}/v1/tools/get_flight_status/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"carrier_code": "IB", "flight_number": "3167", "departure_date": "{d1}"}}}}'

  # watch a flight: asked every 5 s in the background, a notice only when its status changes
  curl -s http://{addr}/v1/watches -H 'content-type: application/json' \
    -d '{{"tool": "get_flight_status", "every": "5s", "condition": {{"kind": "status_changed"}}, "arguments": {{"carrier_code": "BA", "flight_number": "117", "departure_date": "{d1}"}}}}'
  # script the simulator: BA117 delayed by 45 min and moved to gate B12 in 15 s; then read the
  # watch's notices (its watch_id from the answer above)
  curl -s http://{sim}/_sim/script -H 'content-type: application/json' \
    -d '{{"steps": [{{"after_ms": 15000, "flight": "BA117", "delay_minutes": 45, "gate": "B12"}}]}}'
  curl -s http://{addr}/v1/watches/019a…

  # two tools from configuration, no Rust (tools/track_flight.toml, tools/get_hotel_content.toml):
  # a flight tracker in FlightAware AeroAPI's format, and a hotel's description and amenities
  curl -s http://{addr}/v1/tools/track_flight/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"ident": "BA117"}}}}'
  curl -s http://{addr}/v1/tools/get_hotel_content/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"hotel_id": "acc_00000SCKMVsotDKOZaBLSE"}}}}'
  # take Amadeus's flight status down: get_flight_status goes on to FlightAware, bound in
  # tools/get_flight_status.toml, and answers in its own result ("provider": "flightaware")
  curl -s -X PUT http://{sim}/_sim/faults/amadeus_status -H 'content-type: application/json' \
    -d '{{"outage": true}}'
  curl -s http://{addr}/v1/tools/get_flight_status/call -H 'content-type: application/json' \
    -d '{{"arguments": {{"carrier_code": "BA", "flight_number": "117", "departure_date": "{utc_today}"}}}}'
  # take the tracker down: its own breaker opens and its last answer (then its fallback text)
  # is served; DELETE the fault and the probes close it again
  curl -s -X PUT http://{sim}/_sim/faults/flight_tracker -H 'content-type: application/json' \
    -d '{{"outage": true}}'

  # take Duffel's flight search down, then search again: Amadeus answers ("provider": "amadeus")
  curl -s -X PUT http://{sim}/_sim/faults/duffel_air_search -H 'content-type: application/json' \
    -d '{{"outage": true}}'
  # make Amadeus slow too (15 s per answer): the gateway gives up at the tool's timeout and
  # answers with the fallback text instead of hanging
  curl -s -X PUT http://{sim}/_sim/faults/amadeus_flights -H 'content-type: application/json' \
    -d '{{"latency_ms": 15000}}'
  # heal it
  curl -s -X DELETE http://{sim}/_sim/faults

  # the tool manifest, natively or ready for a model request (openai, anthropic, gemini, mcp)
  curl -s http://{addr}/v1/tools
  curl -s 'http://{addr}/v1/tools?format=openai'

  # run an OpenAI assistant message's tool calls (Anthropic: POST /v1/anthropic/tool_use)
  curl -s http://{addr}/v1/openai/tool_calls -H 'content-type: application/json' \
    -d '{{"tool_calls": [{{"id": "call_1", "type": "function", "function": {{"name": "search_hotels", "arguments": "{{\"city_code\": \"PAR\", \"check_in_date\": \"{d1}\", \"check_out_date\": \"{d2}\"}}"}}}}]}}'

  # breakers, and forcing one open by hand (admin key when FAREGATE_ADMIN_KEY is set)
  curl -s http://{addr}/v1/breakers
  curl -s -X POST http://{addr}/v1/breakers/search_flights.duffel/force -H 'content-type: application/json' -d '{{"state": "open"}}'

Ctrl-C stops both.
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> faregate::config::Config {
        load_quiet(&EmbeddedFiles, Path::new(EMBEDDED_CONFIG))
            .unwrap_or_else(|e| panic!("{e:#}"))
            .0
    }

    fn banner_with(vars: &[(&str, &str)]) -> String {
        let addr: SocketAddr = ([127, 0, 0, 1], 8080).into();
        let sim: SocketAddr = ([127, 0, 0, 1], 8081).into();
        let keys = DemoKeys::of(&config(), |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        });
        keys.sign(&demo_banner(addr, sim), addr)
    }

    #[test]
    fn with_keys_set_every_gateway_command_sends_one_and_none_is_printed() {
        let open = banner_with(&[]);
        assert!(!open.contains("authorization"), "auth off: plain commands");
        assert!(
            open.contains("is refused\n  # until FAREGATE_CALLBACK_SECRET holds the secret"),
            "{open}"
        );
        let signed = banner_with(&[("FAREGATE_CALLBACK_SECRET", "s")]);
        assert!(!signed.contains("FAREGATE_CALLBACK_SECRET"), "{signed}");
        let keyed = banner_with(&[
            ("FAREGATE_CLIENT_KEYS", "k-alpha-xyzzy, k-beta-xyzzy"),
            ("FAREGATE_ADMIN_KEY", "adm-xyzzy"),
        ]);
        assert!(!keyed.contains("xyzzy"), "a key is printed:\n{keyed}");
        assert!(keyed.contains("export FAREGATE_KEY="), "{keyed}");
        let commands: Vec<&str> = keyed
            .lines()
            .filter(|l| l.trim_start().starts_with("curl"))
            .collect();
        assert!(commands.len() > 10, "{keyed}");
        for command in commands {
            // Without it curl declares a form, which the gateway refuses (415).
            if command.contains(" -d ") {
                assert!(
                    command.contains("-H 'content-type: application/json'"),
                    "{command}"
                );
            }
            let to_gateway = command.contains("http://127.0.0.1:8080/");
            let key = if command.contains("/force") {
                "authorization: Bearer $FAREGATE_ADMIN_KEY"
            } else {
                "authorization: Bearer $FAREGATE_KEY"
            };
            assert_eq!(command.contains(key), to_gateway, "{command}");
            if !to_gateway {
                assert!(
                    !command.contains("authorization"),
                    "the simulator: {command}"
                );
            }
        }
        let without_admin = banner_with(&[("FAREGATE_CLIENT_KEYS", "k")]);
        assert!(
            without_admin
                .lines()
                .any(|l| l.contains("/force") && l.contains("Bearer $FAREGATE_KEY")),
            "no admin key: the client key, which the gateway answers with what to set"
        );
    }
}
