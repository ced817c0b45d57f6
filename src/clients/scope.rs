//! [`Scope`]: the tools a client may call, as names or glob patterns (`search_*`), and whether
//! it may book.
//!
//! A scope is checked where a call enters (every protocol) and where tools are listed (every
//! manifest and MCP `tools/list`), so a client never sees a tool it may not call.

use std::sync::{Arc, LazyLock};

/// The tools a client may call. Cheap to clone (shared patterns): every call takes its
/// caller's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Names or patterns; `*` matches any run of characters (also none).
    patterns: Arc<[String]>,
    /// Whether tools that book (write tools) are allowed at all.
    may_book: bool,
}

impl Scope {
    /// Every tool, bookings included: what a key of the flat key list, the admin key and the
    /// local client (auth off) may call.
    pub fn everything() -> Self {
        static EVERYTHING: LazyLock<Scope> = LazyLock::new(|| Scope {
            patterns: Arc::from(["*".to_string()]),
            may_book: true,
        });
        EVERYTHING.clone()
    }

    /// No tool at all: what is said where no caller is known.
    pub fn nothing() -> Self {
        Scope {
            patterns: Arc::from([]),
            may_book: false,
        }
    }

    /// The tools matching `patterns`; bookings only when `may_book`. A pattern holds lower-case
    /// letters, digits, `_` and `*`; the text says what to fix otherwise.
    pub fn new(patterns: Vec<String>, may_book: bool) -> Result<Self, String> {
        for p in &patterns {
            if p.is_empty()
                || !p
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '*')
            {
                return Err(format!(
                    "\"{p}\" is not a tool name or pattern; use lower-case letters, digits, '_' and '*' (e.g. \"search_*\")"
                ));
            }
        }
        Ok(Scope {
            patterns: patterns.into(),
            may_book,
        })
    }

    /// The patterns, as configured.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether the client may book.
    pub fn may_book(&self) -> bool {
        self.may_book
    }

    /// Whether a pattern names `tool` (bookings aside).
    pub fn names(&self, tool: &str) -> bool {
        self.patterns.iter().any(|p| glob(p, tool))
    }

    /// Whether the client may call `tool`; `books` says whether the tool makes bookings.
    pub fn allows(&self, tool: &str, books: bool) -> bool {
        (!books || self.may_book) && self.names(tool)
    }
}

/// `*` matches any run of characters; everything else matches itself.
///
/// Without collecting the pattern's parts: every call's scope check runs this, and the usual
/// pattern (`*`, or a tool's name) needs no allocation to decide.
fn glob(pattern: &str, text: &str) -> bool {
    let Some((first, after_first)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    // `after_first` is `middle*…*last`, or `last` alone.
    let (middle, last) = match after_first.rsplit_once('*') {
        Some((middle, last)) => (Some(middle), last),
        None => (None, after_first),
    };
    for part in middle.into_iter().flat_map(|m| m.split('*')) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        for (pattern, tool, matches) in [
            ("search_flights", "search_flights", true),
            ("search_flights", "search_flights_x", false),
            ("search_*", "search_hotels", true),
            ("search_*", "book_flight", false),
            ("*", "anything", true),
            ("*_flight", "book_flight", true),
            ("*_flight", "book_flights", false),
            ("get_*_status", "get_flight_status", true),
            ("get_*_status", "get_status", false),
            ("a*a", "a", false),
            ("a*a", "aa", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "axbxc", true),
            ("a*b*c", "acb", false),
            ("*_*", "book_flight", true),
            ("*_*", "book", false),
            ("a**b", "ab", true),
            ("*a*a", "aa", true),
            ("*a*a", "a", false),
        ] {
            assert_eq!(glob(pattern, tool), matches, "{pattern} vs {tool}");
        }
    }

    #[test]
    fn bookings_need_may_book() {
        let reads = Scope::new(vec!["*".into()], false).unwrap_or_else(|e| panic!("{e}"));
        assert!(reads.allows("search_flights", false));
        assert!(!reads.allows("book_flight", true));
        assert!(!reads.allows("book_hotel", true));
        let booker = Scope::new(vec!["book_*".into()], true).unwrap_or_else(|e| panic!("{e}"));
        assert!(booker.allows("book_flight", true));
        assert!(booker.allows("book_hotel", true));
        let flights =
            Scope::new(vec!["book_flight".into()], true).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !flights.allows("book_hotel", true),
            "naming one booking tool names only it"
        );
        assert!(!booker.allows("search_flights", false));
        assert!(Scope::everything().allows("book_flight", true));
    }

    #[test]
    fn bad_patterns_say_what_to_write() {
        let why = Scope::new(vec!["Search Flights".into()], false).err();
        assert!(why.is_some_and(|w| w.contains("lower-case letters")));
        assert!(Scope::new(vec![String::new()], false).is_err());
    }
}
