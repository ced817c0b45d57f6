//! Reads `tools/*.toml`: one file per tool, its policy merged over `[defaults]`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::bindings::read_bindings;
use super::files::Files;
use super::http_tools::read_http_tool;
use super::model::*;
use super::policies::{read_breaker, read_retry};
use super::problems::Problems;
use super::reader::{Section, parse_toml};
use crate::breaker::BreakerBuilder;
use crate::policy::RetryPolicy;
use crate::tools::{self, Access};

/// Every tool file of `dir`, read and checked; `None` when the directory cannot be listed
/// (said once, in `problems`).
#[allow(clippy::too_many_arguments)]
pub(super) fn read_tools(
    files: &dyn Files,
    dir: &Path,
    known_tools: &[&str],
    providers: &BTreeMap<String, Option<&'static str>>,
    prompts: &BTreeMap<String, String>,
    breaker_defaults: &BreakerBuilder,
    retry_defaults: &RetryPolicy,
    problems: &RefCell<Problems>,
) -> Option<Vec<ToolConfig>> {
    let paths = match files.list(dir, ".toml") {
        Ok(p) => p,
        Err(e) => {
            problems.borrow_mut().error(
                dir,
                "",
                format!("cannot list the tools directory: {e}; set server.tools_dir"),
            );
            return None;
        }
    };
    let mut tools: Vec<ToolConfig> = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for path in paths {
        let Some(table) = parse_toml(files, &path, problems) else {
            continue;
        };
        let s = Section::root(&path, &table, problems);
        if let Some(tool) = read_tool(
            &s,
            known_tools,
            providers,
            prompts,
            breaker_defaults,
            retry_defaults,
        ) {
            if let Some(first) = seen.get(&tool.name) {
                s.error(
                    "name",
                    format!(
                        "tool \"{}\" is configured twice (also in {first}); keep one file per tool",
                        tool.name
                    ),
                );
            } else {
                seen.insert(tool.name.clone(), path.display().to_string());
                tools.push(tool);
            }
        }
        s.finish();
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Some(tools)
}

/// A `providers` list to write, from the providers `faregate.toml` declares that can serve the
/// tool (of kind `http` for a tool from configuration, of another kind for a catalog tool).
fn providers_example(
    providers: &BTreeMap<String, Option<&'static str>>,
    configured: bool,
) -> String {
    let fitting: Vec<&str> = providers
        .iter()
        .filter(|(_, kind)| kind.is_none_or(|kind| (kind == "http") == configured))
        .map(|(name, _)| name.as_str())
        .collect();
    match (fitting.first(), configured) {
        (Some(first), _) => format!(
            "for example `providers = [\"{first}\"]` (those faregate.toml declares that can serve it: {})",
            fitting.join(", ")
        ),
        (None, true) => "and declare one of kind \"http\" in faregate.toml first ([providers.<name>] with kind = \"http\" and base_url)".into(),
        (None, false) => "for example `providers = [\"duffel\"]`, declared in faregate.toml".into(),
    }
}

/// One tool file. `providers` are the declared providers, each with its kind when its table
/// could be read.
fn read_tool(
    s: &Section<'_>,
    known_tools: &[&str],
    providers: &BTreeMap<String, Option<&'static str>>,
    prompts: &BTreeMap<String, String>,
    breaker_defaults: &BreakerBuilder,
    retry_defaults: &RetryPolicy,
) -> Option<ToolConfig> {
    let name = s.required_string("name", "\"search_flights\"");
    let configured = match s.string("kind").as_deref() {
        None => false,
        Some("http") => true,
        Some(other) => {
            s.error(
                "kind",
                format!("unknown tool kind \"{other}\"; write kind = \"http\" for a tool from configuration, or leave it out for a catalog tool"),
            );
            false
        }
    };
    if let Some(n) = &name
        && !is_tool_name(n)
    {
        s.error(
            "name",
            format!(
                "\"{n}\" cannot be a tool name: OpenAI, Anthropic, Gemini and MCP all accept only names matching ^[a-zA-Z_][a-zA-Z0-9_-]{{0,63}}$ (a letter or _ first, then letters, digits, _ or -, at most 64 characters)"
            ),
        );
    } else if let Some(n) = &name
        && configured
        && known_tools.contains(&n.as_str())
    {
        s.error(
            "name",
            format!(
                "\"{n}\" is a catalog tool; give the tool from configuration a name of its own"
            ),
        );
    } else if let Some(n) = &name
        && !configured
        && !known_tools.contains(&n.as_str())
    {
        s.error(
            "name",
            format!(
                "unknown tool \"{n}\"; known tools: {} (or declare a tool from configuration with kind = \"http\")",
                known_tools.join(", ")
            ),
        );
    }
    let http = if configured {
        read_http_tool(s, name.as_deref())
    } else {
        None
    };
    let bindings = read_bindings(s, name.as_deref(), configured);
    let write = match &http {
        Some(h) => h.definition.access == Access::Write,
        None => name
            .as_deref()
            .and_then(tools::spec)
            .is_some_and(|spec| spec.access == Access::Write),
    };
    let description = s.required_string("description", "\"Search flights …\"");
    if let Some(d) = &description
        && d.trim().len() < 20
    {
        s.error(
            "description",
            "too short for a model to act on; say what the tool does, what it needs and what it returns",
        );
    }
    let tool_providers = match s.strings("providers") {
        Some(list) if list.is_empty() => {
            s.error(
                "providers",
                format!(
                    "name at least one provider, {}",
                    providers_example(providers, configured)
                ),
            );
            None
        }
        Some(list) => {
            let mut ok = true;
            for (i, p) in list.iter().enumerate() {
                // Checked here rather than with the tools that could be read, so a file with
                // other problems still hears of it.
                if let Some(Some(kind)) = providers.get(p)
                    && configured
                    && *kind != "http"
                {
                    s.error(
                        &format!("providers[{i}]"),
                        format!(
                            "provider \"{p}\" is of kind {kind}, which serves only catalog tools; a tool from configuration needs a provider of kind \"http\""
                        ),
                    );
                }
                if !providers.contains_key(p) {
                    ok = false;
                    let names: Vec<&str> = providers.keys().map(String::as_str).collect();
                    s.error(
                        &format!("providers[{i}]"),
                        format!(
                            "unknown provider \"{p}\"; providers configured in faregate.toml: {}",
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ),
                    );
                }
            }
            ok.then_some(list)
        }
        None => {
            s.error(
                "providers",
                format!("missing; {}", providers_example(providers, configured)),
            );
            None
        }
    };
    let timeout = s.duration("timeout").unwrap_or(Duration::from_secs(8));
    let deadline = s.duration("deadline").unwrap_or(Duration::from_secs(12));
    if timeout.is_zero() {
        s.error("timeout", "must be longer than zero, e.g. \"8s\"");
    }
    if deadline < timeout {
        s.error(
            "deadline",
            format!(
                "the whole-call deadline must be at least the per-attempt timeout ({})",
                humantime::format_duration(timeout)
            ),
        );
    }
    let max_concurrent = s
        .integer("max_concurrent", 1, 100_000)
        .map(|n| n as u32)
        .unwrap_or(64);
    let stale_for = memory_duration(s, "stale_for");
    let watch_min_interval = s.duration("watch_min_interval");
    if let Some(v) = watch_min_interval {
        if v < Duration::from_secs(1) {
            s.error("watch_min_interval", "must be at least \"1s\"; e.g. \"5m\"");
        }
        if let Some(n) = &name
            && write
        {
            s.error(
                "watch_min_interval",
                format!("{n} is a write tool and is never watched (a watch calls read-only tools only); remove watch_min_interval"),
            );
        }
    }
    let fresh_for = read_fresh_for(s, name.as_deref(), write);
    // Said only where the file sets stale_for itself: a tool that keeps no stale answers by
    // default may still answer repeats from memory for a moment.
    if fresh_for > stale_for && s.has("stale_for") {
        s.warning(
            "fresh_for",
            format!(
                "\"{}\" is longer than stale_for (\"{}\"): an answer this tool may not serve as stale after {} is repeated as fresh, without its age in the text a model reads, for up to {}; keep fresh_for at most stale_for",
                humantime::format_duration(fresh_for),
                humantime::format_duration(stale_for),
                humantime::format_duration(stale_for),
                humantime::format_duration(fresh_for),
            ),
        );
    }
    let breaker = match s.table("breaker") {
        Some(b) => {
            let v = read_breaker(&b, breaker_defaults);
            b.finish();
            v
        }
        None => breaker_defaults.clone(),
    };
    // A breaker that cannot be built was reported where its keys were set.
    let breaker = breaker.build().ok();
    let retry = match s.table("retry") {
        Some(r) => {
            let v = read_retry(&r, retry_defaults);
            r.finish();
            v
        }
        None => *retry_defaults,
    };
    let fallback = match s.table("fallback") {
        Some(f) => {
            let file = f.required_string("interactive", "\"search_flights.unavailable.md\"");
            if let Some(file) = &file
                && !prompts.contains_key(file)
            {
                f.error(
                    "interactive",
                    format!(
                        "no prompt file \"{file}\" in the prompts directory; files there: {}",
                        prompts.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            f.finish();
            file
        }
        None => {
            s.error(
                "fallback",
                "missing [fallback] table; add `[fallback]` with `interactive = \"<tool>.unavailable.md\"`",
            );
            None
        }
    };
    Some(ToolConfig {
        file: s.file().to_path_buf(),
        name: name?,
        description: description?,
        providers: tool_providers?,
        timeout,
        deadline,
        max_concurrent,
        stale_for,
        watch_min_interval,
        fresh_for,
        breaker: breaker?,
        retry,
        fallback_interactive: fallback?,
        http: if configured { Some(http?) } else { None },
        bindings,
    })
}

/// How long answers are kept in memory at most (`stale_for`, `fresh_for`): a year.
const MEMORY_MAX: Duration = Duration::from_secs(365 * 24 * 3600);

/// `stale_for` or `fresh_for`: zero when absent, refused over [`MEMORY_MAX`] (the memory's
/// cache cannot hold an entry for a thousand years, and an answer a year old is neither fresh
/// nor a useful stale answer).
fn memory_duration(s: &Section<'_>, key: &'static str) -> Duration {
    let kept = s.duration(key).unwrap_or(Duration::ZERO);
    if kept > MEMORY_MAX {
        s.error(
            key,
            format!(
                "{} is longer than a year; a remembered answer that old is of no use: use at most \"365d\"",
                humantime::format_duration(kept)
            ),
        );
        return Duration::ZERO;
    }
    kept
}

/// The tool's `fresh_for`: zero when absent. A write tool is refused one: answering a booking
/// from memory would tell a second traveller about the first one's booking, and never book.
fn read_fresh_for(s: &Section<'_>, name: Option<&str>, write: bool) -> Duration {
    let fresh_for = memory_duration(s, "fresh_for");
    if write && !fresh_for.is_zero() {
        s.error(
            "fresh_for",
            format!(
                "{} is a write tool (a booking, or an http tool with access = \"write\"): a write's answer is never repeated from memory, since each call must reach the provider; remove `fresh_for` from this file",
                name.unwrap_or_default()
            ),
        );
        return Duration::ZERO;
    }
    fresh_for
}

/// Whether `name` matches `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`: the tool names that every agent
/// protocol faregate speaks accepts (OpenAI and Anthropic refuse dots, Gemini and MCP allow
/// them; Vertex wants a letter or `_` first; all cap at 64).
pub fn is_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
