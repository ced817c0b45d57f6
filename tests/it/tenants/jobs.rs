//! Jobs belong to their client: each call and job carries the client whose key authenticated
//! it, a background call's idempotency key is that client's alone, and another client's job
//! reads as no job at all.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::post_as;
use crate::protocols::{chat_call, hotels_args};
use crate::support::{MapEnv, Stack, send};

/// The name the gateway gives a key of the flat key list: `key-` and 8 hex of its SHA-256.
fn key_client(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("key-{hex}")
}

const ADMIN: &str = "admin-key";

async fn two_clients() -> Stack {
    Stack::builder(21)
        .env(MapEnv(vec![
            ("FAREGATE_CLIENT_KEYS", "key-a,key-b"),
            ("FAREGATE_ADMIN_KEY", ADMIN),
        ]))
        .jobs()
        .start()
        .await
}

async fn get_as(s: &Stack, key: &str, path: &str) -> (u16, Value) {
    let (status, _, body) = send(s.http.get(s.url(path)).bearer_auth(key)).await;
    (status, body)
}

async fn job_as(s: &Stack, key: &str, id: &str) -> (u16, Value) {
    get_as(s, key, &format!("/v1/jobs/{id}")).await
}

/// The ids `GET /v1/jobs` shows the holder of `key`.
async fn listed_as(s: &Stack, key: &str) -> Vec<String> {
    let (status, body) = get_as(s, key, "/v1/jobs").await;
    assert_eq!(status, 200, "{body:#}");
    body["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .filter_map(|j| j["job_id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn submit_as(s: &Stack, key: &str, idempotency_key: &str) -> String {
    let body = json!({"mode": "background", "idempotency_key": idempotency_key, "arguments": hotels_args()});
    let (status, envelope) = post_as(s, key, "/v1/tools/search_hotels/call", body).await;
    assert_eq!(status, 202, "{envelope:#}");
    envelope["job_id"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_client_sees_only_its_own_jobs_and_the_admin_sees_all() {
    let s = two_clients().await;
    let a = submit_as(&s, "key-a", "a-1").await;
    let b = submit_as(&s, "key-b", "b-1").await;
    // Another client's job id reads exactly as an id that does not exist.
    let (status, foreign) = job_as(&s, "key-b", &a).await;
    assert_eq!(status, 404, "{foreign:#}");
    let unknown = "0190a000-0000-7000-8000-000000000000";
    let (status, missing) = job_as(&s, "key-b", unknown).await;
    assert_eq!(status, 404, "{missing:#}");
    assert_eq!(
        foreign["message"].as_str().map(|m| m.replace(&a, "ID")),
        missing["message"]
            .as_str()
            .map(|m| m.replace(unknown, "ID")),
        "no hint that the job exists"
    );
    assert_eq!(job_as(&s, "key-a", &a).await.0, 200);
    assert_eq!(
        job_as(&s, ADMIN, &a).await.0,
        200,
        "the admin reads any job"
    );
    assert_eq!(listed_as(&s, "key-a").await, std::slice::from_ref(&a));
    assert_eq!(listed_as(&s, "key-b").await, std::slice::from_ref(&b));
    let all = listed_as(&s, ADMIN).await;
    assert!(
        all.len() == 2 && all.contains(&a) && all.contains(&b),
        "{all:?}"
    );
    // Another client's idempotency key takes nothing: it makes a job of one's own.
    let taken = submit_as(&s, "key-b", "a-1").await;
    assert_ne!(taken, a);
    assert_eq!(listed_as(&s, "key-a").await, [a]);
}

#[tokio::test]
async fn the_same_idempotency_key_from_two_clients_is_two_jobs() {
    let s = two_clients().await;
    let body = json!({"mode": "background", "idempotency_key": "same", "arguments": hotels_args()});
    let submit = |key: &'static str| {
        let (s, body) = (&s, body.clone());
        async move {
            let (status, envelope) = post_as(s, key, "/v1/tools/search_hotels/call", body).await;
            let id = envelope["job_id"].as_str().unwrap_or_default().to_string();
            (status, id)
        }
    };
    let (created_a, a) = submit("key-a").await;
    // 202 while the job is pending, 200 with its result once it has ended: the same job.
    let (status, a_again) = submit("key-a").await;
    assert!(matches!(status, 200 | 202), "{status}");
    let (created_b, b) = submit("key-b").await;
    assert_eq!((created_a, created_b), (202, 202));
    assert_eq!(a, a_again, "one client's repeated key is its one job");
    assert_ne!(a, b, "another client's same key is another job");
    let (_, job_a) = job_as(&s, "key-a", &a).await;
    let (_, job_b) = job_as(&s, "key-b", &b).await;
    assert_eq!(job_a["client"], key_client("key-a"), "{job_a:#}");
    assert_eq!(job_b["client"], key_client("key-b"), "{job_b:#}");
}

#[tokio::test]
async fn agent_protocol_jobs_belong_to_the_calling_client() {
    let s = two_clients().await;
    let body = json!({"mode": "background", "tool_calls": [
        chat_call("c1", "search_hotels", &hotels_args().to_string())
    ]});
    let (status, answer) = post_as(&s, "key-b", "/v1/openai/tool_calls", body).await;
    assert_eq!(status, 200, "{answer:#}");
    let text = answer["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    let id = text
        .trim_start_matches("[queued: job ")
        .split(']')
        .next()
        .unwrap_or_default();
    let (status, job) = job_as(&s, "key-b", id).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(job["client"], key_client("key-b"), "{job:#}");
}

#[tokio::test]
async fn with_auth_off_every_job_belongs_to_the_local_client() {
    let s = Stack::builder(22).jobs().start().await;
    let (status, envelope) = s
        .submit("search_hotels", json!({"arguments": hotels_args()}))
        .await;
    assert_eq!(status, 202, "{envelope:#}");
    let id = envelope["job_id"].as_str().unwrap_or_default();
    let (_, job) = s.get_json(&format!("/v1/jobs/{id}")).await;
    assert_eq!(job["client"], "local", "{job:#}");
}
