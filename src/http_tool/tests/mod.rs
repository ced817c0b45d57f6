//! The result mapping and the classification table, on a flight-status operation shaped like
//! a public flight-tracking API (`GET /flights/{ident}`); the request half is in `request.rs`.

use std::time::{Duration, SystemTime};

use reqwest::Url;
use serde_json::{Value, json};

use super::*;

mod request;

fn input_schema() -> Value {
    json!({
        "type": "object",
        "required": ["ident"],
        "properties": {
            "ident": {"type": "string"},
            "max_pages": {"type": "integer"},
            "airlines": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"}
        }
    })
}

fn def() -> OperationDef {
    OperationDef {
        write: false,
        method: Method::Get,
        path: "/flights/{ident}".into(),
        query: vec![
            ("max_pages".into(), "max_pages".into()),
            ("airline".into(), "airlines".into()),
        ],
        query_join: Vec::new(),
        body: Vec::new(),
        content_type: None,
        idempotency_header: None,
        keep: vec![
            ("ident".into(), "$.flights[0].ident".into()),
            ("status".into(), "$.flights[0].status".into()),
            ("gates".into(), "$.flights[*].gate_origin".into()),
        ],
        content:
            "{{ ident }} is {{ status }}{% if gates %} (gates {{ gates | join(', ') }}){% endif %}."
                .into(),
        rejected: DEFAULT_REJECTED.to_vec(),
        message: Some("$.detail".into()),
    }
}

fn operation() -> Operation {
    Operation::compile(&def(), &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"))
}

fn url_for(arguments: Value) -> Url {
    let base = Url::parse("https://api.example.com/aeroapi/").unwrap_or_else(|e| panic!("{e}"));
    operation()
        .request(&arguments, None)
        .unwrap_or_else(|e| panic!("{e:?}"))
        .url(&base)
}

#[test]
fn booleans_in_the_content_read_as_in_the_data() {
    let def = OperationDef {
        keep: vec![
            ("ident".into(), "$.ident".into()),
            ("delayed".into(), "$.delayed".into()),
        ],
        content: "{{ ident }} delayed: {{ delayed }}{% if not delayed %} (on time){% endif %}."
            .into(),
        ..def()
    };
    let op = Operation::compile(&def, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    for (delayed, says) in [
        (true, "BA1 delayed: true."),
        (false, "BA1 delayed: false (on time)."),
    ] {
        let kept = op
            .keep_from(&json!({"ident": "BA1", "delayed": delayed}))
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(kept.data["delayed"], json!(delayed));
        assert_eq!(kept.content, says);
    }
}

/// A list or an object printed whole reads as the call's JSON `data` shows it, booleans and
/// nulls included; a string, printed alone or in a loop, reads as text.
#[test]
fn lists_objects_and_nulls_in_the_content_read_as_in_the_data() {
    let def = OperationDef {
        keep: vec![
            ("flags".into(), "$.flags".into()),
            ("gates".into(), "$.gates".into()),
            ("names".into(), "$.names".into()),
            ("gate".into(), "$.gate".into()),
        ],
        content: "{{ flags }} | {% for g in gates %}{{ g }};{% endfor %} | {% for n in names %}{{ n }} {% endfor %}| {{ gates[0].open }} {{ gate }}"
            .into(),
        ..def()
    };
    let op = Operation::compile(&def, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    let kept = op
        .keep_from(&json!({
            "flags": [true, false, null, 2, "x"],
            "gates": [{"name": "A10", "open": true}, {"name": "B2", "open": false, "note": null}],
            "names": ["Heathrow", "It's \"T5\""],
            "gate": null
        }))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        kept.content,
        r#"[true,false,null,2,"x"] | {"name":"A10","open":true};{"name":"B2","note":null,"open":false}; | Heathrow It's "T5" | true null"#
    );
}

/// A write's success with an empty body (204, or 201 with only a `Location`) is the write
/// carried out, with the kept fields empty; a read's is a malformed answer, and so is a write's
/// whose output schema leaves no room for the missing fields.
#[test]
fn an_empty_success_is_a_write_carried_out_and_a_malformed_read() {
    let now = SystemTime::UNIX_EPOCH;
    let write = OperationDef {
        write: true,
        method: Method::Post,
        path: "/alerts".into(),
        query: Vec::new(),
        idempotency_header: Some("Idempotency-Key".into()),
        keep: vec![
            ("id".into(), "$.id".into()),
            ("gates".into(), "$.gates[*]".into()),
        ],
        content: "Alert {{ id }} set.".into(),
        ..def()
    };
    let op = Operation::compile(&write, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    for (status, body) in [(204, &b""[..]), (201, b""), (200, b" \r\n")] {
        assert_eq!(
            op.read(status, Waits::default(), body, now),
            Ok(Answered::Done {
                status,
                data: json!({"id": null, "gates": []})
            })
        );
    }
    let kept = op.read(201, Waits::default(), br#"{"id": "A1"}"#, now);
    assert!(
        matches!(&kept, Ok(Answered::Kept(k)) if k.content == "Alert A1 set."),
        "{kept:?}"
    );
    let refused = op.read(404, Waits::default(), b"", now);
    assert!(
        matches!(refused, Err(Class::Rejected { .. })),
        "{refused:?}"
    );

    let strict = json!({"type": "object", "properties": {"id": {"type": "string"}}});
    let op = Operation::compile(&write, &input_schema(), Some(&strict))
        .unwrap_or_else(|p| panic!("{p:?}"));
    let no_room = op.read(204, Waits::default(), b"", now);
    assert!(
        matches!(&no_room, Err(Class::Malformed { detail }) if detail.contains("allow null")),
        "{no_room:?}"
    );

    let read = operation().read(204, Waits::default(), b"", now);
    assert!(
        matches!(&read, Err(Class::Malformed { detail }) if detail.contains("empty body")),
        "{read:?}"
    );
}

#[test]
fn the_result_keeps_the_configured_fields_and_writes_the_content() {
    let answer = json!({"flights": [
        {"ident": "BAW117", "status": "En Route", "gate_origin": "A10"},
        {"ident": "BAW117", "status": "Scheduled", "gate_origin": "B2"}
    ]});
    let kept = operation()
        .keep_from(&answer)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        kept.data,
        json!({"ident": "BAW117", "status": "En Route", "gates": ["A10", "B2"]})
    );
    assert_eq!(kept.content, "BAW117 is En Route (gates A10, B2).");
    // A singular path with nothing behind it is null; a list path is an empty list.
    let kept = operation()
        .keep_from(&json!({"flights": []}))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        kept.data,
        json!({"ident": null, "status": null, "gates": []})
    );
}

#[test]
fn a_result_outside_the_output_schema_is_malformed() {
    let output = json!({
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string"}}
    });
    let op = Operation::compile(&def(), &input_schema(), Some(&output))
        .unwrap_or_else(|p| panic!("{p:?}"));
    let wrong = op.keep_from(&json!({"flights": [{"ident": "X", "status": 7}]}));
    assert!(matches!(wrong, Err(Class::Malformed { .. })), "{wrong:?}");
}

/// The classification table: status, headers and body → what the gateway makes of them.
#[test]
fn classification_table() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let classify = Classify {
        rejected: DEFAULT_REJECTED.to_vec(),
        message: Some(JsonPath::parse("$.detail").unwrap_or_else(|e| panic!("{e}"))),
    };
    let none = Waits::default();
    let secs = |s| Some(Duration::from_secs(s));
    let http_date = httpdate::fmt_http_date(now + Duration::from_secs(90));
    let cases: Vec<(u16, Waits<'_>, &[u8], Class)> = vec![
        (200, none, br#"{"a":1}"#, Class::Answer(json!({"a": 1}))),
        (
            204,
            none,
            b"",
            Class::Malformed {
                detail: String::new(),
            },
        ),
        (
            200,
            none,
            b"<html>",
            Class::Malformed {
                detail: String::new(),
            },
        ),
        (
            404,
            none,
            br#"{"detail":"No flight BAW999 on that date"}"#,
            Class::Rejected {
                message: "No flight BAW999 on that date".into(),
            },
        ),
        (
            400,
            none,
            b"not json",
            Class::Rejected {
                message: "the provider refused the request (HTTP 400); check the arguments".into(),
            },
        ),
        (401, none, b"", Class::Misconfigured { status: 401 }),
        (403, none, b"", Class::Misconfigured { status: 403 }),
        (302, none, b"", Class::Misconfigured { status: 302 }),
        (405, none, b"", Class::Misconfigured { status: 405 }),
        (
            429,
            Waits {
                retry_after: Some("30"),
                ratelimit_reset: Some("5"),
            },
            b"",
            Class::RateLimited {
                retry_after: secs(30),
            },
        ),
        (
            429,
            Waits {
                retry_after: None,
                ratelimit_reset: Some("12"),
            },
            b"",
            Class::RateLimited {
                retry_after: secs(12),
            },
        ),
        (
            429,
            Waits {
                retry_after: None,
                ratelimit_reset: Some("1800000040"),
            },
            b"",
            Class::RateLimited {
                retry_after: secs(40),
            },
        ),
        (429, none, b"", Class::RateLimited { retry_after: None }),
        (
            503,
            Waits {
                retry_after: Some(&http_date),
                ratelimit_reset: None,
            },
            b"",
            Class::Server {
                status: 503,
                retry_after: secs(90),
            },
        ),
        (
            500,
            none,
            b"",
            Class::Server {
                status: 500,
                retry_after: None,
            },
        ),
    ];
    for (status, waits, body, expected) in cases {
        let got = classify.classify(status, waits, body, now);
        match (&got, &expected) {
            // Only the kind of a malformed answer matters here; its detail is for operators.
            (Class::Malformed { .. }, Class::Malformed { .. }) => {}
            _ => assert_eq!(got, expected, "HTTP {status}"),
        }
    }
}

#[test]
fn a_statuses_list_of_its_own_replaces_the_default() {
    let classify = Classify {
        rejected: vec![422],
        message: None,
    };
    let got = classify.classify(404, Waits::default(), b"", SystemTime::UNIX_EPOCH);
    assert_eq!(got, Class::Misconfigured { status: 404 });
}

#[test]
fn compile_reports_every_problem_with_its_key() {
    let bad = OperationDef {
        write: true,
        method: Method::Get,
        path: "/flights/{ident}/{leg}".into(),
        query: vec![("page".into(), "cursor".into())],
        query_join: Vec::new(),
        body: vec![("x".into(), "ident".into())],
        content_type: None,
        idempotency_header: None,
        keep: vec![
            ("status".into(), "$.flights[0.status".into()),
            ("ident".into(), "$.ident".into()),
        ],
        content: "{{ ident }} {{ gate }}".into(),
        rejected: vec![429, 500],
        message: Some("detail".into()),
    };
    let problems = Operation::compile(&bad, &input_schema(), None)
        .err()
        .unwrap_or_else(|| panic!("compiled"));
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    for key in [
        "request.path",
        "request.query.page",
        "request.body",
        "idempotency",
        "result.keep.status",
        "classify.rejected",
        "classify.message",
    ] {
        assert!(keys.contains(&key), "no problem at {key}: {problems:#?}");
    }
    let path = problems
        .iter()
        .find(|p| p.key == "request.path")
        .map(|p| &p.message);
    assert!(path.is_some_and(|m| m.contains("{leg}")), "{path:?}");
}

#[test]
fn a_template_naming_an_unknown_field_is_refused() {
    let def = OperationDef {
        content: "{{ ident }} leaves from gate {{ gate }}".into(),
        ..def()
    };
    let problems = Operation::compile(&def, &input_schema(), None)
        .err()
        .unwrap_or_else(|| panic!("compiled"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].key, "content");
    assert!(
        problems[0].message.contains("gate"),
        "{}",
        problems[0].message
    );
}

#[test]
fn a_path_parameter_that_is_optional_is_refused() {
    let def = OperationDef {
        path: "/flights/{note}".into(),
        ..def()
    };
    let problems = Operation::compile(&def, &input_schema(), None)
        .err()
        .unwrap_or_else(|| panic!("compiled"));
    assert!(problems[0].message.contains("required"), "{problems:?}");
}
