//! Background mode through the agent protocols: an OpenAI or Anthropic body with
//! `"mode": "background"` stores each call as a job (as the native endpoint does), the model reads
//! `[queued: job …]`, and the jobs run to completion. (Without a job store, and over MCP, it is an
//! error result: `tests/protocols.rs` and `tests/python/test_mcp.py`.)

use crate::support;

use std::time::Duration;

use super::{chat_call, hotels_args, text};
use serde_json::{Value, json};
use support::{NoEnv, TestGateway};

#[tokio::test]
async fn background_mode_on_agent_protocols_stores_jobs() {
    let test_sim = support::start_sim(8).await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = faregate::jobs::Store::open(&format!(
        "sqlite://{}",
        dir.path().join("jobs.db").display()
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let gateway =
        TestGateway::start_with_jobs(support::config_for(&test_sim.url()), &NoEnv, store).await;
    let http = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let req = http.post(gateway.url(path)).json(&body);
        async move {
            let res = req.send().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(res.status().as_u16(), 200);
            res.json::<Value>().await.unwrap_or_else(|e| panic!("{e}"))
        }
    };
    let openai = post(
        "/v1/openai/tool_calls",
        json!({"mode": "background", "tool_calls": [chat_call("c1", "search_hotels", &hotels_args().to_string())]}),
    )
    .await;
    let anthropic = post(
        "/v1/anthropic/tool_use",
        json!({"mode": "background", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "search_hotels", "input": hotels_args()}
        ]}),
    )
    .await;
    let openai_text = text(&openai["messages"][0]["content"]);
    let anthropic_block = &anthropic["content"][0];
    let anthropic_text = text(&anthropic_block["content"]);
    for t in [openai_text, anthropic_text] {
        assert!(t.starts_with("[queued: job "), "{t}");
        assert!(t.contains("GET /v1/jobs/"), "{t}");
    }
    assert_ne!(anthropic_block["is_error"], json!(true), "{anthropic:#}");
    // The jobs exist and run to completion against the simulator.
    let job_id = |t: &str| {
        t.trim_start_matches("[queued: job ")
            .split(']')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    for id in [job_id(openai_text), job_id(anthropic_text)] {
        let mut status = Value::Null;
        for _ in 0..100 {
            let job = support::get_json(&http, &gateway.url(&format!("/v1/jobs/{id}"))).await;
            status = job["status"].clone();
            if status == "succeeded" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(status, "succeeded", "job {id}");
    }
    // An invalid background call is refused as an interactive one would be.
    let bad = post(
        "/v1/openai/tool_calls",
        json!({"mode": "background", "tool_calls": [chat_call("c2", "search_hotels", "{}")]}),
    )
    .await;
    let bad_text = text(&bad["messages"][0]["content"]);
    assert!(bad_text.starts_with("[invalid_arguments]"), "{bad_text}");
}
