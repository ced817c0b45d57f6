//! Tools from configuration: the request builder and the result mapping of
//! `faregate::http_tool::Operation`, for a flight-status tool shaped like a public
//! flight-tracking API (`GET /flights/{ident}`, kept fields by JSONPath, a content template),
//! and of `faregate::http_tool::Binding`, the same API bound to the built-in `get_flight_status`
//! (its answer mapped field by field into the tool's typed output, with an argument quoted into
//! a JSONPath filter).
//!
//! The first byte picks the part (its value modulo 4):
//! - 0, the tool's request: the rest is the `ident` argument (as lossy UTF-8, so every byte
//!   sequence is tried) and, after a NUL, a JSON value for `max_pages`; the request's URL must
//!   keep the configured scheme, host and port, stay one segment under the configured path,
//!   carry no fragment, and carry exactly `max_pages` once per value given (one per item of
//!   an array), each value as it was given;
//! - 1, the tool's answer: the second byte picks the HTTP status and the rest is the answer's
//!   body; reading it never panics, an answer keeps exactly the configured fields and has a
//!   text, and a failure is never classified as an answer;
//! - 2, the binding's request: the rest is `carrier_code`, NUL, `flight_number`; the URL keeps
//!   the configured host and stays one segment under the configured path;
//! - 3, the binding's answer: the second byte picks the status, the rest is `departure_date`
//!   (quoted into the filter that picks the flight), NUL, the answer's body; a result fits the
//!   tool's output schema and every flight in it carries the date asked, and a failure is never
//!   classified as an answer.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use faregate::http_tool::{
    Answered, Binding, BindingDef, Class, DEFAULT_REJECTED, Method, Operation, OperationDef, Waits,
};
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
            query_join: Vec::new(),
            body: Vec::new(),
            content_type: None,
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

/// `get_flight_status` bound to the flight-tracking API, as the shipped tool file binds it.
fn binding() -> &'static (Binding, Url) {
    static BINDING: OnceLock<(Binding, Url)> = OnceLock::new();
    BINDING.get_or_init(|| {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
        };
        let def = BindingDef {
            method: Method::Get,
            path: "/flights/{carrier_code}{flight_number}".into(),
            query: Vec::new(),
            result: pairs(&[
                ("flights[]", "$.flights[?@.scheduled_out >= '{departure_date}T00:00:00Z' && @.scheduled_out <= '{departure_date}T23:59:59Z']"),
                ("flights[].carrier_code", "@.operator_iata"),
                ("flights[].flight_number", "@.flight_number"),
                ("flights[].scheduled_departure_date", "{departure_date}"),
                ("flights[].points[0].airport", "@.origin.code_iata"),
                ("flights[].points[0].departure.scheduled", "@.scheduled_out"),
                ("flights[].points[0].departure.latest", "@.estimated_out"),
                ("flights[].points[0].departure.terminal", "@.terminal_origin"),
                ("flights[].points[0].departure.gate", "@.gate_origin"),
                ("flights[].points[1].airport", "@.destination.code_iata"),
                ("flights[].points[1].arrival.scheduled", "@.scheduled_in"),
                ("flights[].points[1].arrival.latest", "@.estimated_in"),
                ("flights[].points[1].arrival.terminal", "@.terminal_destination"),
                ("flights[].points[1].arrival.gate", "@.gate_destination"),
            ]),
            rejected: vec![400, 404],
            message: Some("$.detail".into()),
            empty: Some("nothing that day".into()),
        };
        let spec = faregate::tools::spec("get_flight_status").unwrap_or_else(|| panic!("no tool"));
        let bound = Binding::compile(&def, &spec.input_schema(), &spec.output_schema())
            .unwrap_or_else(|p| panic!("{p:?}"));
        let base = Url::parse("https://aeroapi.example.com/aeroapi").unwrap_or_else(|e| panic!("{e}"));
        (bound, base)
    })
}

/// `bytes` split at its first NUL (all of it and nothing when it has none).
fn split_nul(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|b| *b == 0) {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &[][..]),
    }
}

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn waits() -> Waits<'static> {
    Waits {
        retry_after: Some("7"),
        ratelimit_reset: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    match pick % 4 {
        0 => tool_request(rest),
        1 => tool_answer(rest),
        2 => binding_request(rest),
        _ => binding_answer(rest),
    }
});

fn tool_request(rest: &[u8]) {
    let (op, base) = operation();
    let (ident, pages) = split_nul(rest);
    let mut arguments = json!({"ident": String::from_utf8_lossy(ident)});
    if let Ok(pages) = serde_json::from_slice::<Value>(pages) {
        arguments["max_pages"] = pages;
    }
    let Ok(out) = op.request(&arguments, None) else {
        return;
    };
    let url = out.url(base);
    assert_one_segment_under(&url, "api.example.com", Some(8443));
    // Exactly the pairs the argument asks for: `max_pages` once per value (an array is sent as
    // one pair per item, `Request::build`), each value read back as it was given, so no
    // value, whatever its bytes, adds or changes a parameter.
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let expected: Vec<(String, String)> = match &arguments["max_pages"] {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .map(|v| ("max_pages".into(), text(v)))
            .collect(),
        value => vec![("max_pages".into(), text(value))],
    };
    let sent: Vec<(String, String)> = url
        .query_pairs()
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect();
    assert_eq!(sent, expected, "{url}");
}

fn tool_answer(rest: &[u8]) {
    let (op, _) = operation();
    let [status, body @ ..] = rest else {
        return;
    };
    let status = STATUSES[usize::from(*status) % STATUSES.len()];
    match op.read(status, waits(), body, now()) {
        // The operation is a read: only a write's success may come without a body.
        Ok(Answered::Done { .. }) => panic!("a read answered done without a body"),
        Ok(Answered::Kept(kept)) => {
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

fn binding_request(rest: &[u8]) {
    let (bound, base) = binding();
    let (carrier, number) = split_nul(rest);
    let arguments = json!({
        "carrier_code": String::from_utf8_lossy(carrier),
        "flight_number": String::from_utf8_lossy(number),
        "departure_date": "2027-03-01",
    });
    let Ok(out) = bound.request(&arguments) else {
        return;
    };
    let url = out.url(base);
    assert_one_segment_under(&url, "aeroapi.example.com", None);
    assert_eq!(url.query(), None, "{url}");
}

/// `url` keeps the configured https `host` and `port`, has no fragment, and is exactly one
/// segment (never empty, `.` or `..`) under `/aeroapi/flights`: no argument reaches the host
/// or climbs out of the configured path.
fn assert_one_segment_under(url: &Url, host: &str, port: Option<u16>) {
    assert_eq!(url.scheme(), "https");
    assert_eq!(url.host_str(), Some(host), "{url}");
    assert_eq!(url.port(), port, "{url}");
    assert_eq!(url.fragment(), None, "{url}");
    let segments: Vec<&str> = url
        .path_segments()
        .map(Iterator::collect)
        .unwrap_or_default();
    assert_eq!(segments.len(), 3, "{url}");
    assert_eq!(&segments[..2], ["aeroapi", "flights"], "{url}");
    assert!(!matches!(segments[2], "" | "." | ".."), "{url}");
}

fn binding_answer(rest: &[u8]) {
    let (bound, _) = binding();
    let [status, rest @ ..] = rest else {
        return;
    };
    let status = STATUSES[usize::from(*status) % STATUSES.len()];
    let (date, body) = split_nul(rest);
    let date = String::from_utf8_lossy(date);
    let arguments = json!({"carrier_code": "BA", "flight_number": "117", "departure_date": date});
    match bound.read((status, waits(), body), now(), &arguments) {
        Ok(data) => {
            assert!((200..300).contains(&status));
            let flights = data["flights"].as_array();
            assert!(flights.is_some_and(|f| !f.is_empty()), "{data}");
            for flight in flights.into_iter().flatten() {
                assert_eq!(flight["scheduled_departure_date"], *date, "{data}");
            }
        }
        Err(class) => assert!(!matches!(class, Class::Answer(_)), "{class:?}"),
    }
}
