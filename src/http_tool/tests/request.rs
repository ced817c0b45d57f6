//! The request half of an `http` tool: the URL (path parameters, fixed path text, query
//! parameters, joined lists), the body with its media type and a write's idempotency key, and
//! the arguments no request can carry, on the flight-status operation of `tests.rs`.

use serde_json::json;

use super::*;

#[test]
fn path_parameters_are_one_encoded_segment_under_the_base_path() {
    let cases = [
        ("BAW117", "/aeroapi/flights/BAW117"),
        ("x?admin=1#frag", "/aeroapi/flights/x%3Fadmin%3D1%23frag"),
        ("%2e%2e", "/aeroapi/flights/%252e%252e"),
        ("Zürich ✈", "/aeroapi/flights/Z%C3%BCrich%20%E2%9C%88"),
        ("@evil.example.com", "/aeroapi/flights/%40evil.example.com"),
    ];
    for (ident, path) in cases {
        let url = url_for(json!({"ident": ident}));
        assert_eq!(url.host_str(), Some("api.example.com"), "{ident}");
        assert_eq!(url.path(), path, "{ident}");
        assert_eq!(url.query(), None, "{ident}");
        assert_eq!(url.fragment(), None, "{ident}");
    }
}

/// A value that would read as several segments, or as a step out of the path, is refused: a
/// proxy before the provider that decodes before routing would follow an encoded `/` or `\`.
#[test]
fn dot_segments_empty_values_and_separators_are_refused() {
    for ident in [".", "..", "", "a/b", "../../admin", "\\..\\", "a\\b"] {
        let refused = operation().request(&json!({"ident": ident}), None);
        let (field, why) = refused
            .err()
            .unwrap_or_else(|| panic!("{ident:?} accepted"));
        assert_eq!(field, "ident");
        assert!(why.contains("segment"), "{why}");
    }
}

#[test]
fn fixed_path_text_goes_as_written_and_only_parameters_are_encoded() {
    let base = Url::parse("https://api.example.com/api").unwrap_or_else(|e| panic!("{e}"));
    for (template, path) in [
        ("/v1/items:search", "/api/v1/items:search"),
        ("/v1/{ident}:cancel", "/api/v1/a%3Ab:cancel"),
        ("/v1/a%20b/@me;v=2", "/api/v1/a%20b/@me;v=2"),
    ] {
        let def = OperationDef {
            path: template.into(),
            ..def()
        };
        let op =
            Operation::compile(&def, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
        let out = op
            .request(&json!({"ident": "a:b"}), None)
            .unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(out.url(&base).path(), path, "{template}");
    }
    for (template, says) in [
        ("/v1/items search", "' '"),
        ("/v1/caf\u{e9}", "'\u{e9}'"),
        ("/v1/100%", "a literal % as %25"),
        ("/v1/items?x=1", "[request.query]"),
        ("/v1/a#b", "[request.query]"),
        ("/v1/a\\b", "'\\\\'"),
    ] {
        let def = OperationDef {
            path: template.into(),
            ..def()
        };
        let problems = Operation::compile(&def, &input_schema(), None)
            .err()
            .unwrap_or_else(|| panic!("{template} accepted"));
        assert!(
            problems
                .iter()
                .any(|p| p.key == "request.path" && p.message.contains(says)),
            "{template}: {problems:?}"
        );
    }
}

#[test]
fn arguments_no_request_can_carry_are_named_before_sending() {
    let op = operation();
    for (arguments, field) in [
        (json!({"ident": ".."}), "ident"),
        (json!({"ident": ""}), "ident"),
        (
            json!({"ident": "BAW117", "airlines": [{"code": "BA"}]}),
            "airlines",
        ),
    ] {
        let (named, why) = op
            .check_arguments(&arguments)
            .err()
            .unwrap_or_else(|| panic!("{arguments} accepted"));
        assert_eq!(named, field, "{why}");
    }
    let fine = json!({"ident": "BAW117", "airlines": ["BA"], "max_pages": 2});
    assert_eq!(op.check_arguments(&fine), Ok(()));
}

#[test]
fn query_parameters_come_from_named_arguments_and_are_encoded() {
    let url = url_for(json!({"ident": "BAW117", "max_pages": 2, "airlines": ["BA", "A&B=C"]}));
    assert_eq!(
        url.query(),
        Some("max_pages=2&airline=BA&airline=A%26B%3DC")
    );
    let url = url_for(json!({"ident": "BAW117"}));
    assert_eq!(url.query(), None, "an absent argument sends no parameter");
}

#[test]
fn a_write_sends_its_body_and_its_idempotency_key() {
    let def = OperationDef {
        write: true,
        method: Method::Post,
        path: "/alerts".into(),
        query: Vec::new(),
        body: vec![
            ("ident".into(), "ident".into()),
            ("comment".into(), "note".into()),
        ],
        idempotency_header: Some("Idempotency-Key".into()),
        keep: vec![("id".into(), "$.id".into())],
        content: "Alert {{ id }} set.".into(),
        ..def()
    };
    let op = Operation::compile(&def, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    let out = op
        .request(&json!({"ident": "BAW117"}), Some("key-1"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(out.body, Some(json!({"ident": "BAW117"})));
    assert_eq!(
        out.idempotency,
        Some(("Idempotency-Key".into(), "key-1".into()))
    );
    let missing = op.request(&json!({"ident": "BAW117"}), None);
    assert!(missing.is_err());
}

/// `[request] content_type` names the body's JSON media type (a vendor's `+json` type), sent
/// only with a body; anything but a JSON type, or on a method without a body, is refused.
#[test]
fn a_body_goes_with_the_json_media_type_the_tool_names() {
    let post = OperationDef {
        write: true,
        method: Method::Post,
        idempotency_header: Some("Idempotency-Key".into()),
        content_type: Some("application/vnd.amadeus+json".into()),
        ..def()
    };
    let op = Operation::compile(&post, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    let out = op
        .request(&json!({"ident": "BA1"}), Some("k"))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        out.content_type.as_deref(),
        Some("application/vnd.amadeus+json")
    );
    for (def, says) in [
        (
            OperationDef {
                content_type: Some("text/plain".into()),
                ..post.clone()
            },
            "not a JSON media type",
        ),
        (
            OperationDef {
                content_type: Some("application/json".into()),
                ..def()
            },
            "carries no body",
        ),
    ] {
        let problems = Operation::compile(&def, &input_schema(), None)
            .err()
            .unwrap_or_else(|| panic!("{def:?} accepted"));
        assert!(
            problems
                .iter()
                .any(|p| p.key == "request.content_type" && p.message.contains(says)),
            "{problems:?}"
        );
    }
}

/// A query parameter from an object argument (or a list of objects) could never be sent: every
/// call would be refused, so the configuration is, naming the parameter.
#[test]
fn a_query_parameter_from_an_object_argument_is_a_configuration_error() {
    let schema = json!({
        "type": "object",
        "required": ["ident"],
        "properties": {
            "ident": {"type": "string"},
            "filter": {"type": ["object", "null"]},
            "pairs": {"type": "array", "items": {"type": "array"}},
            "codes": {"type": "array", "items": {"type": "string"}},
            "loose": {}
        }
    });
    let query = |argument: &str| OperationDef {
        query: vec![("q".into(), argument.into())],
        ..def()
    };
    for refused in ["filter", "pairs"] {
        let problems = Operation::compile(&query(refused), &schema, None)
            .err()
            .unwrap_or_else(|| panic!("{refused} accepted"));
        assert!(
            problems.iter().any(|p| p.key == "request.query.q"
                && p.message.contains(&format!("\"{refused}\" is an object"))
                && p.message.contains("[request.body]")),
            "{problems:?}"
        );
    }
    for fine in ["ident", "codes", "loose"] {
        assert!(
            Operation::compile(&query(fine), &schema, None).is_ok(),
            "{fine} refused"
        );
    }
}

/// `join` sends a list argument as one value of the parameter, its items joined; only OpenAPI's
/// three separators, and only for a parameter the request sends.
#[test]
fn a_joined_query_parameter_is_one_value() {
    let joined = OperationDef {
        query_join: vec![("airline".into(), ",".into())],
        ..def()
    };
    let op = Operation::compile(&joined, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
    let out = op
        .request(&json!({"ident": "BA1", "airlines": ["BA", "IB"]}), None)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        out.query,
        vec![("airline".to_string(), "BA,IB".to_string())]
    );
    // Each item is encoded and the separator is not, as OpenAPI's `explode: false` sends it: an
    // item holding the separator stays one item at the provider.
    let base = Url::parse("https://api.example.com/v1/?tenant=a").unwrap_or_else(|e| panic!("{e}"));
    for (separator, items, query) in [
        (",", json!(["B,A", "IB"]), "tenant=a&airline=B%2CA,IB"),
        (",", json!(["BA", "IB", "AA"]), "tenant=a&airline=BA,IB,AA"),
        (" ", json!(["B A", "IB"]), "tenant=a&airline=B%20A%20IB"),
        ("|", json!(["B|A", "IB"]), "tenant=a&airline=B%7CA|IB"),
    ] {
        let joined = OperationDef {
            query_join: vec![("airline".into(), separator.into())],
            ..def()
        };
        let op =
            Operation::compile(&joined, &input_schema(), None).unwrap_or_else(|p| panic!("{p:?}"));
        let url = op
            .request(&json!({"ident": "BA1", "airlines": items}), None)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .url(&base);
        assert_eq!(url.query(), Some(query), "{separator:?}");
    }
    let bad = OperationDef {
        query_join: vec![("airline".into(), ";".into()), ("page".into(), ",".into())],
        ..def()
    };
    let problems = Operation::compile(&bad, &input_schema(), None)
        .err()
        .unwrap_or_else(|| panic!("compiled"));
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        ["request.query.airline.join", "request.query.page.join"],
        "{problems:?}"
    );
}
