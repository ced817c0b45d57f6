//! The rows of the route table, in the order the OpenAPI document lists them (`row.rs` says
//! what a row means).

use axum::extract::State;
use axum::routing::on;
use axum::{Extension, Json};
use serde_json::{Value, json};

use super::openapi;
use super::row::{
    Answer, BREAKER_KEY, Guard, Handler, Operation, Param, ParamSchema, Place, Reply, Route,
    Schema, Security, TOOL, Verb, answer, error, op, route,
};
use crate::http::api::{agents, back_in_service, bookings, catalog, jobs, native, watches};
use crate::http::edge::Caller;
use crate::http::ops;
use crate::http::state::SharedState;
use Verb::{Delete, Get, Post};

const JOB_STORE: Answer = error(503, "The job store did not answer.");
const NO_JOB_STORE: Answer = error(501, "No job store.");
const NOT_JSON: Answer = error(
    415,
    "The body is declared as something other than JSON (with client keys off: anything but application/json).",
);
const CROSS_SITE: Answer = error(
    403,
    "With client keys off: a request the browser marks Sec-Fetch-Site: cross-site.",
);
const KEY: Answer = error(401, "Missing or wrong key.");
const WATCH_ID: &[Param] = &[Param {
    name: "watch_id",
    place: Place::Path,
    description: None,
    schema: ParamSchema::Text,
}];
const NOTICE_ID: &[Param] = &[Param {
    name: "notice_id",
    place: Place::Path,
    description: None,
    schema: ParamSchema::Text,
}];

/// Every route, in the order the document lists them.
pub(crate) const ROUTES: &[Route] = &[
    route(
        "/healthz",
        Guard::Open,
        &[Operation {
            security: Security::Open,
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::healthz)),
                "healthz",
                "Liveness.",
                &[answer(200, "Alive.", Reply::Json(Schema::Object))],
            )
        }],
    ),
    route(
        "/readyz",
        Guard::Open,
        &[Operation {
            security: Security::Open,
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::readyz)),
                "readyz",
                "Readiness: at least one tool is served.",
                &[
                    answer(200, "Ready.", Reply::Json(Schema::Object)),
                    answer(503, "No tool is served.", Reply::Json(Schema::Object)),
                ],
            )
        }],
    ),
    route(
        "/openapi.json",
        Guard::Client,
        &[op(
            Get,
            Handler::Axum(|m| on(m, openapi_json)),
            "openapi",
            "This document, with the tools the caller's key may call (every served tool for the admin key).",
            &[answer(
                200,
                "The OpenAPI 3.1 document.",
                Reply::Json(Schema::Object),
            )],
        )],
    ),
    route(
        "/v1/tools",
        Guard::Client,
        &[Operation {
            params: &[
                Param {
                    name: "format",
                    place: Place::Query,
                    description: None,
                    schema: ParamSchema::Inline(|| {
                        json!(
                {"type": "string", "enum": ["native", "openai", "anthropic", "mcp", "gemini"], "default": "native"})
                    }),
                },
                Param {
                    name: "available",
                    place: Place::Query,
                    description: Some("true: leave out tools whose breakers are all open."),
                    schema: ParamSchema::Inline(|| json!({"type": "boolean", "default": false})),
                },
            ],
            ..op(
                Get,
                Handler::Axum(|m| on(m, catalog::list)),
                "listTools",
                "The tool manifest, natively or ready to paste into an OpenAI, Anthropic, Gemini or MCP request.",
                &[
                    answer(
                        200,
                        "`{\"tools\": …}` in the format asked for.",
                        Reply::Json(Schema::Inline(
                            || json!({"type": "object", "required": ["tools"]}),
                        )),
                    ),
                    error(400, "Unknown format or parameter."),
                ],
            )
        }],
    ),
    route(
        "/v1/tools/{tool}",
        Guard::Client,
        &[Operation {
            params: &[TOOL],
            ..op(
                Get,
                Handler::Axum(|m| on(m, catalog::one)),
                "getTool",
                "One tool with its schemas, policy and providers.",
                &[
                    answer(200, "The tool.", Reply::Json(Schema::Object)),
                    error(400, "A tool name that is not UTF-8 once percent-decoded."),
                    error(404, "Unknown tool; the body lists the known ones."),
                ],
            )
        }],
    ),
    route(
        "/v1/tools/{tool}/call",
        Guard::Call,
        &[Operation {
            params: &[TOOL],
            body: Some(Schema::Ref("CallBody")),
            ..op(
                Post,
                Handler::Axum(|m| on(m, native::CallTool)),
                "callTool",
                "Run one tool call; the answer is a tool result envelope.",
                &[
                    answer(
                        200,
                        "ok, stale, unavailable or rejected.",
                        Reply::Json(Schema::Ref("Envelope")),
                    ),
                    answer(
                        202,
                        "queued: a background call was accepted (or its idempotency key named an existing job), or a booking was sent under the key of a background job of the same client and tool that has not ended (nothing was sent; that job is the booking); job_id set.",
                        Reply::Json(Schema::Ref("Envelope")),
                    ),
                    answer(
                        429,
                        "This client is over its request rate or its calls in flight ([limits]): an error saying which limit; or it already holds its share of this tool's concurrent calls ([limits] client_share_of_tool, while several clients call): an envelope, status rejected, limit client_share_of_tool; or it sent more than its fair part of the requests to the tool's providers while their rate-limit windows run low ([limits] provider_reserve, while several clients call): an envelope, status rejected, limit client_share_of_provider. Retry after Retry-After seconds.",
                        Reply::Json(Schema::Inline(
                            || json!({"oneOf": [{"$ref": "#/components/schemas/Envelope"}, {"$ref": "#/components/schemas/Error"}]}),
                        )),
                    ),
                    error(
                        400,
                        "Malformed JSON or body: syntax, nesting deeper than 128, duplicate keys, unknown fields, wrong types, unprintable call_id or idempotency_key, a callback_url without mode background; or a tool name that is not UTF-8 once percent-decoded.",
                    ),
                    error(404, "Unknown tool; the body lists the known ones."),
                    NOT_JSON,
                    CROSS_SITE,
                    answer(
                        422,
                        "invalid_arguments (an envelope naming each bad field), or a callback_url refused by the allowlist or the private-address check (an error naming the field).",
                        Reply::Json(Schema::Inline(
                            || json!({"oneOf": [{"$ref": "#/components/schemas/Envelope"}, {"$ref": "#/components/schemas/Error"}]}),
                        )),
                    ),
                    error(501, "mode background on a gateway without a job store."),
                    error(
                        503,
                        "The job store did not answer (the background call was not accepted), or the request took longer than [server] request_timeout.",
                    ),
                ],
            )
        }],
    ),
    route(
        "/v1/prompts/agent-guidance",
        Guard::Client,
        &[op(
            Get,
            Handler::Axum(|m| on(m, catalog::agent_guidance)),
            "agentGuidance",
            "A system-prompt fragment: how a model should treat each result status.",
            &[
                answer(
                    200,
                    "The guidance.",
                    Reply::Json(Schema::Inline(
                        || json!({"type": "object", "required": ["guidance"], "properties": {"guidance": {"type": "string"}}}),
                    )),
                ),
                error(404, "The prompts directory has no agent-guidance.md."),
            ],
        )],
    ),
    route(
        "/v1/jobs",
        Guard::Client,
        &[Operation {
            params: &[
                Param {
                    name: "status",
                    place: Place::Query,
                    description: None,
                    schema: ParamSchema::Inline(
                        || json!({"type": "string", "enum": ["queued", "running", "retry_scheduled", "succeeded", "dead", "cancelled"]}),
                    ),
                },
                Param {
                    name: "tool",
                    place: Place::Query,
                    description: None,
                    schema: ParamSchema::Text,
                },
                Param {
                    name: "origin",
                    place: Place::Query,
                    description: Some(
                        "calls (the default: the client's own background calls), watch_runs (the runs of its watches) or all.",
                    ),
                    schema: ParamSchema::Inline(
                        || json!({"type": "string", "enum": ["calls", "watch_runs", "all"]}),
                    ),
                },
                Param {
                    name: "limit",
                    place: Place::Query,
                    description: Some(
                        "At most this many jobs (default 100); 1 to 1000; any other value is refused (400).",
                    ),
                    schema: ParamSchema::Inline(
                        || json!({"type": "integer", "minimum": 1, "maximum": 1000}),
                    ),
                },
            ],
            ..op(
                Get,
                Handler::Axum(|m| on(m, jobs::list)),
                "listJobs",
                "The caller's background jobs, newest first; every client's with the admin key.",
                &[
                    answer(
                        200,
                        "The jobs.",
                        Reply::Json(Schema::Inline(
                            || json!({"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}}, "partial": {"type": "string", "description": "Present when the job store did not answer: only the jobs this replica holds in its spool or has seen are listed."}}}),
                        )),
                    ),
                    error(400, "Unknown status or query parameter."),
                    NO_JOB_STORE,
                    JOB_STORE,
                ],
            )
        }],
    ),
    route(
        "/v1/jobs/{job_id}",
        Guard::Client,
        &[
            Operation {
                params: &[Param {
                    name: "job_id",
                    place: Place::Path,
                    description: None,
                    schema: ParamSchema::Text,
                }],
                ..op(
                    Get,
                    Handler::Axum(|m| on(m, jobs::one)),
                    "getJob",
                    "One background job: status, attempts, next attempt, result envelope, last error.",
                    &[
                        answer(200, "The job.", Reply::Json(Schema::Ref("Job"))),
                        error(400, "A job id that is not UTF-8 once percent-decoded."),
                        error(404, "No such job, or another client's."),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
            Operation {
                params: &[Param {
                    name: "job_id",
                    place: Place::Path,
                    description: None,
                    schema: ParamSchema::Text,
                }],
                ..op(
                    Delete,
                    Handler::Axum(|m| on(m, jobs::cancel)),
                    "cancelJob",
                    "Cancel a background job that has not started (queued, or waiting for a retry): it never runs and sends no callback. A running job is never cancelled, since a booking may be under way at the provider.",
                    &[
                        answer(
                            200,
                            "The job, now cancelled.",
                            Reply::Json(Schema::Ref("Job")),
                        ),
                        error(400, "A job id that is not UTF-8 once percent-decoded."),
                        error(404, "No such job, or another client's."),
                        error(
                            409,
                            "The job is running (never cancelled mid-flight), has ended, or waits in a replica's spool.",
                        ),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
        ],
    ),
    route(
        "/v1/watches",
        Guard::Client,
        &[
            Operation {
                body: Some(Schema::Inline(|| {
                    json!({"type": "object", "required": ["tool", "every"], "additionalProperties": false, "properties": {
                        "tool": {"type": "string", "description": "A read-only tool in the caller's scope."},
                        "arguments": {"type": "object", "description": "The tool's arguments, checked as a call's are."},
                        "every": {"type": "string", "description": "The interval, e.g. \"15m\"; at least the tool's minimum ([watches] min_interval or its watch_min_interval), at most 30 days."},
                        "condition": {"type": "object", "required": ["kind"], "description": "What counts as news (default any_change): any_change; price_below {amount}; price_change {share}; status_changed, delay_over {minutes}, gate_changed (get_flight_status).", "properties": {"kind": {"type": "string", "enum": ["any_change", "price_below", "price_change", "status_changed", "delay_over", "gate_changed"]}, "amount": {"type": "number"}, "share": {"type": "number"}, "minutes": {"type": "integer", "minimum": 0}}},
                        "callback_url": {"type": "string", "format": "uri", "description": "Where each notice is POSTed, signed (Faregate-Signature) and allowlisted as a job's callback."},
                        "ends": {"type": "object", "additionalProperties": false, "properties": {"at": {"type": "string", "format": "date-time"}, "after_runs": {"type": "integer", "minimum": 1}, "at_departure": {"type": "boolean"}}}
                    }})
                })),
                ..op(
                    Post,
                    Handler::Axum(|m| on(m, watches::create)),
                    "createWatch",
                    "Watch a read-only tool: call it every interval as a background job, and write a notice only when a result meets the condition. The first run, at once, is the baseline.",
                    &[
                        answer(201, "The watch.", Reply::Json(Schema::Object)),
                        error(400, "Malformed JSON or body, or unknown fields."),
                        error(403, "A tool outside the client's scope."),
                        error(404, "No such tool."),
                        error(
                            409,
                            "The client holds [watches] max_active_per_client active watches.",
                        ),
                        error(
                            422,
                            "A write tool, an interval under the tool's minimum, a condition that does not fit the tool, invalid arguments, or an end that cannot be.",
                        ),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
            op(
                Get,
                Handler::Axum(|m| on(m, watches::list)),
                "listWatches",
                "The caller's watches, newest first; every client's with the admin key.",
                &[
                    answer(
                        200,
                        "The watches.",
                        Reply::Json(Schema::Inline(
                            || json!({"type": "object", "required": ["watches"], "properties": {"watches": {"type": "array", "items": {"type": "object"}}}}),
                        )),
                    ),
                    error(400, "A query string: the route takes none."),
                    NO_JOB_STORE,
                    JOB_STORE,
                ],
            ),
        ],
    ),
    route(
        "/v1/watches/{watch_id}",
        Guard::Client,
        &[
            Operation {
                params: WATCH_ID,
                ..op(
                    Get,
                    Handler::Axum(|m| on(m, watches::one)),
                    "getWatch",
                    "One watch: state, schedule, last result, next run, and its notices (newest first).",
                    &[
                        answer(200, "The watch.", Reply::Json(Schema::Object)),
                        error(404, "No such watch, or another client's."),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
            Operation {
                params: WATCH_ID,
                ..op(
                    Delete,
                    Handler::Axum(|m| on(m, watches::delete)),
                    "deleteWatch",
                    "Delete a watch and its notices.",
                    &[
                        answer(204, "Deleted.", Reply::Nothing),
                        error(404, "No such watch, or another client's."),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
        ],
    ),
    route(
        "/v1/watches/{watch_id}/pause",
        Guard::Client,
        &[Operation {
            params: WATCH_ID,
            ..op(
                Post,
                Handler::Axum(|m| on(m, watches::pause)),
                "pauseWatch",
                "Stop a watch's schedule (a run under way still ends and is recorded).",
                &[
                    answer(200, "The watch.", Reply::Json(Schema::Object)),
                    error(404, "No such watch, or another client's."),
                    error(409, "The watch is not active."),
                    NO_JOB_STORE,
                    JOB_STORE,
                ],
            )
        }],
    ),
    route(
        "/v1/watches/{watch_id}/resume",
        Guard::Client,
        &[Operation {
            params: WATCH_ID,
            ..op(
                Post,
                Handler::Axum(|m| on(m, watches::resume)),
                "resumeWatch",
                "Restart a paused watch at its next instant that is not in the past.",
                &[
                    answer(200, "The watch.", Reply::Json(Schema::Object)),
                    error(404, "No such watch, or another client's."),
                    error(
                        409,
                        "The watch is not paused, or the client holds its cap of active watches.",
                    ),
                    NO_JOB_STORE,
                    JOB_STORE,
                ],
            )
        }],
    ),
    route(
        "/v1/back-in-service",
        Guard::Client,
        &[
            Operation {
                body: Some(Schema::Inline(|| {
                    json!({"type": "object", "required": ["tool", "callback_url"], "additionalProperties": false, "properties": {
                        "tool": {"type": "string", "description": "A tool in the caller's scope."},
                        "callback_url": {"type": "string", "format": "uri", "description": "Where the notice is POSTed, signed (Faregate-Signature) and allowlisted as a job's callback, once the tool answers again."},
                        "expires_in": {"type": "string", "description": "How long to wait at most, e.g. \"6h\" (default 24h, at most 7 days); an expired notice sends nothing."}
                    }})
                })),
                ..op(
                    Post,
                    Handler::Axum(|m| on(m, back_in_service::create)),
                    "createBackInServiceNotice",
                    "Be told once when a tool answers again: when one of its providers' breakers admits calls again (closed after its probes, or an operator's forced open ended) and no maintenance window holds it. The notice is POSTed to callback_url, signed, then done; a tool that answers already (available_now) fires it at once.",
                    &[
                        answer(
                            201,
                            "The notice, waiting, and available_now.",
                            Reply::Json(Schema::Object),
                        ),
                        error(400, "Malformed JSON or body, or unknown fields."),
                        error(403, "A tool outside the client's scope."),
                        error(404, "No such tool."),
                        error(
                            409,
                            "The client already waits on as many notices as it may.",
                        ),
                        error(
                            422,
                            "No callback_url, one outside the callback allowlist or without a signing secret, or an expires_in that is not a duration over 0 and up to 7 days.",
                        ),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
            op(
                Get,
                Handler::Axum(|m| on(m, back_in_service::list)),
                "listBackInServiceNotices",
                "The caller's back-in-service notices, newest first (waiting, fired with their callback's state, or expired); every client's with the admin key.",
                &[
                    answer(
                        200,
                        "The notices.",
                        Reply::Json(Schema::Inline(
                            || json!({"type": "object", "required": ["notices"], "properties": {"notices": {"type": "array", "items": {"type": "object"}}}}),
                        )),
                    ),
                    error(400, "A query string: the route takes none."),
                    NO_JOB_STORE,
                    JOB_STORE,
                ],
            ),
        ],
    ),
    route(
        "/v1/availability/events",
        Guard::Client,
        &[op(
            Get,
            Handler::Axum(|m| on(m, back_in_service::events)),
            "availabilityEvents",
            "Server-sent events for the caller's tools only: ready (each tool and whether it answers now), then availability ({tool, available, at}) whenever one stops or starts answering (its breakers, forced states and maintenance windows counted). For an application that keeps a connection rather than giving a callback URL.",
            &[answer(
                200,
                "An event stream.",
                Reply::Media("text/event-stream"),
            )],
        )],
    ),
    route(
        "/v1/back-in-service/{notice_id}",
        Guard::Client,
        &[
            Operation {
                params: NOTICE_ID,
                ..op(
                    Get,
                    Handler::Axum(|m| on(m, back_in_service::one)),
                    "getBackInServiceNotice",
                    "One back-in-service notice: its state, when it fired and its callback's state.",
                    &[
                        answer(200, "The notice.", Reply::Json(Schema::Object)),
                        error(404, "No such notice, or another client's."),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
            Operation {
                params: NOTICE_ID,
                ..op(
                    Delete,
                    Handler::Axum(|m| on(m, back_in_service::delete)),
                    "deleteBackInServiceNotice",
                    "Withdraw a back-in-service notice.",
                    &[
                        answer(204, "Deleted.", Reply::Nothing),
                        error(404, "No such notice, or another client's."),
                        NO_JOB_STORE,
                        JOB_STORE,
                    ],
                )
            },
        ],
    ),
    route(
        "/v1/bookings",
        Guard::Client,
        &[Operation {
            params: &[Param {
                name: "limit",
                place: Place::Query,
                description: Some(
                    "At most this many bookings (default 100); 1 to 1000; any other value is refused (400).",
                ),
                schema: ParamSchema::Inline(
                    || json!({"type": "integer", "minimum": 1, "maximum": 1000}),
                ),
            }],
            ..op(
                Get,
                Handler::Axum(|m| on(m, bookings::list)),
                "listBookings",
                "The caller's bookings from the booking ledger, newest first (every client's with the admin key): state (pending, booked, failed, unknown), order id, booking reference, amount.",
                &[
                    answer(
                        200,
                        "The bookings.",
                        Reply::Json(Schema::Inline(
                            || json!({"type": "object", "required": ["bookings"], "properties": {"bookings": {"type": "array", "items": {"type": "object"}}}}),
                        )),
                    ),
                    error(400, "Unknown query parameter."),
                    error(501, "No store, so no booking ledger."),
                    error(503, "The booking ledger is not answering."),
                ],
            )
        }],
    ),
    route(
        "/v1/breakers",
        Guard::SelfAuthorized,
        &[op(
            Get,
            Handler::Axum(|m| on(m, ops::list_breakers)),
            "listBreakers",
            "Every breaker: state, since, failure and slow-call rates, calls in the window, open until, ramp stage, history, the maintenance window holding it; and every maintenance window in force or to come.",
            &[
                answer(200, "The breakers.", Reply::Json(Schema::Object)),
                error(400, "A query string: the route takes none."),
                KEY,
            ],
        )],
    ),
    route(
        "/v1/breakers/{key}",
        Guard::SelfAuthorized,
        &[Operation {
            params: &[BREAKER_KEY],
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::one_breaker)),
                "getBreaker",
                "One breaker; the key is tool.provider, e.g. search_flights.duffel, or *.provider (*.provider@digest per account) for a breaker a provider's tools share. A tool's key on such a provider answers the shared breaker.",
                &[
                    answer(200, "The breaker.", Reply::Json(Schema::Object)),
                    error(400, "A key that is not UTF-8 once percent-decoded."),
                    KEY,
                    error(404, "No such breaker."),
                ],
            )
        }],
    ),
    route(
        "/v1/breakers/{key}/force",
        Guard::SelfAuthorized,
        &[Operation {
            params: &[BREAKER_KEY],
            security: Security::Admin,
            body: Some(Schema::Inline(
                || json!({"type": "object", "required": ["state"], "additionalProperties": false, "properties": {"state": {"type": "string", "enum": ["open", "closed", "auto"]}}}),
            )),
            ..op(
                Post,
                Handler::Axum(|m| on(m, ops::force_breaker)),
                "forceBreaker",
                "Force a breaker open or closed, or back to automatic (admin key).",
                &[
                    answer(
                        200,
                        "The breaker after the change.",
                        Reply::Json(Schema::Object),
                    ),
                    error(
                        400,
                        "Unknown state or malformed body, a key that is not UTF-8 once percent-decoded, or a tool's key on a provider whose tools share one breaker (the answer's `breaker` is the key to force).",
                    ),
                    KEY,
                    error(
                        403,
                        "A client key cannot force breakers; use the admin key.",
                    ),
                    error(404, "No such breaker."),
                ],
            )
        }],
    ),
    route(
        "/v1/admin/reload",
        Guard::SelfAuthorized,
        &[Operation {
            security: Security::Admin,
            ..op(
                Post,
                Handler::Axum(|m| on(m, ops::reload)),
                "reloadConfiguration",
                "Read the whole configuration again without a restart, as SIGHUP does (admin key): faregate.toml, tools/, prompts/ and the client keys; in a PostgreSQL fleet every other live replica is asked to read its own files again. Tools are added, removed and changed, breakers of unchanged tool × provider keys keep their state, calls already admitted finish on the configuration they started with, and a removed key is refused from the next request on (its open event streams end at the reload).",
                &[
                    answer(
                        200,
                        "What changed: the fingerprint of the files read, the clients holding keys now, the tools added, removed and changed, whether the prompts and maintenance windows changed, each setting read that only a restart applies (needs_restart), and in a PostgreSQL fleet how many other live replicas were asked to reload their own files (replicas_asked; null, with fleet_problem, when the store did not answer).",
                        Reply::Json(Schema::Object),
                    ),
                    KEY,
                    error(
                        403,
                        "A client key cannot reload the configuration; use the admin key.",
                    ),
                    error(
                        422,
                        "The configuration has problems (every one listed, each naming its file and key); nothing changed.",
                    ),
                    error(501, "Not started from a configuration file."),
                ],
            )
        }],
    ),
    route(
        "/v1/admin/replicas",
        Guard::SelfAuthorized,
        &[Operation {
            security: Security::Admin,
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::list_replicas)),
                "listReplicas",
                "The live replicas (admin key), each with the fingerprint of the configuration it runs and when it loaded it, and whether they all agree; on SQLite, this replica alone.",
                &[
                    answer(
                        200,
                        "The replicas seen within live_for, by name, with this one marked (this), the replicas per fingerprint (configurations) and whether there is one (agree).",
                        Reply::Json(Schema::Object),
                    ),
                    error(400, "A query string: the route takes none."),
                    KEY,
                    error(
                        403,
                        "A client key cannot list the replicas; use the admin key.",
                    ),
                    error(503, "The fleet's store did not answer."),
                ],
            )
        }],
    ),
    route(
        "/v1/alerts",
        Guard::SelfAuthorized,
        &[op(
            Get,
            Handler::Axum(|m| on(m, ops::list_alerts)),
            "listAlerts",
            "Active alerts: breaker open too long, flapping, trip storm, shared dependency.",
            &[
                answer(200, "The active alerts.", Reply::Json(Schema::Object)),
                error(400, "A query string: the route takes none."),
                KEY,
            ],
        )],
    ),
    route(
        "/v1/events",
        Guard::SelfAuthorized,
        &[op(
            Get,
            Handler::Axum(|m| on(m, ops::events)),
            "events",
            "Server-sent events: breaker transitions and alerts.",
            &[
                answer(200, "An event stream.", Reply::Media("text/event-stream")),
                KEY,
            ],
        )],
    ),
    route(
        "/metrics",
        Guard::SelfAuthorized,
        &[Operation {
            security: Security::Optional,
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::metrics)),
                "metrics",
                "Prometheus text format (open unless telemetry.metrics_public = false).",
                &[
                    answer(200, "Metrics.", Reply::Media("text/plain")),
                    error(401, "Missing or wrong key, when metrics are not public."),
                ],
            )
        }],
    ),
    route(
        "/dashboard",
        Guard::SelfAuthorized,
        &[Operation {
            security: Security::Open,
            ..op(
                Get,
                Handler::Axum(|m| on(m, ops::dashboard)),
                "dashboard",
                "The operator's dashboard page (holds no data; reads the APIs with a key kept in session storage).",
                &[answer(200, "An HTML page.", Reply::Media("text/html"))],
            )
        }],
    ),
    route(
        "/v1/openai/tool_calls",
        Guard::Call,
        &[Operation {
            body: Some(Schema::Ref("OpenAiToolCalls")),
            ..op(
                Post,
                Handler::Axum(|m| on(m, agents::AgentCalls::OPENAI)),
                "openaiToolCalls",
                "Run an OpenAI assistant message's tool calls (Chat Completions) or function_call items (Responses API), concurrently; results in the order received.",
                &[
                    answer(
                        200,
                        "Tool messages (Chat Completions) or function_call_output items (Responses API).",
                        Reply::Json(Schema::Ref("OpenAiResults")),
                    ),
                    error(400, "No tool calls found, or malformed JSON."),
                    NOT_JSON,
                    CROSS_SITE,
                ],
            )
        }],
    ),
    route(
        "/v1/anthropic/tool_use",
        Guard::Call,
        &[Operation {
            body: Some(Schema::Ref("AnthropicToolUse")),
            ..op(
                Post,
                Handler::Axum(|m| on(m, agents::AgentCalls::ANTHROPIC)),
                "anthropicToolUse",
                "Run an Anthropic assistant message's tool_use blocks concurrently; answers the user message with tool_result blocks.",
                &[
                    answer(
                        200,
                        "The user message to append.",
                        Reply::Json(Schema::Ref("AnthropicResults")),
                    ),
                    error(400, "No tool_use blocks found, or malformed JSON."),
                    NOT_JSON,
                    CROSS_SITE,
                ],
            )
        }],
    ),
    route(
        "/mcp",
        Guard::Call,
        &[
            Operation {
                body: Some(Schema::Ref("JsonRpcMessage")),
                ..op(
                    Post,
                    Handler::Mcp,
                    "mcpPost",
                    "Model Context Protocol, Streamable HTTP (revisions 2025-06-18, 2025-11-25 with Mcp-Session-Id sessions; 2026-07-28 stateless). One JSON-RPC message per request.",
                    &[
                        answer(
                            200,
                            "A JSON-RPC response (application/json or text/event-stream).",
                            Reply::Json(Schema::Object),
                        ),
                        answer(
                            202,
                            "A notification or response was accepted.",
                            Reply::Nothing,
                        ),
                        answer(
                            400,
                            "A body that is not JSON (JSON-RPC -32700) or not a JSON-RPC message (-32600), or a request rmcp refuses (missing session id, unsupported protocol version).",
                            Reply::Json(Schema::Inline(
                                || json!({"anyOf": [{"$ref": "#/components/schemas/JsonRpcError"}, {"$ref": "#/components/schemas/Error"}]}),
                            )),
                        ),
                        MCP_KEY,
                        MCP_HOST,
                        MCP_SESSION,
                        MCP_ACCEPT,
                        MCP_TOO_LARGE,
                        error(415, "The body is not declared as application/json."),
                        MCP_LIMITED,
                        MCP_TIMEOUT,
                    ],
                )
            },
            op(
                Get,
                Handler::Mcp,
                "mcpGet",
                "The server-to-client event stream of a legacy session.",
                &[
                    answer(200, "An event stream.", Reply::Media("text/event-stream")),
                    error(400, "No session id, or an unsupported protocol version."),
                    MCP_KEY,
                    MCP_HOST,
                    MCP_SESSION,
                    error(405, "Not offered (stateless mode)."),
                    MCP_ACCEPT,
                    MCP_TIMEOUT,
                ],
            ),
            op(
                Delete,
                Handler::Mcp,
                "mcpDelete",
                "End a legacy session.",
                &[
                    answer(200, "Session ended.", Reply::Nothing),
                    error(400, "No session id, or an unsupported protocol version."),
                    MCP_KEY,
                    MCP_HOST,
                    error(405, "Not offered (stateless mode)."),
                    MCP_TIMEOUT,
                ],
            ),
        ],
    ),
];

const MCP_HOST: Answer = answer(
    403,
    "Host or Origin not allowed ([mcp] allowed_hosts, allowed_origins): a JSON-RPC error (code -31403) whose message says which, so MCP clients show it.",
    Reply::Json(Schema::Ref("JsonRpcError")),
);
const MCP_KEY: Answer = answer(
    401,
    "Missing or wrong client key: a JSON-RPC error (code -31401, id null: the body is not read before the key is checked) whose message says which header and key to send, so MCP clients show it.",
    Reply::Json(Schema::Ref("JsonRpcError")),
);
const MCP_TOO_LARGE: Answer = answer(
    413,
    "The body is larger than [server] max_body_bytes: a JSON-RPC error (code -31413, id null) whose message gives the limit, so MCP clients show it.",
    Reply::Json(Schema::Ref("JsonRpcError")),
);
const MCP_LIMITED: Answer = answer(
    429,
    "This client is over its request rate or its calls in flight ([limits]): a JSON-RPC error (code -31429, id null) whose message says when to retry, with Retry-After, so MCP clients show it.",
    Reply::Json(Schema::Ref("JsonRpcError")),
);
const MCP_TIMEOUT: Answer = answer(
    503,
    "The request took longer than [server] request_timeout: a JSON-RPC error (code -31503, id null), so MCP clients show it.",
    Reply::Json(Schema::Ref("JsonRpcError")),
);
const MCP_SESSION: Answer = error(404, "Unknown or expired session: initialize again.");
const MCP_ACCEPT: Answer = error(
    406,
    "The Accept header does not accept what this method answers (POST: application/json and text/event-stream; GET: text/event-stream).",
);

/// `GET /openapi.json`: the document of this table, with the caller's tools.
async fn openapi_json(
    State(state): State<SharedState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    Json(openapi::document(&state, table(), &caller.scope()))
}

/// The table, through a function: the handler above is part of the table, so its body cannot
/// name the constant directly (its type would depend on itself).
fn table() -> &'static [Route] {
    ROUTES
}
