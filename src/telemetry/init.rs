//! The process-wide `tracing` subscriber: an `EnvFilter` (`RUST_LOG`, default `info`), logs on
//! stderr as text or JSON lines, and, when an OTLP endpoint is configured, an OpenTelemetry layer
//! exporting spans over OTLP/HTTP.
//!
//! The endpoint comes from `[telemetry] otlp_endpoint` (a base URL such as
//! `http://collector:4318`; `/v1/traces` is appended), else from the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, which the exporter then
//! reads itself along with the other `OTEL_EXPORTER_OTLP_*` variables. `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` are honoured; the service name defaults to `faregate`, and
//! `service.instance.id` to the replica's name (`replica-<12 hex>`, the fleet's name for it, as
//! `/readyz` shows it), so replicas sharing a service name are told apart.
//!
//! At stop, the spans still buffered get `FLUSH_AT_STOP` (1 s) to reach the collector: the SDK's
//! own 5 s would add that much to every stop while a collector accepts and never answers.
//!
//! The exporter uses reqwest's blocking client on the SDK's own batch thread (the async client
//! panics there with "no reactor running"), and is built on a plain thread because building a
//! blocking client inside the tokio runtime panics in some versions.
//!
//! No secrets reach spans or logs: spans carry tool, provider, call id, outcome and error type,
//! never arguments, headers or keys.
//!
//! The per-call spans (`http_request`, `execute_tool`, `upstream_attempt`, `run_job`) go to the trace
//! exporter only, not to the log layers: a log layer formats every field of every span it sees
//! when the span is made and again at each `record`, whether or not anything is logged inside
//! it, and that formatting was 22 % of the instructions of a fallback answer (measured with
//! callgrind). Log lines on the call path carry their own `tool`, `provider` and `error` fields.
//! Without an exporter the per-call spans are not made at all (a global filter): a span the log
//! layers ignore still costs a registry slot, its fields' formatting for `otel.name` and a
//! lookup on every enter and exit, about 16 % of a fallback answer's instructions.

use std::fmt;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::TelemetryConfig;
use crate::providers::Env;

/// How long the exporter may take to send the spans still buffered when the process stops.
const FLUSH_AT_STOP: std::time::Duration = std::time::Duration::from_secs(1);

/// Keeps the trace exporter alive; dropping it flushes the spans still buffered.
#[must_use = "dropping the guard stops trace export"]
pub struct TracingGuard {
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl fmt::Debug for TracingGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TracingGuard(otlp: {})", self.provider.is_some())
    }
}

impl TracingGuard {
    /// Whether spans are exported over OTLP.
    pub fn exports(&self) -> bool {
        self.provider.is_some()
    }
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // Bounded: a collector that accepts and never answers must not hold the stop.
            let _ = provider.shutdown_with_timeout(FLUSH_AT_STOP);
        }
    }
}

/// Why tracing could not be set up as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitError(pub String);

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InitError {}

/// Text logs to stderr, no export: for the commands that do not serve (`check`, `manifest`,
/// `sim`). A subscriber already installed is left alone.
pub fn init_default() {
    let _ = tracing_subscriber::registry()
        .with(filter())
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .try_init();
}

/// What is logged unless `RUST_LOG` says otherwise: `info`, but only warnings from rmcp, which
/// logs every MCP session's id at info (an id is a bearer of its session, and one line per
/// `initialize` floods the log).
const DEFAULT_FILTER: &str = "info,rmcp=warn";

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
}

/// Installs the subscriber `config` asks for. Call it once, before serving. `replica` is this
/// process's name among the replicas (`fleet::replica_name`), its traces' `service.instance.id`.
pub fn init(
    config: &TelemetryConfig,
    env: &dyn Env,
    replica: &str,
) -> Result<TracingGuard, InitError> {
    let provider = match otlp_endpoint(config, env) {
        Some(endpoint) => Some(otlp_provider(endpoint, env, replica)?),
        None => None,
    };
    let otel = provider.as_ref().map(|p| {
        use opentelemetry::trace::TracerProvider as _;
        tracing_opentelemetry::layer().with_tracer(p.tracer("faregate"))
    });
    let (json, text) = if config.json_logs {
        (
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_writer(std::io::stderr)
                    .with_filter(not_a_call_span()),
            ),
            None,
        )
    } else {
        (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(not_a_call_span()),
            ),
        )
    };
    tracing_subscriber::registry()
        .with(filter())
        .with(call_spans_unless(provider.is_some()))
        .with(json)
        .with(text)
        .with(otel)
        .try_init()
        .map_err(|e| InitError(format!("cannot install the tracing subscriber: {e}")))?;
    Ok(TracingGuard { provider })
}

/// The spans made for every call, by name: exported as traces, never formatted into logs.
const CALL_SPANS: [&str; 4] = [
    "http_request",
    "execute_tool",
    "upstream_attempt",
    "run_job",
];

/// Whether a log layer sees this span or event: everything but the per-call spans (events
/// inside them still pass).
fn logged(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.is_span() && CALL_SPANS.contains(&meta.name()))
}

/// A log layer's filter ([`logged`]).
fn not_a_call_span() -> tracing_subscriber::filter::FilterFn {
    tracing_subscriber::filter::filter_fn(logged as fn(&tracing::Metadata<'_>) -> bool)
}

/// A global filter that keeps the per-call spans from being made at all, unless they are
/// `exported`: with no trace exporter nothing would ever read them. Events inside a call are
/// untouched, so its log lines still appear.
fn call_spans_unless(exported: bool) -> Option<tracing_subscriber::filter::FilterFn> {
    (!exported).then(not_a_call_span)
}

/// Where to export, if anywhere: `Some(None)` means "the standard variables say where".
fn otlp_endpoint(config: &TelemetryConfig, env: &dyn Env) -> Option<Option<String>> {
    if let Some(url) = &config.otlp_endpoint {
        let base = url.as_str().trim_end_matches('/');
        return Some(Some(if base.ends_with("/v1/traces") {
            base.to_string()
        } else {
            format!("{base}/v1/traces")
        }));
    }
    let set = |name: &str| env.var(name).is_some_and(|v| !v.trim().is_empty());
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        .then_some(None)
}

/// The resource every exported span names: the service (`faregate` unless `OTEL_SERVICE_NAME`
/// says) and this replica (`service.instance.id`, unless `OTEL_RESOURCE_ATTRIBUTES` names one),
/// with what the SDK's detectors read from the environment.
#[cfg(feature = "otlp")]
fn resource(env: &dyn Env, replica: &str) -> opentelemetry_sdk::Resource {
    let mut resource = opentelemetry_sdk::Resource::builder();
    if env.var("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("faregate");
    }
    let instance_given = env
        .var("OTEL_RESOURCE_ATTRIBUTES")
        .is_some_and(|attributes| {
            attributes
                .split(',')
                .any(|pair| pair.split('=').next().map(str::trim) == Some("service.instance.id"))
        });
    if !instance_given {
        resource = resource.with_attribute(opentelemetry::KeyValue::new(
            "service.instance.id",
            replica.to_string(),
        ));
    }
    resource.build()
}

#[cfg(feature = "otlp")]
fn otlp_provider(
    endpoint: Option<String>,
    env: &dyn Env,
    replica: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, InitError> {
    use opentelemetry_otlp::WithExportConfig;

    let built = std::thread::spawn(move || {
        let mut builder = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(endpoint) = endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        builder.build().map_err(|e| e.to_string())
    })
    .join()
    .map_err(|_| InitError("the OTLP exporter panicked while starting".into()))?;
    let exporter = built.map_err(|e| InitError(format!("cannot start the OTLP exporter: {e}")))?;
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(env, replica))
        .build())
}

#[cfg(not(feature = "otlp"))]
fn otlp_provider(
    _endpoint: Option<String>,
    _env: &dyn Env,
    _replica: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, InitError> {
    Err(InitError(
        "an OTLP endpoint is configured, but this faregate was built without the `otlp` feature; rebuild with default features or remove the endpoint".into(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::{Context, SubscriberExt};

    use super::*;

    /// Records the names of the spans made and the messages of the events seen.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: Context<'_, S>,
        ) {
            self.0
                .lock()
                .unwrap()
                .push(format!("span {}", attrs.metadata().name()));
        }

        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            self.0
                .lock()
                .unwrap()
                .push(format!("event {}", event.metadata().name()));
        }
    }

    /// Makes the spans and the event one interactive call makes, under a subscriber built as
    /// `init` builds it, and returns what the recording layer saw.
    fn one_call(exported: bool) -> Vec<String> {
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry()
            .with(call_spans_unless(exported))
            .with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            let call = tracing::info_span!("execute_tool", gen_ai.tool.name = "search_flights");
            let _in_call = call.enter();
            let attempt = tracing::info_span!("upstream_attempt");
            let _in_attempt = attempt.enter();
            tracing::warn!(name: "provider_failed", tool = "search_flights", "provider failed");
            let other = tracing::info_span!("reload");
            drop(other);
        });
        seen.0.lock().unwrap().clone()
    }

    /// The variables a test sets, through the `Env` seam.
    #[cfg(feature = "otlp")]
    struct Vars(&'static [(&'static str, &'static str)]);

    #[cfg(feature = "otlp")]
    impl Env for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_string())
        }
    }

    /// Replicas sharing one service name are told apart by `service.instance.id`: this
    /// replica's name, unless `OTEL_RESOURCE_ATTRIBUTES` gives one (which the SDK reads itself).
    #[cfg(feature = "otlp")]
    #[test]
    fn the_resource_names_the_service_and_this_replica() {
        use opentelemetry::Key;
        let read = |r: &opentelemetry_sdk::Resource, key: &'static str| {
            r.get(&Key::new(key)).map(|v| v.to_string())
        };
        let ours = resource(&Vars(&[]), "replica-0123456789ab");
        assert_eq!(read(&ours, "service.name").as_deref(), Some("faregate"));
        assert_eq!(
            read(&ours, "service.instance.id").as_deref(),
            Some("replica-0123456789ab")
        );
        let given = Vars(&[(
            "OTEL_RESOURCE_ATTRIBUTES",
            "k8s.pod.name=a, service.instance.id=pod-7",
        )]);
        assert_ne!(
            read(
                &resource(&given, "replica-0123456789ab"),
                "service.instance.id"
            )
            .as_deref(),
            Some("replica-0123456789ab"),
            "the operator's own instance id is not overridden"
        );
    }

    /// A collector that accepts connections and never answers holds the stop for
    /// `FLUSH_AT_STOP` (1 s), not for the SDK's default 5 s.
    #[cfg(feature = "otlp")]
    #[test]
    fn a_stalled_collector_holds_the_stop_about_a_second() {
        use opentelemetry::trace::{Tracer as _, TracerProvider as _};
        // Never accepted: the kernel completes the connection, and nothing ever answers.
        let collector = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let address = collector.local_addr().expect("bound");
        let endpoint = format!("http://{address}/v1/traces");
        let provider = otlp_provider(Some(endpoint), &Vars(&[]), "replica-test")
            .unwrap_or_else(|e| panic!("{e}"));
        provider.tracer("test").in_span("buffered", |_| {});
        let guard = TracingGuard {
            provider: Some(provider),
        };
        let started = tokio::time::Instant::now();
        drop(guard);
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(3),
            "the stop waited {took:?} for a stalled collector"
        );
        drop(collector);
    }

    #[test]
    fn the_default_filter_keeps_rmcp_session_ids_out_and_its_warnings_in() {
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new(DEFAULT_FILTER))
            .with(seen.clone());
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(
                name: "session_created",
                target: "rmcp::transport::streamable_http_server::session::local",
                session_id = "cf1cc804",
                "create new session"
            );
            tracing::warn!(name: "rmcp_warning", target: "rmcp::service", "a warning");
            tracing::info!(name: "own_info", "faregate's own");
        });
        assert_eq!(
            *seen.0.lock().unwrap(),
            ["event rmcp_warning", "event own_info"]
        );
    }

    #[test]
    fn without_an_exporter_no_call_span_is_made_and_events_in_calls_are_still_logged() {
        assert_eq!(one_call(false), ["event provider_failed", "span reload"]);
    }

    #[test]
    fn with_an_exporter_every_call_span_is_made() {
        assert_eq!(
            one_call(true),
            [
                "span execute_tool",
                "span upstream_attempt",
                "event provider_failed",
                "span reload"
            ]
        );
    }
}
