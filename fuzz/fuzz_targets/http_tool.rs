//! Tools from configuration: the request builder and the result mapping of
//! `faregate::http_tool::Operation`, for a flight-status tool shaped like a public
//! flight-tracking API (`GET /flights/{ident}`, kept fields by JSONPath, a content template).
//!
//! The first byte picks the half. Even: the rest is the `ident` argument (as lossy UTF-8, so
//! every byte sequence is tried) and, after a NUL, a JSON value for `max_pages`; the request's
//! URL must keep the configured scheme, host and port, stay one segment under the configured
//! path, and carry no fragment. Odd: the second byte picks the HTTP status and the rest is the
//! answer's body; reading it never panics, an answer keeps exactly the configured fields and has
//! a text, and a failure is never classified as an answer.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use faregate::http_tool::{Class, DEFAULT_REJECTED, Method, Operation, OperationDef, Waits};
use libfuzzer_sys::fuzz_target;
use reqwest::Url;
use serde_json::{Value, json};

const STATUSES: [u16; 12] = [200, 201, 204, 400, 401, 403, 404, 409, 422, 429, 500, 503];

fn operation() -> &'static (Operation, Url) {
    static OP: OnceLock<(Operation, Url)> = OnceLock::new();
    OP.get_or_init(|| {
        let def = OperationDef {
            write: false,
            method: Method::Get,
            path: "/flights/{ident}".into(),
            query: vec![("max_pages".into(), "max_pages".into())],
            body: Vec::new(),
            idempotency_header: None,
            keep: vec![
                ("ident".into(), "$.flights[0].ident".into()),
                ("status".into(), "$.flights[0].status".into()),
                ("gates".into(), "$.flights[*].gate_origin".into()),
            ],
            content: "{{ ident }} is {{ status }}{% if gates %} (gates {{ gates | join(', ') }}){% endif %}.".into(),
            rejected: DEFAULT_REJECTED.to_vec(),
            message: Some("$.detail".into()),
        };
        let input = json!({"type": "object", "required": ["ident"],
            "properties": {"ident": {"type": "string"}, "max_pages": {"type": "integer"}}});
        let op = Operation::compile(&def, &input, None).unwrap_or_else(|p| panic!("{p:?}"));
        let base = Url::parse("https://api.example.com:8443/aeroapi/").unwrap_or_else(|e| panic!("{e}"));
        (op, base)
    })
}

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    let (op, base) = operation();
    if pick & 1 == 0 {
        let (ident, pages) = match rest.iter().position(|b| *b == 0) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        let mut arguments = json!({"ident": String::from_utf8_lossy(ident)});
        if let Ok(pages) = serde_json::from_slice::<Value>(pages) {
            arguments["max_pages"] = pages;
        }
        let Ok(out) = op.request(&arguments, None) else {
            return;
        };
        let url = out.url(base);
        assert_eq!(url.scheme(), "https");
        assert_eq!(url.host_str(), Some("api.example.com"), "{url}");
        assert_eq!(url.port(), Some(8443), "{url}");
        assert_eq!(url.fragment(), None, "{url}");
        let segments: Vec<&str> = url
            .path_segments()
            .map(Iterator::collect)
            .unwrap_or_default();
        assert_eq!(segments.len(), 3, "{url}");
        assert_eq!(&segments[..2], ["aeroapi", "flights"], "{url}");
        assert!(!matches!(segments[2], "" | "." | ".."), "{url}");
        if let Some(query) = url.query() {
            assert!(query.starts_with("max_pages="), "{url}");
            assert!(!query.contains('&'), "{url}");
        }
    } else {
        let [status, body @ ..] = rest else {
            return;
        };
        let status = STATUSES[usize::from(*status) % STATUSES.len()];
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let waits = Waits {
            retry_after: Some("7"),
            ratelimit_reset: None,
        };
        match op.read(status, waits, body, now) {
            Ok(kept) => {
                assert!((200..300).contains(&status));
                let fields: Vec<&String> = kept
                    .data
                    .as_object()
                    .map(|o| o.keys().collect())
                    .unwrap_or_default();
                assert_eq!(fields.len(), 3, "{}", kept.data);
                assert!(kept.data["gates"].is_array(), "{}", kept.data);
                assert!(!kept.content.is_empty());
            }
            Err(class) => assert!(!matches!(class, Class::Answer(_)), "{class:?}"),
        }
    }
});
