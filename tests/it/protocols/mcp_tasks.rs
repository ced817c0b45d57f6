//! MCP Tasks over raw JSON-RPC, as a 2026-07-28 client that declared the Tasks extension sends
//! them: a background `tools/call` answers a task, which stays `working` (no error) while the
//! provider is down and completes with a result matching the tool's output schema once it is
//! back; `tasks/cancel` stops a task whose job has not run; and a second gateway on the same
//! PostgreSQL answers `tasks/get` for it (that half needs `FAREGATE_TEST_POSTGRES_URL`).

use std::time::Duration;

use faregate::jobs::{JobStore, Store};
use serde_json::{Value, json};

use crate::support::{NoEnv, Stack, TestGateway, config_for, in_days, wait_until};

const REVISION: &str = "2026-07-28";

/// Short breaker timings (real sockets, so real time), so a healed provider is tried again
/// within a second.
fn quick_breakers(mut config: faregate::config::Config) -> faregate::config::Config {
    for t in &mut config.tools {
        let mut breaker = t.breaker.to_builder();
        breaker
            .open_for(Duration::from_millis(500))
            .open_for_max(Duration::from_secs(1))
            .probe_interval(Duration::from_millis(100))
            .ramp(vec![faregate::breaker::RampStage {
                share: 0.5,
                duration: Duration::from_millis(200),
            }]);
        t.breaker = breaker.build().unwrap_or_else(|e| panic!("{e:?}"));
        t.timeout = Duration::from_secs(2);
        t.deadline = Duration::from_secs(3);
    }
    config
}

fn flights() -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(24)})
}

/// One 2026-07-28 request of `method` to `gateway`'s `/mcp`, from a client that declared the
/// Tasks extension (`tasks: false` leaves it out); the JSON-RPC answer.
async fn rpc(gateway: &TestGateway, method: &str, mut params: Value, tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(REVISION);
    params["_meta"]["io.modelcontextprotocol/clientInfo"] =
        json!({"name": "tasks-test", "version": "1"});
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    // 2026-07-28 names the tool, or the task, in a header too.
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or_default()
        .to_string();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(gateway.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", method)
        .json(&body);
    if !name.is_empty() {
        request = request.header("mcp-name", name);
    }
    let res = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    let text = res.text().await.unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|_| json!({"not_json": text}))
}

/// A background `search_flights` call; the answer.
async fn call_in_background(gateway: &TestGateway, tasks: bool) -> Value {
    let params = json!({"name": "search_flights", "arguments": flights(),
        "_meta": {"faregate/mode": "background"}});
    rpc(gateway, "tools/call", params, tasks).await
}

async fn get_task(gateway: &TestGateway, task_id: &str) -> Value {
    rpc(gateway, "tasks/get", json!({"taskId": task_id}), true).await
}

/// Polls `tasks/get` on `gateway` until the task matches `done`; its result.
async fn wait_for_task(
    gateway: &TestGateway,
    task_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(Duration::from_secs(20), what, || async {
        let answer = get_task(gateway, task_id).await;
        let task = &answer["result"];
        // While it waits, a task is never an error to the client.
        if answer.get("error").is_some() {
            panic!("tasks/get answered an error: {answer:#}");
        }
        if done(task) {
            Ok(task.clone())
        } else {
            Err(format!("{answer:#}"))
        }
    })
    .await
}

/// The created task of a `tools/call` answer, checked for its shape; its id.
fn created_task(answer: &Value) -> String {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "task", "{answer:#}");
    assert_eq!(result["status"], "working", "{answer:#}");
    assert!(result["pollIntervalMs"].as_u64() > Some(0), "{answer:#}");
    assert!(result["createdAt"].as_str().is_some(), "{answer:#}");
    result["taskId"].as_str().unwrap_or_default().to_string()
}

/// The task goes through the outage: working, with a status message that says it waits and
/// why, and then completed with the result `tools/call` would have answered.
async fn through_the_outage(s: &Stack, answering: &TestGateway) {
    s.flights_down();
    let answer = call_in_background(&s.gateway, true).await;
    let task_id = created_task(&answer);
    // The task id is the job's: the job API knows it.
    let (status, job) = s.get_json(&format!("/v1/jobs/{task_id}")).await;
    assert_eq!(status, 200, "{job:#}");

    let waiting = wait_for_task(
        answering,
        &task_id,
        "the task to wait for the provider",
        |t| {
            t["status"] == "working"
                && t["statusMessage"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Waiting:"))
        },
    )
    .await;
    let message = waiting["statusMessage"].as_str().unwrap_or_default();
    assert!(message.contains("tries again by itself"), "{message}");
    assert!(waiting.get("result").is_none(), "{waiting:#}");

    // The client's own task is listed.
    let listed = rpc(answering, "tasks/list", json!({}), true).await;
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .map(|tasks| tasks.iter().filter_map(|t| t["taskId"].as_str()).collect())
        .unwrap_or_default();
    assert!(ids.contains(&task_id.as_str()), "{listed:#}");

    s.sim.clear_faults();
    // tasks/result waits for the task to end and answers its tool result.
    let waited = rpc(answering, "tasks/result", json!({"taskId": task_id}), true).await;
    let done = wait_for_task(answering, &task_id, "the task to complete", |t| {
        t["status"] == "completed"
    })
    .await;
    assert_eq!(
        waited["result"]["content"], done["result"]["content"],
        "{waited:#}"
    );
    assert_eq!(
        waited["result"]["structuredContent"], done["result"]["structuredContent"],
        "{waited:#}"
    );
    assert_eq!(
        waited["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str(),
        "{waited:#}"
    );
    let result = &done["result"];
    assert_eq!(result["isError"], false, "{done:#}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Data (JSON):"),
        "the model text of an ok result: {text}"
    );

    // The structured result matches the output schema tools/list declares.
    let tools = rpc(&s.gateway, "tools/list", json!({}), true).await;
    let schema = tools["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "search_flights"))
        .map(|t| t["outputSchema"].clone())
        .unwrap_or_else(|| panic!("search_flights in {tools:#}"));
    let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{e}"));
    let structured = &result["structuredContent"];
    assert!(structured.is_object(), "{done:#}");
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "structuredContent against outputSchema: {errors:?}"
    );
}

#[tokio::test]
async fn a_background_call_is_a_task_that_waits_out_an_outage_and_completes() {
    let s = Stack::builder(31)
        .config(quick_breakers)
        .jobs()
        .start()
        .await;
    through_the_outage(&s, &s.gateway).await;
}

#[tokio::test]
async fn a_client_without_the_tasks_extension_is_told_to_declare_it() {
    let s = Stack::builder(32).jobs().start().await;
    let answer = call_in_background(&s.gateway, false).await;
    let result = &answer["result"];
    assert_eq!(result["resultType"], "complete", "{answer:#}");
    assert_eq!(result["isError"], true, "{answer:#}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Declare the extension io.modelcontextprotocol/tasks"),
        "{answer:#}"
    );
    let (_, jobs) = s.get_json("/v1/jobs").await;
    assert_eq!(jobs["jobs"], json!([]), "no job was stored: {jobs:#}");
    // And a tasks/get without the extension is refused as the extension says.
    let refused = rpc(&s.gateway, "tasks/get", json!({"taskId": "x"}), false).await;
    assert!(refused.get("error").is_some(), "{refused:#}");
}

#[tokio::test]
async fn cancel_stops_a_waiting_task_but_not_an_ended_one() {
    let s = Stack::builder(33)
        .config(quick_breakers)
        .jobs()
        .start()
        .await;
    s.flights_down();
    let task_id = created_task(&call_in_background(&s.gateway, true).await);
    wait_for_task(&s.gateway, &task_id, "the task to wait", |t| {
        t["statusMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("Waiting:"))
    })
    .await;
    let ack = rpc(&s.gateway, "tasks/cancel", json!({"taskId": task_id}), true).await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack:#}");
    let cancelled = get_task(&s.gateway, &task_id).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled:#}");
    let no_result = rpc(&s.gateway, "tasks/result", json!({"taskId": task_id}), true).await;
    let message = no_result["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("was cancelled before it ran"),
        "{no_result:#}"
    );

    // Once the provider is back, a later task completes and the cancelled one never ran.
    s.sim.clear_faults();
    let later = created_task(&call_in_background(&s.gateway, true).await);
    wait_for_task(&s.gateway, &later, "the later task to complete", |t| {
        t["status"] == "completed"
    })
    .await;
    let job = s
        .store()
        .get(&task_id)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the cancelled job is kept"));
    assert_eq!(job.status.as_str(), "cancelled");
    assert!(job.result.is_none(), "it never ran: {job:?}");

    // An ended task is not cancelled, and the client is told why.
    let refused = rpc(&s.gateway, "tasks/cancel", json!({"taskId": later}), true).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("has already ended (completed)"),
        "{refused:#}"
    );
    // A task id of no task of this client says what to use.
    let unknown = get_task(&s.gateway, "not-a-task").await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown:#}");
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("There is no task not-a-task"),
        "{unknown:#}"
    );
}

#[tokio::test]
async fn a_second_gateway_on_the_same_postgresql_answers_for_the_task() {
    let Ok(url) = std::env::var("FAREGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "note: the MCP Tasks fleet test skipped: FAREGATE_TEST_POSTGRES_URL is not set (.ci/run sets it)"
        );
        return;
    };
    let schema = format!("tasks_{}", uuid::Uuid::now_v7().simple());
    let open = || async {
        let store = Store::open_postgres(&url, Some(&schema))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store.migrate().await.unwrap_or_else(|e| panic!("{e}"));
        store
    };
    let s = Stack::builder(34)
        .config(quick_breakers)
        .jobs_in(open().await)
        .start()
        .await;
    // The second gateway fronts the same simulator, so whichever replica runs the job meets the
    // same outage.
    let second = TestGateway::start_with_jobs(
        quick_breakers(config_for(&s.sim_url())),
        &NoEnv,
        open().await,
    )
    .await;
    through_the_outage(&s, &second).await;
    crate::fleet::drop_schema(&url, &schema).await;
}
