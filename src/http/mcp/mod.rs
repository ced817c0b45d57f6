//! `/mcp`: the Model Context Protocol over Streamable HTTP, served by rmcp.
//!
//! **Architecture invariant:** this is the only module that imports rmcp. rmcp breaks its API
//! about every quarter (it is pinned exactly in `Cargo.toml`), so its types stop here: the
//! tool objects come from [`crate::agents::manifest`] as JSON, calls go through
//! [`super::calls`] like every other protocol, and the rest of the gateway never sees an rmcp
//! type.
//!
//! One endpoint serves both protocol eras (rmcp routes each request):
//! - 2025-06-18 / 2025-11-25 (and older): `initialize`, then `Mcp-Session-Id` sessions kept in
//!   this process (`[mcp] legacy_sessions = true`, the default), or stateless when it is false;
//! - 2026-07-28: no handshake, per-request `_meta`, `server/discover`; always stateless, so any
//!   replica can answer any request; every result carries the server info in `_meta`.
//!
//! A stateless answer (`initialize` without kept sessions, `server/discover`) advertises only
//! what a stateless request gets: no `resources.subscribe` or `tools.listChanged`, whose
//! notifications need a kept session's event stream ([`Handler::info`]).
//!
//! The accepted revisions are listed in [`revisions`], not taken from rmcp.
//!
//! A session's event streams are resumable: every event carries an id, and a client that
//! reconnects with `Last-Event-ID` is sent what it missed from a bounded store
//! ([`event_store`]).
//!
//! After the catalog's tools come the watch tools ([`watch_tools`]), for a client offered them.
//!
//! Besides tools, `/mcp` serves the agent guidance and a usage prompt per tool as prompts
//! ([`prompts`]) and the tools' availability as a resource a session may subscribe to
//! ([`availability`]).
//!
//! `tools/list` is the MCP manifest ([`crate::agents::manifest::mcp_tool`]) in catalog order,
//! the tools the client's scope allows; breakers never add or remove tools (no `list_changed`
//! storms), and a reload that changes a client's scope tells its sessions ([`tool_lists`]). `tools/call` answers a [`CallToolResult`]: the model-readable text,
//! `structuredContent` (only for `ok` and `stale`, so it always matches `outputSchema`) and
//! `isError` for `unavailable`, `rejected` and `invalid_arguments`. A tripped breaker is such a
//! result, never a JSON-RPC error. An unknown tool name is a JSON-RPC error (`-32602`), as the
//! MCP specification asks.
//!
//! faregate's own `_meta` keys (the call mode, a booking's idempotency key, the client's
//! deadline, which may also come as the `Faregate-Deadline-Ms` header) are read by
//! [`crate::agents::mcp`]. A call with `"faregate/mode": "background"` from a client that
//! declared the MCP Tasks extension answers a task over its job ([`tasks`]: `tasks/get` and
//! `tasks/cancel`, and 2025-11-25's `tasks/list` and `tasks/result`, on any replica sharing
//! the store); any other client is told to declare it. A 2025 client that declared it at
//! `initialize` to a stateless `/mcp` keeps it on every replica: the session id the answer
//! hands out carries it ([`capability_ids`]).

mod availability;
mod capability_ids;
mod client_answers;
mod event_store;
mod parse_errors;
mod progress;
mod prompts;
mod request_ids;
mod revisions;
mod session_owners;
mod tasks;
mod tool_lists;
mod watch_tools;

pub(crate) use client_answers::guard;

use std::sync::Arc;

use axum::middleware;
use axum::routing::{MethodRouter, any_service};

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
    GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::agents;
use crate::clients::Scope;
use crate::http::api::catalog::guidance_for;
use crate::http::calls::{
    allowed_tools, in_scope, out_of_scope_text, run_agent_call, unknown_tool_text,
};
use crate::http::edge::{self, Caller};
use crate::http::state::SharedState;
use crate::texts::agents as texts;
use crate::tools::CallMode;

/// How long a session lives without a message before rmcp ends it: rmcp's own default, made
/// explicit. Not shorter, because a session's client is often a chat whose user thinks for
/// minutes between two tool calls, and a session that ended is a 404 many clients do not
/// recover from by themselves (a stream the session holds open does not count as activity).
/// What a session holds meanwhile is bounded by `[limits] client_max_mcp_sessions` per client.
const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// What is mounted at `/mcp`: rmcp's service for every method, behind [`parse_errors`]
/// (JSON-RPC's own 400s for bodies rmcp cannot read).
///
/// `cancel` ends every session, every request rmcp runs and every open stream; `run` cancels it
/// only once the graceful drain is over, so that the calls in flight (in a session or not) are
/// answered. The event streams that would hold the drain end earlier, when shutdown starts:
/// [`guard`] ends a `GET`'s stream on the telemetry's stream token.
pub(crate) fn service(state: SharedState, cancel: CancellationToken) -> MethodRouter<SharedState> {
    let max_body_bytes = state.max_body_bytes;
    let events = Arc::new(event_store::BoundedEventStore::default());
    let store: Arc<dyn rmcp::transport::streamable_http_server::session::EventStore> =
        Arc::clone(&events) as _;
    let mut manager = LocalSessionManager::default().with_event_store(store);
    manager.session_config.keep_alive = Some(SESSION_IDLE);
    let sessions = Arc::new(manager);
    let config = state.config();
    // Only kept sessions are capped: stateless `/mcp` keeps none.
    let cap = match config.limits.client_max_mcp_sessions {
        Some(max) if config.mcp.legacy_sessions => Some(session_owners::SessionCap {
            max,
            idle: SESSION_IDLE,
            max_body_bytes,
            telemetry: Arc::clone(&state.telemetry),
        }),
        _ => None,
    };
    // Only a kept session has requests whose ids can collide: a stateless request is alone.
    let ids = config
        .mcp
        .legacy_sessions
        .then(|| Arc::new(request_ids::RequestIds::new(max_body_bytes)));
    let owners = Arc::new(session_owners::SessionOwners::new(
        Arc::clone(&sessions),
        events,
        cap,
        ids,
    ));
    // A stateless `/mcp` that serves Tasks carries what a 2025 client declared at
    // `initialize` in the session id it hands out ([`capability_ids`]).
    let carries_capabilities = !config.mcp.legacy_sessions && state.jobs.is_some();
    let service = any_service(rmcp_service(state, cancel, sessions)).layer(
        middleware::from_fn_with_state(owners, session_owners::owned_sessions),
    );
    let service = if carries_capabilities {
        service.layer(middleware::from_fn_with_state(
            max_body_bytes,
            capability_ids::carried,
        ))
    } else {
        service
    };
    service
        .layer(middleware::from_fn_with_state(
            max_body_bytes,
            parse_errors::parse_errors,
        ))
        .layer(middleware::from_fn(edge::refusals_as_json))
}

fn rmcp_service(
    state: SharedState,
    cancel: CancellationToken,
    sessions: Arc<LocalSessionManager>,
) -> StreamableHttpService<Handler, LocalSessionManager> {
    let mcp = state.config().mcp.clone();
    let handler = Handler {
        tools: Arc::default(),
        max_body_bytes: state.max_body_bytes,
        sessions: mcp.legacy_sessions,
        subscribers: Arc::default(),
        tool_lists: Arc::default(),
        cancel: cancel.clone(),
        state,
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(mcp.allowed_hosts)
        .with_allowed_origins(mcp.allowed_origins)
        // An empty origin list then rejects every Origin instead of checking none.
        .enforce_origin_validation()
        .with_legacy_session_mode(mcp.legacy_sessions)
        .with_json_response(true)
        .with_max_request_body_bytes(handler.max_body_bytes)
        .with_cancellation_token(cancel);
    StreamableHttpService::new(move || Ok(handler.clone()), sessions, config)
}

/// The MCP server: the gateway's served tools.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    state: SharedState,
    /// Every tool `tools/list` may send, built again after a reload (each client is sent the
    /// ones its scope allows).
    tools: Arc<tool_lists::ToolObjects>,
    max_body_bytes: usize,
    /// Whether 2025 revisions are served in sessions (`[mcp] legacy_sessions`, read at start as
    /// rmcp is configured).
    sessions: bool,
    /// The sessions subscribed to the availability resource (shared by every session).
    subscribers: Arc<availability::Subscribers>,
    /// The sessions that listed tools, told when their client's tools change.
    tool_lists: Arc<tool_lists::ToolLists>,
    /// `/mcp`'s shutdown token (cancelled after the drain), which also ends the availability
    /// and tool-list watchers.
    cancel: CancellationToken,
}

impl ServerHandler for Handler {
    /// What `initialize` answers (and rmcp reads to know what is served): the capabilities of
    /// a 2025 client's requests here, in a kept session or stateless (`[mcp] legacy_sessions`).
    fn get_info(&self) -> ServerConfig {
        self.info(self.sessions)
    }

    /// 2026-07-28's `server/discover`: always stateless, so without what needs a session.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let versions = self.supported_protocol_versions().into_owned();
        Ok(DiscoverResult::from_server_info(versions, self.info(false)))
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(revisions::REVISIONS)
    }

    /// The guidance sent as instructions is the calling client's: without the lines about
    /// tools it may not call.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        let caller = caller_of(&context)?;
        result.instructions =
            guidance_for(&self.state, &caller.scope()).map(|t| t.trim().to_string());
        Ok(result)
    }

    /// The tools the calling client may call, in catalog order.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller_of(&context)?;
        let scope = caller.scope();
        let all = self.tools.current(&self.state);
        let tools: Vec<Tool> = tool_lists::visible(&self.state, &all, &scope)
            .into_iter()
            .cloned()
            .collect();
        // A session of a configured client hears when a reload changes its tools.
        if let (Caller::Client { .. }, Ok(session)) = (&caller, self.session_of(&context)) {
            self.tool_lists.listed(
                &self.state,
                &self.tools,
                &self.cancel,
                (session, caller.client(), tools.clone()),
                context.peer.clone(),
            );
        }
        let mut result = ListToolsResult::with_all_items(tools);
        revisions::stamp_server_info(&mut result.meta, context.protocol_version());
        Ok(result)
    }

    /// The agent guidance and a usage prompt per tool the caller may call ([`prompts`]).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(prompts::list(&self.state, &caller_of(&context)?.scope()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let scope = caller_of(&context)?.scope();
        prompts::get(&self.state, &scope, &request.name).map(Into::into)
    }

    /// The tool availability resource ([`availability`]).
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(availability::list())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let scope = caller_of(&context)?.scope();
        availability::read(&self.state, &scope, &request.uri).map(Into::into)
    }

    // `resources/subscribe` is what 2025 clients send; rmcp marks it legacy in favour of
    // 2026-07-28's `subscriptions/listen`, which faregate does not serve yet.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        availability::known(&request.uri)?;
        let session = self.session_of(&context)?;
        self.subscribers
            .subscribe(&self.state, &self.cancel, session, context.peer.clone());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        availability::known(&request.uri)?;
        self.subscribers.unsubscribe(&self.session_of(&context)?);
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools
            .current(&self.state)
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context)?;
        // Boxed, and only for a watch tool: the watch store's future is about 11 KB, and inline
        // it would make every held call's future that large (memory per held call,
        // BENCHMARKS.md).
        let scope = caller.scope();
        let watch_tool = crate::agents::watch_tools::tool(&request.name).is_some();
        // Outside the client's scope, a watch tool is refused as any tool is (`-32602`).
        if watch_tool
            && self.state.watches.is_some()
            && !crate::http::calls::watch_tools_offered(&self.state, &scope)
        {
            let allowed = allowed_tools(&self.state, &scope);
            return Err(ErrorData::invalid_params(
                out_of_scope_text(&self.state, &scope, &request.name),
                Some(serde_json::json!({ "allowed_tools": allowed })),
            ));
        }
        if watch_tool
            && let Some(mut out) = Box::pin(watch_tools::call(&self.state, &caller, &request)).await
        {
            revisions::stamp_server_info(&mut out.meta, context.protocol_version());
            return Ok(out.into());
        }
        let tool = match self.state.gateway.tool(&request.name) {
            None => {
                return Err(ErrorData::invalid_params(
                    unknown_tool_text(&self.state, &scope, &request.name),
                    None,
                ));
            }
            Some(tool) if !in_scope(&scope, &tool) => {
                let allowed = allowed_tools(&self.state, &scope);
                return Err(ErrorData::invalid_params(
                    out_of_scope_text(&self.state, &scope, &request.name),
                    Some(serde_json::json!({ "allowed_tools": allowed })),
                ));
            }
            Some(tool) => tool,
        };
        // rmcp hands the request's `_meta` over in the context (and may leave it in the params).
        let meta_of = |key: &str| {
            context
                .meta
                .0
                .0
                .get(key)
                .or_else(|| request.meta.as_ref().and_then(|m| m.0.0.get(key)))
                .cloned()
        };
        let deadline_header = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get(&crate::http::calls::DEADLINE_HEADER))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let arguments = request.arguments.clone().unwrap_or_default();
        let takes_tasks = self.state.jobs.is_some() && tasks::client_takes_tasks(&context);
        let read = agents::mcp::read_call(
            &request.name,
            arguments,
            meta_of,
            deadline_header.as_deref(),
            takes_tasks,
        );
        let mut out = match read {
            Ok((call, options)) => {
                let token = context
                    .meta
                    .get_progress_token()
                    .or_else(|| request.meta.as_ref().and_then(|m| m.get_progress_token()));
                let (steps, listener) = progress::listen(token);
                let run = run_agent_call(&self.state, &caller, call, options, steps);
                let run = progress::reporting(run, listener, &context.peer);
                // A read in flight is cancelled when rmcp cancels its request: the client sent
                // `notifications/cancelled` (in a session), or closed the connection of a
                // stateless request before its answer. Dropping it aborts its provider request
                // and its breaker permit records nothing. A booking, or a background
                // submission, runs to completion.
                let result = if options.mode == CallMode::Interactive && !tool.is_write() {
                    tokio::select! {
                        result = run => result,
                        () = context.ct.cancelled() => return Err(cancelled(&request.name)),
                    }
                } else {
                    run.await
                };
                if options.mode == CallMode::Background
                    && takes_tasks
                    // Boxed, as the watch tools are: a rare step, larger than waiting.
                    && let Some(mut task) = Box::pin(tasks::created(&self.state, &result)).await
                {
                    revisions::stamp_server_info(&mut task.meta, context.protocol_version());
                    return Ok(CallToolResponse::Task(task));
                }
                tasks::tool_result(&result)
            }
            Err(text) => error_result(text),
        };
        revisions::stamp_server_info(&mut out.meta, context.protocol_version());
        Ok(out.into())
    }

    /// The caller's task (its background job), from the shared store.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        // Boxed here and in the two task methods below: a job store's future is about 10 KB,
        // and rmcp's request future is as large as the largest method's, so inline these would
        // make every held `tools/call` that large (memory per held call, BENCHMARKS.md).
        let caller = caller_of(&context)?;
        let mut result = Box::pin(tasks::get(&self.state, &caller, &request.task_id)).await?;
        revisions::stamp_server_info(&mut result.meta, context.protocol_version());
        Ok(result)
    }

    /// 2025-11-25's `tasks/list` and `tasks/result`, which rmcp does not route ([`tasks::custom`]).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let caller = caller_of(&context)?;
        Box::pin(tasks::custom(
            &self.state,
            &caller,
            &request.method,
            request.params,
        ))
        .await
        .map(CustomResult::new)
    }

    /// Cancels the caller's task if its job has not started.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = caller_of(&context)?;
        Box::pin(tasks::cancel(&self.state, &caller, &request.task_id)).await
    }
}

/// The caller the edge authenticated: rmcp hands the HTTP request's parts over in the context.
/// Without them no client is known, and the request is refused rather than answered for a
/// client it may not be.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    let caller = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>());
    caller.cloned().ok_or_else(|| {
        tracing::error!("an MCP request arrived without the caller the edge records");
        ErrorData::internal_error(texts::CLIENT_UNKNOWN, None)
    })
}

/// The answer to a read cancelled in flight, which nobody reads: rmcp drops it after
/// `notifications/cancelled` (as MCP asks), and a stateless request's connection is gone.
fn cancelled(tool: &str) -> ErrorData {
    tracing::info!(tool, "MCP tool call cancelled in flight");
    ErrorData::new(
        rmcp::model::ErrorCode(CANCELLED),
        texts::mcp_cancelled(tool),
        None,
    )
}

/// The JSON-RPC error code of a call cancelled in flight (outside the ranges JSON-RPC and MCP
/// reserve; 499 as in "client closed request").
const CANCELLED: i32 = -31499;

impl Handler {
    /// The server info and capabilities, for requests served in a kept session or not.
    ///
    /// Only what is honoured is advertised. `resources.subscribe` and `tools.listChanged`
    /// promise notifications, which go on a kept session's event stream (`GET /mcp`): a
    /// stateless request has none (its `resources/subscribe` is refused, and a reload's new tool
    /// list reaches no one), and 2026-07-28 would ask for them by `subscriptions/listen`, which
    /// faregate does not serve; so stateless answers advertise neither.
    fn info(&self, kept_session: bool) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed();
        // Tasks are jobs: offered only where there is a job store.
        let mut capabilities = match self.state.jobs {
            Some(_) => builder.enable_tasks().build(),
            None => builder.build(),
        };
        if !kept_session {
            if let Some(resources) = capabilities.resources.as_mut() {
                resources.subscribe = None;
            }
            if let Some(tools) = capabilities.tools.as_mut() {
                tools.list_changed = None;
            }
        }
        let mut info =
            ServerConfig::new(capabilities).with_server_info(revisions::implementation());
        // Where no caller is known (rmcp's server info outside `initialize`), the guidance
        // names no tool at all; `initialize` sends the caller's own.
        if let Some(text) = guidance_for(&self.state, &Scope::nothing()) {
            info = info.with_instructions(text);
        }
        info
    }

    /// The request's MCP session, which a subscription needs: its notifications go to the
    /// session's event stream. Only a request rmcp serves in a session has one: rmcp has then
    /// checked the `Mcp-Session-Id` it carries against the sessions it keeps, while a stateless
    /// request's header is whatever the client wrote (remembering it would let any client grow
    /// the gateway's maps without bound, and answer a subscription nothing will ever be sent to).
    fn session_of(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let in_session = self.sessions
            && context
                .protocol_version()
                .is_none_or(|revision| revision.has_initialize());
        in_session
            .then(|| {
                context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|parts| parts.headers.get("mcp-session-id"))
                    .and_then(|v| v.to_str().ok())
                    .map(String::from)
            })
            .flatten()
            .ok_or_else(|| {
                ErrorData::invalid_request(
                    "resources/subscribe needs an MCP session (a 2025 revision with initialize, and [mcp] legacy_sessions = true): a stateless request has no event stream to send updates to; read faregate://tools/availability instead",
                    None,
                )
            })
    }
}

fn error_result(text: String) -> CallToolResult {
    let mut out = CallToolResult::success(vec![ContentBlock::text(text)]);
    out.is_error = Some(true);
    out
}
