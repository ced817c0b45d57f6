//! The tool result envelope: the one answer shape every protocol adapter renders from.
//!
//! It is the gateway's external contract (the native call endpoint's body, a job's result, a
//! callback's body), so it is serializable here; the protocol adapters (OpenAI, Anthropic, MCP)
//! map it to their own shapes without changing the text a model reads. Each status has its own
//! constructor, which sets exactly the fields that status carries.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::shared_text::SharedText;

/// What happened to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fresh data.
    Ok,
    /// The last good result for the same arguments, with its age.
    Stale,
    /// The tool cannot answer now; `content` is its fallback text.
    Unavailable,
    /// The provider refused the request for a reason the model can fix, or the gateway
    /// refused it for the client's own doing (a spent budget; its share of the tool, with
    /// [`Envelope::limit`] set).
    Rejected,
    /// The arguments do not match the tool's schema.
    InvalidArguments,
    /// Accepted for background processing.
    Queued,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Stale => "stale",
            Status::Unavailable => "unavailable",
            Status::Rejected => "rejected",
            Status::InvalidArguments => "invalid_arguments",
            Status::Queued => "queued",
        }
    }

    /// Parses the wire name.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Status::Ok,
            Status::Stale,
            Status::Unavailable,
            Status::Rejected,
            Status::InvalidArguments,
            Status::Queued,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }

    /// Whether protocols should raise their error flag (`isError`, `is_error`).
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Status::Unavailable | Status::Rejected | Status::InvalidArguments
        )
    }
}

/// One tool result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Envelope {
    /// The caller's id for the call, echoed (generated when the caller gave none).
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// What happened.
    pub status: Status,
    /// Text a model can read and relay.
    pub content: String,
    /// The structured result (`ok`, `stale`), else null.
    pub data: Option<Data>,
    /// Age of stale data in seconds.
    pub stale_age_s: Option<u64>,
    /// For an `ok` answered from memory (the tool's `fresh_for`) instead of a provider: the
    /// result's age in seconds, never more than `fresh_for`; null for an answer a provider just
    /// gave.
    pub cached_age_s: Option<u64>,
    /// When it is worth calling again, in seconds (for `unavailable`).
    pub retry_after_s: Option<u64>,
    /// The state of the breaker that decided the call (`closed`, `open`, …).
    pub breaker: String,
    /// The background job, for `queued`.
    pub job_id: Option<String>,
    /// The provider that answered, or was tried last.
    pub provider: Option<String>,
    /// The per-client limit that refused the call, for a call refused because its client
    /// holds its share of the tool (`client_share_of_tool`), as the edge's 429 names its
    /// limits; absent from every other envelope (not serialized, so their shape is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// The end of `content` that a remembered result repeats, with its JSON escaping made once
    /// ([`SharedText`]): a stale or `fresh_for` answer's kilobytes of text are not escaped
    /// again on every call. Not data: never serialized, and not compared.
    #[serde(skip)]
    pub(crate) content_tail: ContentTail,
}

/// What every envelope says about its call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallInfo {
    /// The caller's id for the call (generated when the caller gave none).
    pub call_id: String,
    /// The tool called.
    pub tool: String,
    /// The state of the breaker that decided the call (`closed`, `open`, …); empty when no
    /// breaker did (a queued call, a background job that did not reach a provider).
    pub breaker: String,
}

impl CallInfo {
    /// A call no breaker decided.
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>) -> Self {
        CallInfo {
            call_id: call_id.into(),
            tool: tool.into(),
            breaker: String::new(),
        }
    }
}

impl Envelope {
    /// Fresh data from `provider`.
    pub fn ok(info: CallInfo, content: String, data: Data, provider: String) -> Self {
        Envelope {
            data: Some(data),
            provider: Some(provider),
            ..Self::bare(info, Status::Ok, content)
        }
    }

    /// Fresh data from memory: `provider`'s answer to the same arguments, `age_s` old (within
    /// the tool's `fresh_for`).
    pub fn cached(
        info: CallInfo,
        content: String,
        data: Data,
        age_s: u64,
        provider: String,
    ) -> Self {
        Envelope {
            cached_age_s: Some(age_s),
            ..Self::ok(info, content, data, provider)
        }
    }

    /// The last good result for the same arguments, `age_s` old, first fetched from
    /// `provider`; calling again is worth it in `retry_after_s`.
    pub fn stale(
        info: CallInfo,
        content: String,
        data: Data,
        age_s: u64,
        retry_after_s: Option<u64>,
        provider: String,
    ) -> Self {
        Envelope {
            data: Some(data),
            stale_age_s: Some(age_s),
            retry_after_s,
            provider: Some(provider),
            ..Self::bare(info, Status::Stale, content)
        }
    }

    /// No answer now: `content` says why and what to do; calling again is worth it in
    /// `retry_after_s`, when that is known; `provider` was tried last, if one was.
    pub fn unavailable(
        info: CallInfo,
        content: String,
        retry_after_s: Option<u64>,
        provider: Option<String>,
    ) -> Self {
        Envelope {
            retry_after_s,
            provider,
            ..Self::bare(info, Status::Unavailable, content)
        }
    }

    /// `provider` refused the request for a reason the model can fix.
    pub fn rejected(info: CallInfo, content: String, provider: String) -> Self {
        Envelope {
            provider: Some(provider),
            ..Self::bare(info, Status::Rejected, content)
        }
    }

    /// Refused by the per-client `limit` before any provider was asked (the client's own
    /// doing: `content` says which limit and how to keep under it); calling again is worth it
    /// in `retry_after_s`.
    pub fn limited(info: CallInfo, content: String, limit: &str, retry_after_s: u64) -> Self {
        Envelope {
            limit: Some(limit.to_string()),
            retry_after_s: Some(retry_after_s),
            ..Self::bare(info, Status::Rejected, content)
        }
    }

    /// The arguments are wrong; `content` names every field to fix. No breaker decided such a
    /// call, whichever way it came (interactive, background, a booking's reused key), so
    /// `breaker` is empty, as the OpenAPI document says.
    pub fn invalid_arguments(info: CallInfo, content: String) -> Self {
        let info = CallInfo {
            breaker: String::new(),
            ..info
        };
        Self::bare(info, Status::InvalidArguments, content)
    }

    /// Accepted as background job `job_id`.
    pub fn queued(info: CallInfo, content: String, job_id: String) -> Self {
        Envelope {
            job_id: Some(job_id),
            ..Self::bare(info, Status::Queued, content)
        }
    }

    /// The fields every status has, and nothing else.
    fn bare(info: CallInfo, status: Status, content: String) -> Self {
        Envelope {
            call_id: info.call_id,
            tool: info.tool,
            status,
            content,
            data: None,
            stale_age_s: None,
            cached_age_s: None,
            retry_after_s: None,
            breaker: info.breaker,
            job_id: None,
            provider: None,
            limit: None,
            content_tail: ContentTail::default(),
        }
    }

    /// Marks `tail` as the end of `content`, so that serializing this envelope copies its
    /// escaped form instead of escaping it again (checked when it is written: a `content` that
    /// does not end with it is escaped as usual).
    pub(crate) fn with_content_tail(mut self, tail: &SharedText) -> Self {
        self.content_tail = ContentTail(Some(tail.clone()));
        self
    }
}

impl Envelope {
    /// An envelope as a job stored it ([`Envelope`] serialized), read back so that a protocol
    /// renders a background result exactly as it renders an interactive one; `None` when the
    /// value is not an envelope.
    pub fn from_stored(value: &Value) -> Option<Self> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let number = |key: &str| value.get(key).and_then(Value::as_u64);
        Some(Envelope {
            call_id: text("call_id").unwrap_or_default(),
            tool: text("tool")?,
            status: Status::parse(value.get("status")?.as_str()?)?,
            content: text("content")?,
            data: value
                .get("data")
                .filter(|d| !d.is_null())
                .map(|d| Data::new(d.clone())),
            stale_age_s: number("stale_age_s"),
            cached_age_s: number("cached_age_s"),
            retry_after_s: number("retry_after_s"),
            breaker: text("breaker").unwrap_or_default(),
            job_id: text("job_id"),
            provider: text("provider"),
            limit: text("limit"),
            content_tail: ContentTail::default(),
        })
    }

    /// The envelope as JSON bytes, as the native endpoint sends it; `data` is copied from its
    /// serialized form, not serialized again (a stale answer repeats the same few kilobytes on
    /// every call).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        // Sized once: serde_json's own buffer starts at 128 bytes and grows (a realloc and a
        // copy each time) through a stale answer's kilobytes of `content` and `data`.
        let mut bytes = Vec::with_capacity(self.json_len_estimate());
        // Strings, integers and JSON text that serde_json wrote: this cannot fail; the
        // fallback keeps a bug from becoming a panic.
        let written = match self.content_tail.split(&self.content) {
            Some((head, tail)) => self.write_with_escaped_tail(&mut bytes, head, tail),
            None => serde_json::to_writer(&mut bytes, self),
        };
        match written {
            Ok(()) => bytes,
            Err(_) => b"{}".to_vec(),
        }
    }

    /// The derived serialization's bytes, field for field in the same order (a unit test
    /// compares the two), with `content` written as `head` escaped now and `tail` copied
    /// already escaped.
    fn write_with_escaped_tail(
        &self,
        out: &mut Vec<u8>,
        head: &str,
        tail: &SharedText,
    ) -> serde_json::Result<()> {
        fn field<T: Serialize + ?Sized>(
            out: &mut Vec<u8>,
            key: &str,
            value: &T,
        ) -> serde_json::Result<()> {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            serde_json::to_writer(&mut *out, value)
        }
        out.extend_from_slice(b"{\"call_id\":");
        write_str(out, &self.call_id)?;
        out.extend_from_slice(b",\"tool\":");
        write_str(out, &self.tool)?;
        field(out, "status", &self.status)?;
        out.extend_from_slice(b",\"content\":");
        write_str(out, head)?;
        out.pop(); // the closing quote of `head`: the tail goes inside the same string
        out.extend_from_slice(tail.escaped().as_bytes());
        out.push(b'"');
        field(out, "data", &self.data)?;
        field(out, "stale_age_s", &self.stale_age_s)?;
        field(out, "cached_age_s", &self.cached_age_s)?;
        field(out, "retry_after_s", &self.retry_after_s)?;
        field(out, "breaker", &self.breaker)?;
        field(out, "job_id", &self.job_id)?;
        field(out, "provider", &self.provider)?;
        if let Some(limit) = &self.limit {
            field(out, "limit", limit)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// About the serialized length: the texts, room for some escapes, and the keys and the
    /// short fields.
    fn json_len_estimate(&self) -> usize {
        let text = self.content.len() + self.call_id.len() + self.tool.len();
        let data = self.data.as_ref().map_or(0, |d| d.raw().get().len());
        text + text / 16 + data + 256
    }
}

/// The pre-escaped end of an envelope's `content`, if it has one ([`Envelope::content_tail`]).
/// Every two compare equal: it is how `content` gets written, not part of what it says.
#[derive(Clone, Default)]
pub(crate) struct ContentTail(Option<SharedText>);

impl ContentTail {
    /// `content` as the part to escape now and the tail escaped before, when `content` still
    /// ends with the tail (the field is public, so it is checked: a comparison of bytes costs a
    /// fraction of escaping them).
    pub(crate) fn split<'a>(&'a self, content: &'a str) -> Option<(&'a str, &'a SharedText)> {
        let tail = self.0.as_ref()?;
        let head = content.strip_suffix(tail.as_str())?;
        Some((head, tail))
    }
}

impl PartialEq for ContentTail {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for ContentTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "escaped" } else { "none" })
    }
}

/// A call's structured result, serialized once when it is made.
///
/// Cheap to clone (an `Arc`): a fresh result and its copy in the stale cache share it, and every
/// stale answer reuses it. A provider's typed result is written straight to JSON text
/// ([`Data::serialize`]); the [`Value`] it reads as (`Deref`, [`Data::value`]) is built only
/// when something asks for it (an MCP `structuredContent`, a test), because the native endpoint
/// and the agent protocols copy the text. It serializes as that text, and
/// [`Envelope::to_json_bytes`] copies it.
///
/// An object's keys keep the order they were written in (a typed result's field order); the
/// `Value` has them sorted, as `serde_json::Value` always does. JSON objects are unordered, so
/// both say the same.
#[derive(Clone)]
pub struct Data(Arc<DataInner>);

struct DataInner {
    json: Box<RawValue>,
    value: OnceLock<Value>,
}

impl Data {
    /// Wraps a result, serializing it once.
    pub fn new(value: Value) -> Self {
        let json = to_raw(&value);
        Data(Arc::new(DataInner {
            json,
            value: OnceLock::from(value),
        }))
    }

    /// Serializes a typed result to JSON text without building a `Value`.
    pub fn serialize<T: Serialize + ?Sized>(result: &T) -> Self {
        Data(Arc::new(DataInner {
            json: to_raw(result),
            value: OnceLock::new(),
        }))
    }

    /// The result as a JSON value (parsed from its text the first time it is asked for).
    pub fn value(&self) -> &Value {
        self.0.value.get_or_init(|| {
            // The text was written by serde_json, so it parses; `null` keeps a bug from
            // becoming a panic.
            serde_json::from_str(self.0.json.get()).unwrap_or(Value::Null)
        })
    }

    /// The result as serialized JSON.
    pub fn raw(&self) -> &RawValue {
        &self.0.json
    }
}

/// `result` as JSON text; `null` if it does not serialize (only a map with non-string keys
/// would fail, and no result has one: the fallback keeps a bug from becoming a panic).
fn to_raw<T: Serialize + ?Sized>(result: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(result)
        .unwrap_or_else(|_| RawValue::from_string("null".into()).unwrap_or_default())
}

impl From<Value> for Data {
    fn from(value: Value) -> Self {
        Data::new(value)
    }
}

impl Deref for Data {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.value() == other.value()
    }
}

impl PartialEq<Value> for Data {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

/// The compact JSON text.
impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.json.get())
    }
}

/// Serializes as its JSON text (a `serde_json` serializer copies it; `to_value` parses it).
impl Serialize for Data {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.json.serialize(serializer)
    }
}

/// `text` as a JSON string, as serde_json writes it: copied between its quotes when nothing in
/// it needs escaping (the usual call id, tool name and fallback head), which a scan for the
/// three kinds of byte JSON escapes finds faster than serde_json's escaper copies byte by
/// byte (BENCHMARKS.md, fast-fail); escaped by serde_json otherwise.
fn write_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if !needs_escaping(text.as_bytes()) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, text)
    }
}

/// Whether any byte of `bytes` is one JSON escapes: a control character, a quote or a
/// backslash. Sixteen bytes at a time with no early exit inside a block, so the compiler can
/// test a block with vector instructions; a byte-by-byte `all` cannot be (BENCHMARKS.md,
/// fast-fail: 2.5k instructions per fallback call before, 0.73k after).
fn needs_escaping(bytes: &[u8]) -> bool {
    let escaped = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    let mut blocks = bytes.chunks_exact(16);
    let in_a_block = blocks
        .by_ref()
        .any(|block| block.iter().fold(false, |found, &b| found | escaped(b)));
    in_a_block || blocks.remainder().iter().any(|&b| escaped(b))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stale() -> Envelope {
        Envelope::stale(
            CallInfo {
                breaker: "open".into(),
                ..CallInfo::new("fg_1", "search_flights")
            },
            "STALE \"quoted\"\n".into(),
            Data::new(json!({"offers": [{"id": "off_1", "total": "12.30"}], "n": 1})),
            240,
            Some(30),
            "duffel".into(),
        )
    }

    #[test]
    fn json_bytes_read_back_as_the_envelope_they_were() {
        let info = || CallInfo::new("c", "search_hotels");
        for env in [
            stale(),
            Envelope::ok(
                info(),
                "1 hotel".into(),
                Data::new(json!([1])),
                "duffel".into(),
            ),
            Envelope::cached(
                info(),
                "1 hotel".into(),
                Data::new(json!([1])),
                42,
                "duffel".into(),
            ),
            Envelope::unavailable(info(), "down".into(), Some(10), Some("duffel".into())),
            Envelope::unavailable(info(), "given up".into(), None, None),
            Envelope::rejected(info(), "no".into(), "amadeus".into()),
            Envelope::invalid_arguments(info(), "bad".into()),
            Envelope::queued(info(), "queued".into(), "job_1".into()),
            Envelope::limited(info(), "too many".into(), "client_share_of_tool", 1),
        ] {
            let sent: Value = serde_json::from_slice(&env.to_json_bytes()).expect("JSON");
            assert_eq!(Envelope::from_stored(&sent), Some(env));
        }
    }

    /// The block scan says what a byte-by-byte one says, for every escaped byte anywhere.
    #[test]
    fn the_block_scan_finds_every_byte_json_escapes_wherever_it_is() {
        let naive = |bytes: &[u8]| bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        // Lengths below, at and past one and two blocks; each kind of byte at every position,
        // in a block and in the remainder.
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 40] {
            let plain = vec![b'a'; len];
            assert!(!needs_escaping(&plain), "{len} plain bytes");
            for at in 0..len {
                for byte in [0x00, 0x1f, b'"', b'\\', 0x20, 0x7f, b'/'] {
                    let mut text = plain.clone();
                    text[at] = byte;
                    assert_eq!(
                        needs_escaping(&text),
                        naive(&text),
                        "byte {byte:#x} at {at} of {len}"
                    );
                }
            }
        }
    }

    /// A stale answer's and a `fresh_for` repeat's bytes, with the remembered text escaped once
    /// and copied, are exactly what serializing the envelope writes, whatever the text holds.
    #[test]
    fn a_pre_escaped_content_tail_writes_the_same_bytes() {
        let remembered = SharedText::from(
            "2 offers: \"quoted\" \\ back\nslash, tab\there, \u{1} control, caf\u{e9} \u{1F6EB}.",
        );
        let head = "STALE RESULT, 4 minutes old: \"search_flights\"\n";
        let stale = Envelope::stale(
            CallInfo::new("c\"1", "search_flights"),
            format!("{head}{}", remembered.as_str()),
            Data::new(json!({"offers": [{"id": "off_1"}]})),
            240,
            Some(30),
            "duffel".into(),
        )
        .with_content_tail(&remembered);
        let cached = Envelope::cached(
            CallInfo::new("c2", "search_flights"),
            remembered.to_string(),
            Data::new(json!([1])),
            12,
            "duffel".into(),
        )
        .with_content_tail(&remembered);
        // Texts that need no escaping are copied as they are (non-ASCII and DEL included).
        let plain_head = "STALE RESULT, 4 minutes old, caf\u{e9} \u{7f}: ";
        let plain = Envelope::stale(
            CallInfo::new("c\u{e9}3", "search_flights"),
            format!("{plain_head}{}", remembered.as_str()),
            Data::new(json!([])),
            240,
            Some(30),
            "duffel".into(),
        )
        .with_content_tail(&remembered);
        // The content changed after the tail was marked: written the ordinary way.
        let mut changed = cached.clone();
        changed.content.push_str(" and more");
        for env in [&stale, &cached, &stale, &changed, &plain] {
            let derived = serde_json::to_vec(env).expect("serializes");
            assert_eq!(
                String::from_utf8(env.to_json_bytes()).expect("UTF-8"),
                String::from_utf8(derived).expect("UTF-8")
            );
        }
        assert!(stale.content_tail.split(&stale.content).is_some());
        assert!(cached.content_tail.split(&cached.content).is_some());
        assert!(changed.content_tail.split(&changed.content).is_none());
        // A tail the content does not end with is not used.
        let other = Envelope::invalid_arguments(CallInfo::new("c", "t"), "bad".into())
            .with_content_tail(&remembered);
        assert!(other.content_tail.split(&other.content).is_none());
    }

    #[test]
    fn each_status_carries_exactly_its_fields() {
        let info = || CallInfo::new("c", "search_hotels");
        let queued = Envelope::queued(info(), "queued".into(), "job_1".into());
        assert_eq!(
            serde_json::to_value(&queued).expect("serializes"),
            json!({
                "call_id": "c", "tool": "search_hotels", "status": "queued", "content": "queued",
                "data": null, "stale_age_s": null, "cached_age_s": null, "retry_after_s": null,
                "breaker": "",
                "job_id": "job_1", "provider": null,
            })
        );
        let stale = serde_json::to_value(stale()).expect("serializes");
        assert_eq!(
            (
                &stale["stale_age_s"],
                &stale["retry_after_s"],
                &stale["breaker"]
            ),
            (&json!(240), &json!(30), &json!("open"))
        );
        let unavailable = Envelope::unavailable(info(), "down".into(), Some(10), None);
        assert_eq!((unavailable.data, unavailable.job_id), (None, None));
        // Only a call a per-client limit refused names it; every other envelope has no `limit`.
        let limited = Envelope::limited(info(), "too many".into(), "client_share_of_tool", 1);
        assert_eq!(
            serde_json::to_value(&limited).expect("serializes"),
            json!({
                "call_id": "c", "tool": "search_hotels", "status": "rejected",
                "content": "too many", "data": null, "stale_age_s": null, "cached_age_s": null,
                "retry_after_s": 1, "breaker": "", "job_id": null, "provider": null,
                "limit": "client_share_of_tool",
            })
        );
        // Written with a pre-escaped tail, it says the same.
        let tail = SharedText::from("many");
        let limited = limited.with_content_tail(&tail);
        assert_eq!(
            String::from_utf8(limited.to_json_bytes()).expect("UTF-8"),
            String::from_utf8(serde_json::to_vec(&limited).expect("serializes")).expect("UTF-8")
        );
    }

    #[test]
    fn a_stored_envelope_reads_back_as_it_was() {
        let envelope = Envelope::stale(
            CallInfo::new("c1", "search_flights"),
            "2 flights.".into(),
            json!({"offers": [{"offer_id": "o1"}]}).into(),
            42,
            Some(30),
            "duffel".into(),
        );
        let stored = serde_json::to_value(&envelope).unwrap_or_default();
        assert_eq!(Envelope::from_stored(&stored), Some(envelope));
        assert_eq!(Envelope::from_stored(&json!({"status": "ok"})), None);
        assert_eq!(
            Envelope::from_stored(&json!({"tool": "t", "content": "c", "status": "fine"})),
            None
        );
    }

    #[test]
    fn data_reads_displays_and_compares_as_its_value() {
        let value = json!({"b": [1, 2], "a": "x"});
        let data = Data::new(value.clone());
        assert_eq!(data["b"][1], 2);
        assert_eq!(data.to_string(), value.to_string());
        assert_eq!(data, value);
        assert_eq!(data.clone(), Data::from(value.clone()));
        assert_eq!(serde_json::to_value(&data).expect("serializes"), value);
    }

    #[test]
    fn a_typed_result_is_written_in_field_order_and_reads_as_its_value() {
        #[derive(Serialize)]
        struct Offer {
            total: &'static str,
            id: &'static str,
        }
        let data = Data::serialize(&Offer {
            total: "12.30",
            id: "off_1",
        });
        assert_eq!(data.to_string(), r#"{"total":"12.30","id":"off_1"}"#);
        let value = json!({"id": "off_1", "total": "12.30"});
        assert_eq!(data, value);
        assert_eq!(data["id"], "off_1");
        assert_eq!(serde_json::to_value(&data).expect("serializes"), value);
        let envelope = Envelope::ok(
            CallInfo::new("c", "price_flight_offer"),
            "1 offer".into(),
            data,
            "duffel".into(),
        );
        let sent = String::from_utf8(envelope.to_json_bytes()).expect("UTF-8");
        assert!(
            sent.contains(r#""data":{"total":"12.30","id":"off_1"},"#),
            "{sent}"
        );
    }
}
