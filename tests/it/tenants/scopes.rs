//! Scopes: a client calls and sees only its tools, in every protocol and every manifest, the
//! OpenAPI document, the breaker API and the fallback texts, and a client without `may_book`
//! cannot book. (Its MCP sessions and event stream: `sessions.rs`.)

use faregate_sim::RouteGroup;
use serde_json::{Value, json};

use super::post_as;
use super::sessions::Mcp;
use crate::protocols::{chat_call, hotels_args};
use crate::support::{MapEnv, Stack, in_days, send};

/// `reader` may search only; `pricer` may call every tool but may not book.
pub(super) async fn stack() -> Stack {
    Stack::builder(51).config(with_clients).start().await
}

/// `config` with the clients of [`stack`].
pub(super) fn with_clients(mut c: faregate::config::Config) -> faregate::config::Config {
    let client = |name: &str, key: &str, tools: &[&str], may_book: bool| {
        crate::support::client(name, key, crate::support::scope(tools, may_book))
    };
    c.clients = vec![
        client("reader", "reader-key", &["search_*"], false),
        client("pricer", "pricer-key", &["*"], false),
    ];
    c
}

pub(super) fn flights() -> Value {
    json!({"origin": "JFK", "destination": "LHR", "departure_date": in_days(30)})
}

fn booking() -> Value {
    json!({"offer_id": "off_123", "passengers": [{"given_name": "Ada", "family_name": "Lovelace", "born_on": "1990-01-01", "email": "ada@example.com", "phone_number": "+442071234567", "title": "ms", "gender": "f"}], "idempotency_key": "k-1"})
}

async fn get_as(s: &Stack, key: &str, path: &str) -> (u16, Value) {
    let (status, _, body) = send(s.http.get(s.url(path)).bearer_auth(key)).await;
    (status, body)
}

fn names(v: &Value, path: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(items) = v.as_array() {
        for item in items {
            let mut at = item;
            for p in path {
                at = &at[*p];
            }
            if let Some(n) = at.as_str() {
                out.push(n.to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn a_tool_outside_the_scope_is_refused_in_every_protocol() {
    let s = stack().await;
    // Native: 403 naming the allowed tools.
    let (status, refused) = post_as(
        &s,
        "reader-key",
        "/v1/tools/price_flight_offer/call",
        json!({"arguments": {"offer_id": "off_123"}}),
    )
    .await;
    assert_eq!(status, 403, "{refused:#}");
    let allowed = names(&refused["allowed_tools"], &[]);
    assert!(
        allowed.iter().all(|t| t.starts_with("search_")) && allowed.len() >= 2,
        "{refused:#}"
    );
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("may not call price_flight_offer")),
        "{refused:#}"
    );
    let (status, ok) = post_as(
        &s,
        "reader-key",
        "/v1/tools/search_flights/call",
        json!({"arguments": flights()}),
    )
    .await;
    assert_eq!(status, 200, "{ok:#}");
    // OpenAI and Anthropic: that call's error result, the other calls run.
    let (status, openai) = post_as(
        &s,
        "reader-key",
        "/v1/openai/tool_calls",
        json!({"tool_calls": [
            chat_call("c1", "book_flight", &booking().to_string()),
            chat_call("c2", "search_hotels", &hotels_args().to_string()),
        ]}),
    )
    .await;
    assert_eq!(status, 200, "{openai:#}");
    let refused_text = openai["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        refused_text.starts_with("[rejected] This client may not call book_flight"),
        "{refused_text}"
    );
    assert!(
        !openai["messages"][1]["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with('['),
        "{openai:#}"
    );
    let (status, anthropic) = post_as(&s, "reader-key", "/v1/anthropic/tool_use", json!({"content": [
        {"type": "tool_use", "id": "t1", "name": "price_flight_offer", "input": {"offer_id": "off_123"}}
    ]})).await;
    assert_eq!(status, 200, "{anthropic:#}");
    assert_eq!(anthropic["content"][0]["is_error"], true, "{anthropic:#}");
    // MCP: a JSON-RPC error naming the allowed tools.
    let mcp = Mcp::start(&s, "reader-key").await;
    let refused = mcp
        .rpc(
            "tools/call",
            json!({"name": "book_flight", "arguments": booking()}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused:#}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("may not call book_flight")),
        "{refused:#}"
    );
    assert!(
        refused["error"]["data"]["allowed_tools"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{refused:#}"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelAirOrders),
        0,
        "no booking reached the provider"
    );
    assert_eq!(
        s.requests(RouteGroup::DuffelAirOffers),
        0,
        "no offer read either"
    );
}

#[tokio::test]
async fn without_may_book_a_client_cannot_book_but_calls_the_rest() {
    let s = stack().await;
    let (status, refused) = post_as(
        &s,
        "pricer-key",
        "/v1/tools/book_flight/call",
        json!({"arguments": booking(), "idempotency_key": "k-1"}),
    )
    .await;
    assert_eq!(status, 403, "{refused:#}");
    let allowed = names(&refused["allowed_tools"], &[]);
    assert!(
        allowed.contains(&"price_flight_offer".to_string()),
        "{allowed:?}"
    );
    assert!(
        !allowed.iter().any(|t| t.starts_with("book_")),
        "{allowed:?}"
    );
    let (_, native) = get_as(&s, "pricer-key", "/v1/tools").await;
    let listed = names(&native["tools"], &["name"]);
    assert!(
        listed.contains(&"price_flight_offer".to_string())
            && !listed.contains(&"book_flight".to_string()),
        "{listed:?}"
    );
}

#[tokio::test]
async fn every_manifest_and_the_guidance_show_a_client_only_its_tools() {
    let s = stack().await;
    let only_search = |listed: Vec<String>, what: &str| {
        assert!(!listed.is_empty(), "{what}: nothing listed");
        assert!(
            listed.iter().all(|t| t.starts_with("search_")),
            "{what}: {listed:?}"
        );
    };
    let (_, native) = get_as(&s, "reader-key", "/v1/tools").await;
    only_search(names(&native["tools"], &["name"]), "native");
    let (_, openai) = get_as(&s, "reader-key", "/v1/tools?format=openai").await;
    only_search(names(&openai["tools"], &["function", "name"]), "openai");
    let (_, anthropic) = get_as(&s, "reader-key", "/v1/tools?format=anthropic").await;
    only_search(names(&anthropic["tools"], &["name"]), "anthropic");
    let (_, gemini) = get_as(&s, "reader-key", "/v1/tools?format=gemini").await;
    only_search(
        names(&gemini["tools"][0]["functionDeclarations"], &["name"]),
        "gemini",
    );
    let (_, mcp_manifest) = get_as(&s, "reader-key", "/v1/tools?format=mcp").await;
    only_search(names(&mcp_manifest["tools"], &["name"]), "mcp manifest");
    let (status, one) = get_as(&s, "reader-key", "/v1/tools/book_flight").await;
    assert_eq!(status, 403, "{one:#}");
    let mcp = Mcp::start(&s, "reader-key").await;
    let listed = mcp.rpc("tools/list", json!({})).await;
    only_search(
        names(&listed["result"]["tools"], &["name"]),
        "MCP tools/list",
    );
    let instructions = mcp.instructions.clone();
    let (_, guidance) = get_as(&s, "reader-key", "/v1/prompts/agent-guidance").await;
    let guidance = guidance["guidance"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for text in [&guidance, &instructions] {
        assert!(
            text.contains("unavailable"),
            "the general advice stays: {text}"
        );
        assert!(
            !text.contains("book_flight") && !text.contains("price_flight_offer"),
            "{text}"
        );
    }
    // A client with every tool reads the whole guidance.
    let (_, full) = get_as(&s, "pricer-key", "/v1/prompts/agent-guidance").await;
    assert!(
        full["guidance"]
            .as_str()
            .is_some_and(|g| g.contains("price_flight_offer")),
        "{full:#}"
    );
}

/// The OpenAPI document and the breaker API show a client only its tools too (a probe found
/// every tool's schemas, the `{tool}` enum and every breaker there with the reader's key):
/// the reader reads only the search tools' components and breakers, Duffel's breaker that
/// every tool shares naming only the search tools; the admin key reads everything.
#[tokio::test]
async fn the_openapi_document_and_the_breakers_show_a_client_only_its_tools() {
    let s = Stack::builder(52)
        .env(MapEnv(vec![("FAREGATE_ADMIN_KEY", "admin-key")]))
        .config(|c| {
            let mut c = with_clients(c);
            c.breakers
                .by_provider
                .insert("duffel".into(), faregate::breaker::BreakerScope::Provider);
            c
        })
        .start()
        .await;
    let search = ["search_flights", "search_hotels"];
    let tool_enum = |doc: &Value| -> Vec<String> {
        let call = &doc["paths"]["/v1/tools/{tool}/call"]["post"];
        names(&call["parameters"][0]["schema"]["enum"], &[])
    };
    let components = |doc: &Value| -> Vec<String> {
        doc["components"]["schemas"]
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .filter(|k| k.ends_with(".arguments") || k.ends_with(".data"))
            .cloned()
            .collect()
    };

    let (status, doc) = get_as(&s, "reader-key", "/openapi.json").await;
    assert_eq!(status, 200, "{doc:#}");
    assert_eq!(
        tool_enum(&doc),
        search,
        "{:#}",
        doc["paths"]["/v1/tools/{tool}/call"]
    );
    let mut expected: Vec<String> = search
        .iter()
        .flat_map(|t| [format!("{t}.arguments"), format!("{t}.data")])
        .collect();
    expected.sort();
    assert_eq!(components(&doc), expected);
    let (_, all) = get_as(&s, "admin-key", "/openapi.json").await;
    assert!(
        tool_enum(&all).contains(&"book_flight".to_string()),
        "{all:#}"
    );
    assert!(components(&all).contains(&"book_flight.arguments".to_string()));

    let (status, listed) = get_as(&s, "reader-key", "/v1/breakers").await;
    assert_eq!(status, 200, "{listed:#}");
    let breakers = listed["breakers"].as_array().cloned().unwrap_or_default();
    assert!(!breakers.is_empty(), "{listed:#}");
    for breaker in &breakers {
        let tools = names(&breaker["tools"], &[]);
        assert!(
            !tools.is_empty() && tools.iter().all(|t| search.contains(&t.as_str())),
            "{breaker:#}"
        );
    }
    let shared = breakers.iter().find(|b| b["key"] == "*.duffel");
    assert_eq!(
        shared.map(|b| names(&b["tools"], &[])),
        Some(search.map(String::from).to_vec()),
        "{listed:#}"
    );
    assert!(
        breakers
            .iter()
            .all(|b| b["key"] != "price_flight_offer.amadeus"),
        "{listed:#}"
    );
    let per_tool = names(&listed["tools"], &["tool"]);
    assert_eq!(per_tool, search, "{listed:#}");
    for hidden in [
        "price_flight_offer.amadeus",
        "book_flight.duffel",
        "track_flight.flightaware",
    ] {
        let (status, body) = get_as(&s, "reader-key", &format!("/v1/breakers/{hidden}")).await;
        assert_eq!(status, 404, "{hidden}: {body:#}");
        let known = names(&body["known_breakers"], &[]);
        assert!(known.contains(&"*.duffel".to_string()), "{body:#}");
        assert!(
            !known.iter().any(|k| k.starts_with("price_flight_offer")),
            "{body:#}"
        );
    }
    let (status, one) = get_as(&s, "reader-key", "/v1/breakers/search_flights.duffel").await;
    assert_eq!(status, 200, "{one:#}");
    assert_eq!(names(&one["tools"], &[]), search, "{one:#}");

    let (_, everything) = get_as(&s, "admin-key", "/v1/breakers").await;
    let shared = everything["breakers"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["key"] == "*.duffel"))
        .map(|b| names(&b["tools"], &[]))
        .unwrap_or_default();
    assert!(
        shared.contains(&"book_flight".to_string()),
        "{everything:#}"
    );
    assert!(
        names(&everything["tools"], &["tool"]).contains(&"price_flight_offer".to_string()),
        "{everything:#}"
    );
}

/// The fallback names, among the tools that work now, only those the caller may call: another
/// client's would show it tools outside its scope and send its model to a 403.
#[tokio::test]
async fn a_fallback_names_only_the_callers_tools_among_those_that_work() {
    let s = stack().await;
    s.down(RouteGroup::DuffelStays);
    s.down(RouteGroup::AmadeusHotels);
    let body = json!({"arguments": hotels_args()});
    let work_now = |answer: &Value| -> Vec<String> {
        let text = answer["content"].as_str().unwrap_or_default();
        let listed = text
            .split("Tools that work now: ")
            .nth(1)
            .unwrap_or_default()
            .trim_end_matches(['.', '\n']);
        listed.split(", ").map(str::to_string).collect()
    };
    let (status, reader) = post_as(
        &s,
        "reader-key",
        "/v1/tools/search_hotels/call",
        body.clone(),
    )
    .await;
    assert_eq!(
        (status, reader["status"].as_str()),
        (200, Some("unavailable")),
        "{reader:#}"
    );
    assert_eq!(work_now(&reader), ["search_flights"], "{reader:#}");
    let (_, pricer) = post_as(&s, "pricer-key", "/v1/tools/search_hotels/call", body).await;
    let listed = work_now(&pricer);
    assert!(
        listed.contains(&"price_flight_offer".to_string()),
        "{pricer:#}"
    );
    assert!(!listed.iter().any(|t| t.starts_with("book_")), "{pricer:#}");
}
