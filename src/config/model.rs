//! The typed configuration the rest of the gateway reads: units in the types, validated once.
//!
//! Nothing here parses or reports problems (that is `load`); these are plain values whose
//! invariants were checked by the loader. Components get only the slice they need.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;

use crate::breaker::{BreakerConfig, BreakerScope};
use crate::clients::{ClientName, DailyBudget, ProviderReserve, Scope, ToolShare};
use crate::policy::RetryPolicy;

/// The whole gateway configuration: `faregate.toml` plus `tools/*.toml` plus `prompts/`.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where `faregate.toml` was read from (for messages).
    pub source: PathBuf,
    /// The fingerprint of the files this configuration was read from (`config::fingerprint`):
    /// 12 hex digits, equal on replicas that read the same files.
    pub fingerprint: String,
    /// `[server]`.
    pub server: ServerConfig,
    /// `[auth]`.
    pub auth: AuthConfig,
    /// `[store]`.
    pub store: StoreConfig,
    /// `[bookings]`.
    pub bookings: BookingsConfig,
    /// `[quota]`.
    pub quota: QuotaConfig,
    /// `[breakers]` and each provider's `breaker_scope`: how far one breaker reaches.
    pub breakers: BreakersConfig,
    /// `[mcp]`.
    pub mcp: McpConfig,
    /// `[limits]`.
    pub limits: LimitsConfig,
    /// `[providers.*]`, by the operator's name for each provider.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[defaults.jobs]`.
    pub jobs: JobsConfig,
    /// `[telemetry]`.
    pub telemetry: TelemetryConfig,
    /// `[watches]`.
    pub watches: WatchesConfig,
    /// One entry per `tools/*.toml`, sorted by name so manifests are stable.
    pub tools: Vec<ToolConfig>,
    /// Every file of `prompts/`, by file name.
    pub prompts: BTreeMap<String, String>,
    /// `[[clients]]`: the named clients, in file order.
    pub clients: Vec<ClientConfig>,
    /// `[[maintenance]]`: the scheduled maintenance windows, in file order.
    pub maintenance: Vec<crate::maintenance::Window>,
}

/// One `[[clients]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// The client's name (checked: not one the gateway gives itself).
    pub name: ClientName,
    /// Where its key comes from.
    pub key: ClientKey,
    /// The tools it may call and whether it may book.
    pub scope: Scope,
    /// Its limits: `[limits]` with its own `rate`, `burst` and `max_concurrent_calls` over them.
    pub limits: LimitsConfig,
    /// Its booking budget per UTC day, when it has one.
    pub budget: Option<DailyBudget>,
    /// Its own callback allowlist, which replaces `[auth] callback_allowlist` for it.
    pub callback_allowlist: Option<Vec<Url>>,
    /// The variable holding its own callback signing secret, which replaces `[auth]
    /// callback_secret_env`'s for its job callbacks and notices.
    pub callback_secret_env: Option<String>,
}

/// Where a client's key comes from: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientKey {
    /// The environment variable holding the key (read at start; a change needs a restart).
    Env(String),
    /// The key's SHA-256 digest (reloadable: rotate a key by changing it and reloading).
    Sha256([u8; 32]),
}

/// `[server]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address the HTTP API listens on.
    pub listen: SocketAddr,
    /// The largest request body accepted; larger bodies get 413.
    pub max_body_bytes: usize,
    /// How long a client may take to send a request's headers (and how long an idle
    /// keep-alive connection stays open); slower connections are closed (slow-loris).
    pub header_read_timeout: Duration,
    /// How long one request may take from its headers to the response head; `None` means the
    /// longest tool deadline plus [`REQUEST_TIMEOUT_MARGIN`], so a call is never cut short by
    /// the server before its own deadline answers.
    pub request_timeout: Option<Duration>,
    /// Open client connections at most; further clients wait in the listen backlog. An HTTP/2
    /// connection takes one, however many calls it carries.
    pub max_connections: u32,
    /// Calls one HTTP/2 connection may carry at once (its streams); the client is told in the
    /// connection's SETTINGS, and a stream beyond it is refused.
    pub max_concurrent_streams: u32,
    /// On SIGTERM/Ctrl-C: how long in-flight calls and running background jobs may take to
    /// finish before their connections are closed and their job leases handed back.
    pub shutdown_grace: Duration,
}

/// How far the default request timeout lies beyond the longest tool deadline.
pub const REQUEST_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// The defaults for `[server]`.
pub fn default_server() -> ServerConfig {
    ServerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 8080)),
        max_body_bytes: 262_144,
        header_read_timeout: Duration::from_secs(10),
        request_timeout: None,
        max_connections: 1024,
        max_concurrent_streams: 1000,
        shutdown_grace: Duration::from_secs(30),
    }
}

/// A number of events per period, such as `"20/s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Events per period (at least 1).
    pub count: u32,
    /// The period: one second, minute or hour.
    pub per: Duration,
}

/// `[limits]`: what one client (one key, or one peer address when auth is off) may ask of the
/// tool-call routes, and how much it may hold of what lasts: event streams and MCP sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Sustained request rate per client; `None` = no rate limit.
    pub client_rate: Option<Rate>,
    /// Requests a client may make at once above the sustained rate.
    pub client_burst: u32,
    /// Tool-call requests one client may have in flight; `None` = no cap.
    pub client_max_concurrent_calls: Option<u32>,
    /// Event streams (`GET /v1/events`, `GET /v1/availability/events`, `GET /mcp`) one client
    /// may hold open at once; `None` = no cap. The same for every client (a `[[clients]]` entry
    /// has no key of its own for it).
    pub client_max_streams: Option<u32>,
    /// MCP sessions one client may keep open at once; `None` = no cap. The same for every
    /// client.
    pub client_max_mcp_sessions: Option<u32>,
    /// While more than one client may call, the share of each tool's concurrent calls
    /// (`max_concurrent`) one client may hold on a replica: `ceil(max_concurrent × share)`, at
    /// least 1. The same for every client.
    pub client_share_of_tool: ToolShare,
    /// While more than one client may call, the part of a provider's rate-limit window (of its
    /// announced `ratelimit-limit`, rounded up) below which a client that sent more than its
    /// fair part of a replica's requests to the provider in the window is refused until the
    /// window resets; 0 = off. The same for every client.
    pub provider_reserve: ProviderReserve,
}

/// The defaults for `[limits]`: 20 requests a second with bursts of 40, 32 in flight, 32 open
/// event streams, 64 MCP sessions, and half of a tool's concurrent calls per client.
pub fn default_limits() -> LimitsConfig {
    LimitsConfig {
        client_rate: Some(Rate {
            count: 20,
            per: Duration::from_secs(1),
        }),
        client_burst: 40,
        client_max_concurrent_calls: Some(32),
        client_max_streams: Some(32),
        client_max_mcp_sessions: Some(64),
        client_share_of_tool: ToolShare::HALF,
        provider_reserve: ProviderReserve::DEFAULT,
    }
}

/// `[auth]`: names of environment variables, never the keys themselves.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// The variable holding comma-separated client keys.
    pub client_keys_env: String,
    /// The variable holding the admin key.
    pub admin_key_env: String,
    /// Callback URL prefixes that background jobs may call.
    pub callback_allowlist: Vec<Url>,
    /// The variable holding the secret that signs callbacks (`Faregate-Signature`).
    pub callback_secret_env: String,
}

/// `[mcp]`: the `/mcp` endpoint's DNS-rebinding guard and session mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpConfig {
    /// `Host` header values accepted at `/mcp` (`host` or `host:port`); others get 403.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted at `/mcp` (`scheme://host[:port|:*]` or `null`); a request
    /// carrying any other `Origin` gets 403, a request without one passes.
    pub allowed_origins: Vec<String>,
    /// Whether clients of the 2025 revisions get `Mcp-Session-Id` sessions (kept in this
    /// process). `false` serves every revision statelessly, for several replicas without
    /// sticky sessions (the only `Mcp-Session-Id` then is one that carries a client's Tasks
    /// declaration, kept nowhere); 2026-07-28 requests are stateless either way. The default
    /// is `true` on SQLite (one node) and `false` on PostgreSQL (a fleet behind a load
    /// balancer).
    pub legacy_sessions: bool,
}

impl Default for McpConfig {
    /// Loopback only: a gateway on a laptop cannot be reached through DNS rebinding.
    fn default() -> Self {
        McpConfig {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            legacy_sessions: true,
        }
    }
}

/// `[telemetry]`: metrics access, logs and trace export.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// Whether `GET /metrics` is served without a key (metrics carry tool and provider names
    /// and counts, never arguments or keys).
    pub metrics_public: bool,
    /// Where to send traces over OTLP/HTTP (a base URL; `/v1/traces` is appended). When unset,
    /// the standard `OTEL_EXPORTER_OTLP_ENDPOINT` variable is honoured.
    pub otlp_endpoint: Option<Url>,
    /// Logs as JSON lines instead of text.
    pub json_logs: bool,
}

/// `[store]`.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `sqlite://…` or `postgres://…`.
    pub url: String,
    /// Whether the breakers' state lives in the store (default): shared with the other replicas
    /// on PostgreSQL, kept across restarts on SQLite. Off, each process's breakers are its own
    /// and forget forced states on restart (for comparisons, and for fleets that want that).
    pub share_breakers: bool,
    /// The local SQLite file a replica on PostgreSQL keeps background submissions in while the
    /// store does not answer (default `faregate-spool.db`, beside the default SQLite store);
    /// they move into the store when it answers again. Unused with a SQLite store.
    pub spool_path: PathBuf,
    /// How long a finished background job (succeeded, dead, cancelled) is kept after its last
    /// change before it is deleted (default 7 days).
    pub job_retention: Duration,
}

/// `[quota]`: how background pacing keys a provider's shared allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaConfig {
    /// What one token bucket (one shared pacer row in a fleet) stands for.
    pub bucket_key: BucketKey,
}

/// What one provider allowance is keyed by (`[quota] bucket_key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BucketKey {
    /// `"provider"` (default): the operator's provider name; every replica naming a provider
    /// the same draws one bucket, whatever its credential.
    #[default]
    Provider,
    /// `"provider_and_credential"`: the provider name and a digest of its credential (never the
    /// credential), so deployments that share a database but call a provider with different
    /// accounts pace each account on its own, and replicas with the same account share one.
    ProviderAndCredential,
}

impl BucketKey {
    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BucketKey::Provider => "provider",
            BucketKey::ProviderAndCredential => "provider_and_credential",
        }
    }
}

/// How far one breaker reaches: `[breakers] scope` for every provider, a provider's own
/// `breaker_scope` for that provider.
#[derive(Debug, Clone)]
pub struct BreakersConfig {
    /// The scope of every provider that names none (default `tool_provider`).
    pub scope: BreakerScope,
    /// The providers that name their own scope.
    pub by_provider: BTreeMap<String, BreakerScope>,
    /// The policy of a breaker several tools share (`[defaults.breaker]`): no one tool's
    /// `[breaker]` may speak for the others. Its probe timeout is set, when it is made, to the
    /// longest attempt timeout of the tools sharing it.
    pub shared_policy: BreakerConfig,
}

impl BreakersConfig {
    /// The scope of the breakers of `provider`.
    pub fn scope_of(&self, provider: &str) -> BreakerScope {
        self.by_provider
            .get(provider)
            .copied()
            .unwrap_or(self.scope)
    }
}

/// `[bookings]`: the booking ledger's timings.
#[derive(Debug, Clone)]
pub struct BookingsConfig {
    /// How long a `pending` ledger entry may wait for its outcome before it is treated as
    /// unknown, and how long an unknown booking must be before "the provider holds no order"
    /// means "not booked" (default 2 minutes: far longer than any booking attempt).
    pub settle: Duration,
    /// How often unknown bookings are reconciled with their provider (default 15 s).
    pub reconcile_every: Duration,
}

impl BookingsConfig {
    /// The defaults `faregate.toml` documents.
    pub fn defaults() -> Self {
        BookingsConfig {
            settle: Duration::from_secs(120),
            reconcile_every: Duration::from_secs(15),
        }
    }
}

/// One `[providers.NAME]` table.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    /// The operator's name for this provider (`duffel`).
    pub name: String,
    /// The wire format and its credentials.
    pub kind: ProviderKind,
    /// Where the provider's API lives; tool arguments never change the host.
    pub base_url: Url,
    /// The provider's fixed limit, when it documents one instead of rate-limit headers
    /// (`requests_per_second`; Amadeus's documented per-environment limit by default).
    /// Background claims are paced below it.
    pub requests_per_second: Option<u32>,
    /// How long a new connection to the provider may take (`connect_timeout`, default 2 s):
    /// a provider that cannot accept a connection in that time is down for our purposes.
    pub connect_timeout: Duration,
    /// An attempt at this provider takes at most this long (`timeout`), whichever tool asks: a
    /// cap under each tool's own `timeout` for a provider known to be slower or faster than
    /// the tools' defaults. `None`: the tool's timeout alone.
    pub timeout: Option<Duration>,
    /// Speak HTTP/2 to the provider from the first byte over cleartext (`http2_prior_knowledge`,
    /// default false): for an internal provider or a sidecar on `http://` that serves h2c, so
    /// every call in flight shares a few connections instead of holding one each. Only for
    /// `http://` base URLs; a TLS provider negotiates HTTP/2 by ALPN without it. (An `http://`
    /// base URL whose host is not loopback loads only with the provider's `allow_cleartext =
    /// true`, a check of the file's that leaves nothing here.)
    pub http2_prior_knowledge: bool,
}

/// The provider wire formats faregate speaks, with the env variables holding their credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderKind {
    /// Duffel Air and Stays.
    Duffel {
        /// Variable with the access token.
        token_env: String,
    },
    /// Amadeus Self-Service shapes.
    Amadeus {
        /// Variable with the API key.
        client_id_env: String,
        /// Variable with the API secret.
        client_secret_env: String,
    },
    /// Any JSON HTTP API, serving the tools from configuration that name it; each tool's file
    /// says its request and result.
    Http {
        /// How requests authenticate.
        auth: HttpAuth,
    },
}

/// How an `http` provider's requests authenticate; every secret comes from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpAuth {
    /// No credential (a public API, or one reached through a private network).
    None,
    /// `Authorization: Bearer <token>`.
    Bearer {
        /// Variable with the token.
        token_env: String,
    },
    /// An API key in a header of the provider's choosing.
    ApiKey {
        /// The header (`x-apikey`).
        header: String,
        /// Variable with the key.
        key_env: String,
    },
    /// HTTP Basic authentication.
    Basic {
        /// Variable with the user name.
        username_env: String,
        /// Variable with the password.
        password_env: String,
    },
    /// OAuth2 client credentials: a token fetched from `token_url`, shared by every call of the
    /// provider and fetched once for concurrent calls.
    OAuth2 {
        /// The token endpoint.
        token_url: Url,
        /// Variable with the client id.
        client_id_env: String,
        /// Variable with the client secret.
        client_secret_env: String,
        /// The scope asked for, when the provider wants one.
        scope: Option<String>,
    },
}

impl ProviderKind {
    /// The `kind = "…"` string.
    pub fn as_str(&self) -> &'static str {
        match self {
            ProviderKind::Duffel { .. } => "duffel",
            ProviderKind::Amadeus { .. } => "amadeus",
            ProviderKind::Http { .. } => "http",
        }
    }
}

/// `[defaults.jobs]`.
#[derive(Debug, Clone, PartialEq)]
pub struct JobsConfig {
    /// Attempts before a background job is dead.
    pub max_attempts: u32,
    /// Age after which a background job is dead.
    pub max_age: Duration,
    /// Worker tasks claiming due jobs.
    pub workers: u32,
    /// How long a claimed job's lease outlasts its tool's deadline; after that a crashed
    /// worker's job runs again elsewhere.
    pub lease_margin: Duration,
}

/// `[watches]`: the limits that keep recurring background calls from exhausting a provider's
/// quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchesConfig {
    /// Active watches one client may keep.
    pub max_active_per_client: u32,
    /// The shortest interval of a watch whose tool sets no `watch_min_interval`.
    pub min_interval: Duration,
}

impl Default for WatchesConfig {
    fn default() -> Self {
        WatchesConfig {
            max_active_per_client: 20,
            min_interval: Duration::from_secs(60),
        }
    }
}

/// One `tools/<tool>.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolConfig {
    /// The file it came from.
    pub file: PathBuf,
    /// The tool's name (one of the catalog's).
    pub name: String,
    /// The text the model reads.
    pub description: String,
    /// Provider names, tried in order.
    pub providers: Vec<String>,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Whole-call deadline.
    pub deadline: Duration,
    /// Bulkhead: concurrent upstream calls for this tool.
    pub max_concurrent: u32,
    /// How long a good result may be served as stale; zero disables.
    pub stale_for: Duration,
    /// `watch_min_interval`: the shortest interval a watch of this tool may run at; `None` =
    /// `[watches] min_interval`.
    pub watch_min_interval: Option<Duration>,
    /// How long a good result answers repeats of the same read as fresh, without asking a
    /// provider; zero (the default) disables. Always zero for a write tool (refused there).
    pub fresh_for: Duration,
    /// Breaker policy of each of its providers (`[defaults.breaker]` merged with the tool's
    /// `[breaker]`). Its probe timeout is set to `timeout` when the tool is served.
    pub breaker: BreakerConfig,
    /// Retry policy (`[defaults.retry]` merged with the tool's `[retry]`).
    pub retry: RetryPolicy,
    /// The fallback prompt file for interactive calls (a key of [`Config::prompts`]).
    pub fallback_interactive: String,
    /// For a tool from configuration (`kind = "http"`): what it is and how its provider is
    /// asked; `None` for a catalog tool.
    pub http: Option<HttpTool>,
    /// For a catalog tool: the http providers that serve it after its built-in ones
    /// (`[binding.<provider>]`), each with its request and result mapping.
    pub bindings: Vec<Bound>,
}

/// One `[binding.<provider>]` of a catalog tool's file: how an http provider serves the tool.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The provider's name (of kind http, in the tool's `providers`).
    pub provider: String,
    /// What the file says.
    pub def: crate::http_tool::BindingDef,
    /// The same, compiled.
    pub binding: Arc<crate::http_tool::Binding>,
}

/// The same binding: the same provider and the same declaration (the compiled binding has no
/// equality of its own, and is made from the declaration alone).
impl PartialEq for Bound {
    fn eq(&self, other: &Self) -> bool {
        self.provider == other.provider && self.def == other.def
    }
}

/// What a tool file of kind `http` declares beyond the policy every tool has.
#[derive(Debug, Clone)]
pub struct HttpTool {
    /// The tool as the catalog describes tools: name, title, access, schemas.
    pub definition: crate::tools::configured::Definition,
    /// Its request and result, compiled.
    pub operation: Arc<crate::http_tool::Operation>,
}

/// The same declaration: the same definition, and a request and result that read the same (the
/// compiled operation has no equality of its own). A reload compares tools with it.
impl PartialEq for HttpTool {
    fn eq(&self, other: &Self) -> bool {
        self.definition == other.definition
            && format!("{:?}", self.operation) == format!("{:?}", other.operation)
    }
}

impl ToolConfig {
    /// The binding through which the http provider `provider` serves this catalog tool.
    pub fn binding(&self, provider: &str) -> Option<&Arc<crate::http_tool::Binding>> {
        self.bindings
            .iter()
            .find(|b| b.provider == provider)
            .map(|b| &b.binding)
    }

    /// The tool's catalog entry: the catalog's own, or the one its file declares.
    pub fn spec(&self) -> Option<&'static crate::tools::ToolSpec> {
        match &self.http {
            Some(http) => Some(crate::tools::configured::spec(&http.definition)),
            None => crate::tools::spec(&self.name),
        }
    }
}

impl Config {
    /// The tool's configuration by name.
    pub fn tool(&self, name: &str) -> Option<&ToolConfig> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The longest tool deadline (zero without tools).
    pub fn longest_deadline(&self) -> Duration {
        self.tools
            .iter()
            .map(|t| t.deadline)
            .max()
            .unwrap_or_default()
    }

    /// `[server] request_timeout`, or the longest tool deadline plus a margin.
    pub fn request_timeout(&self) -> Duration {
        self.server
            .request_timeout
            .unwrap_or_else(|| self.longest_deadline() + REQUEST_TIMEOUT_MARGIN)
    }
}

/// The defaults for `[defaults.jobs]`.
pub fn default_jobs() -> JobsConfig {
    JobsConfig {
        max_attempts: 20,
        max_age: Duration::from_secs(24 * 3600),
        workers: 16,
        lease_margin: Duration::from_secs(30),
    }
}

/// The defaults for `[telemetry]`: metrics open (Prometheus scrapes without credentials), text
/// logs, no trace export.
pub fn default_telemetry() -> TelemetryConfig {
    TelemetryConfig {
        metrics_public: true,
        otlp_endpoint: None,
        json_logs: false,
    }
}
