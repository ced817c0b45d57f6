//! `[[maintenance]]`: scheduled maintenance windows, one breaker key (tool × provider) each.
//!
//! ```toml
//! [[maintenance]]                 # once
//! tool = "search_flights"
//! provider = "duffel"
//! start = "2026-12-05T02:00:00Z"  # RFC 3339; an offset is allowed and converted to UTC
//! end = "2026-12-05T04:00:00Z"
//! reason = "Duffel's announced API upgrade"
//!
//! [[maintenance]]                 # every week
//! tool = "book_flight"
//! provider = "duffel"
//! weekly = "sunday"               # or "sun"
//! at = "02:00"                    # UTC
//! lasts = "2h"                    # under a week
//! reason = "Duffel's weekly maintenance"
//! ```
//!
//! Every problem is reported with the entry's key and the breaker it names: an end not after
//! its start, a tool that is not configured, a provider that does not serve the tool, a weekday
//! that is none, both or neither of the two forms.

use std::time::Duration;

use chrono::{DateTime, NaiveTime, Utc};

use super::model::ToolConfig;
use super::reader::Section;
use crate::maintenance::{When, Window, parse_weekday};

/// A week: a weekly window must be shorter, or it would never end.
const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

/// The `[[maintenance]]` entries as read: each entry's breaker key (tool and provider, when
/// both are strings), for the check against the tools, and the windows well formed.
#[derive(Debug, Default)]
pub(super) struct Maintenance {
    /// Entry index, tool and provider of every entry that names both, well formed or not: a
    /// mistake in its times must not hide a tool that is not configured.
    pub(super) keys: Vec<(usize, String, String)>,
    /// The well-formed windows.
    pub(super) windows: Vec<Window>,
}

/// Reads every `[[maintenance]]` entry.
pub(super) fn read_maintenance(root: &Section<'_>) -> Maintenance {
    let mut out = Maintenance::default();
    for (i, s) in root.tables("maintenance").into_iter().enumerate() {
        let tool = s.required_string("tool", "\"search_flights\"");
        let provider = s.required_string("provider", "\"duffel\"");
        if let (Some(tool), Some(provider)) = (&tool, &provider) {
            out.keys.push((i, tool.clone(), provider.clone()));
        }
        if let Some(window) = read_window(&s, tool, provider) {
            out.windows.push(window);
        }
        s.finish();
    }
    out
}

fn read_window(s: &Section<'_>, tool: Option<String>, provider: Option<String>) -> Option<Window> {
    let reason = s.required_string("reason", "\"Duffel's announced API upgrade\"");
    if reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
        s.error(
            "reason",
            "is empty; say why, in words a traveller may hear, e.g. \"Duffel's announced API upgrade\"",
        );
    }
    // Every key is asked (no short circuit), so none is reported as unknown.
    let [start, end, weekly, at, lasts] =
        ["start", "end", "weekly", "at", "lasts"].map(|k| s.has(k));
    let once = start || end;
    let weekly = weekly || at || lasts;
    let when = match (once, weekly) {
        (true, true) => {
            s.error(
                "",
                "give either start and end (once) or weekly, at and lasts (every week), not both",
            );
            None
        }
        (false, false) => {
            s.error(
                "",
                "say when: start and end (RFC 3339, e.g. \"2026-12-05T02:00:00Z\"), or weekly, at and lasts (e.g. \"sunday\", \"02:00\", \"2h\")",
            );
            None
        }
        (true, false) => read_once(s),
        (false, true) => read_weekly(s),
    };
    let reason = reason.filter(|r| !r.trim().is_empty())?;
    Some(Window {
        tool: tool?,
        provider: provider?,
        when: when?,
        reason: reason.trim().to_string(),
    })
}

fn read_once(s: &Section<'_>) -> Option<When> {
    let instant = |key: &'static str| {
        let text = s.required_string(key, "\"2026-12-05T02:00:00Z\"")?;
        match DateTime::parse_from_rfc3339(&text) {
            Ok(t) => Some(t.with_timezone(&Utc)),
            Err(e) => {
                s.error(
                    key,
                    format!(
                        "\"{text}\" is not an RFC 3339 time ({e}); write e.g. \"2026-12-05T02:00:00Z\""
                    ),
                );
                None
            }
        }
    };
    let (start, end) = (instant("start"), instant("end"));
    let (start, end) = (start?, end?);
    if end <= start {
        s.error(
            "end",
            format!(
                "{} is not after start {}; a window ends after it starts",
                end.to_rfc3339(),
                start.to_rfc3339()
            ),
        );
        return None;
    }
    // Kept, since a reload must not refuse a file only because time passed, but said: a window
    // over before the gateway started holds nothing, and is most likely a mistyped year.
    let now = crate::clock::utc_now();
    if end <= now {
        s.warning(
            "end",
            format!(
                "{} has passed, so this window will never hold; correct its dates or delete it",
                end.to_rfc3339()
            ),
        );
    }
    Some(When::Once { start, end })
}

fn read_weekly(s: &Section<'_>) -> Option<When> {
    let day = s.required_string("weekly", "\"sunday\"").and_then(|d| {
        let day = parse_weekday(&d);
        if day.is_none() {
            s.error(
                "weekly",
                format!(
                    "\"{d}\" is not a day of the week; write monday, tuesday, wednesday, thursday, friday, saturday or sunday (or mon … sun)"
                ),
            );
        }
        day
    });
    let at = s.required_string("at", "\"02:00\"").and_then(|t| {
        let at = NaiveTime::parse_from_str(&t, "%H:%M")
            .or_else(|_| NaiveTime::parse_from_str(&t, "%H:%M:%S"))
            .ok();
        if at.is_none() {
            s.error(
                "at",
                format!("\"{t}\" is not a time of day; write HH:MM in UTC, e.g. \"02:00\""),
            );
        }
        at
    });
    let lasts = match s.duration("lasts") {
        None if !s.has("lasts") => {
            s.error(
                "lasts",
                "is missing; say how long each window lasts, e.g. \"2h\"",
            );
            None
        }
        None => None,
        Some(d) if d.is_zero() || d >= WEEK => {
            s.error(
                "lasts",
                "must be longer than zero and shorter than a week, e.g. \"2h\"",
            );
            None
        }
        Some(d) => Some(d),
    };
    Some(When::Weekly {
        day: day?,
        at: at?,
        lasts: lasts?,
    })
}

/// Each window must name a configured tool and one of that tool's providers: a typo would
/// otherwise schedule maintenance for a breaker that does not exist, silently.
pub(super) fn check_maintenance(
    root: &Section<'_>,
    maintenance: &Maintenance,
    tools: &[ToolConfig],
) {
    for (i, tool, provider) in &maintenance.keys {
        let key = format!("{tool}/{provider}");
        match tools.iter().find(|t| t.name == *tool) {
            None => root.error(
                &format!("maintenance[{i}].tool"),
                format!(
                    "{key}: \"{tool}\" is not a configured tool; the tools are: {}",
                    tools
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Some(t) if !t.providers.contains(provider) => root.error(
                &format!("maintenance[{i}].provider"),
                format!(
                    "{key}: {tool} is not served by \"{provider}\"; its providers are: {}",
                    t.providers.join(", ")
                ),
            ),
            Some(_) => {}
        }
    }
}
