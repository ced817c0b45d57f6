//! Background mode through the agent protocols: an OpenAI or Anthropic body with
//! `"mode": "background"` stores each call as a job (as the native endpoint does), the model reads
//! `[queued: job …]`, and the jobs run to completion. (Without a job store, and over MCP, it is an
//! error result: [`super::endpoints`] and `tests/python/test_mcp.py`.)

use std::time::Duration;

use serde_json::{Value, json};

use super::{chat_call, hotels_args, text};
use crate::support::Stack;

#[tokio::test]
async fn background_mode_on_agent_protocols_stores_jobs() {
    let s = Stack::builder(8).jobs().start().await;
    let post = |path: &'static str, body: Value| {
        let s = &s;
        async move {
            let (status, answer) = s.post(path, body).await;
            assert_eq!(status, 200, "{answer:#}");
            answer
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
        // These routes take no callback URL, so the text names none.
        assert!(!t.contains("callback"), "{t}");
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
        s.wait_for_job(&id, Duration::from_secs(5), |j| j["status"] == "succeeded")
            .await;
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
