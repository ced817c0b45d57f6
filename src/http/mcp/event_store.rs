//! The bounded event store behind resumable MCP streams: every server-sent event of a session
//! gets an id, and a client that lost its stream reconnects with `Last-Event-ID` and is sent
//! what it missed.
//!
//! Why: a tool call can take seconds (a slow provider, a fallback), and a client whose
//! connection drops in that time (a proxy's idle timeout, a laptop changing networks) would
//! otherwise never see the answer, though the call ran. rmcp assigns the ids and replays through
//! this store ([`EventStore`]); without one it keeps only the open streams' events, so an answer
//! sent on a request's stream just before the connection dropped is lost.
//!
//! The store is in memory, in this process, like the sessions it serves (`[mcp]
//! legacy_sessions`; a stateless request answers JSON, not a stream, so it has nothing to
//! resume). It is bounded twice, by event count and by the events' serialized size, the oldest
//! going first, so a burst of large results cannot grow it without limit; a `Last-Event-ID` that
//! has been evicted (or never existed) replays nothing. Ids are UUIDv7 strings: rmcp looks an
//! event up by its id alone, not by session, so an id must not be guessable, or one client could
//! read another's answers by counting.
//!
//! Unguessable is not enough: an event id travels where a session id does (a proxy's log, a
//! browser's devtools), and rmcp replays it to any session that names it. So each stream has an
//! owner, the client its first event was sent to ([`BoundedEventStore::claim`], from the
//! middleware that sees the response go out, `session_owners`), and that middleware refuses a
//! `Last-Event-ID` of a stream another client owns ([`BoundedEventStore::owner`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::clients::ClientName;

use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream,
};

/// Events kept at most.
const MAX_EVENTS: usize = 4096;
/// Serialized bytes of the kept events' messages at most.
const MAX_BYTES: usize = 32 * 1024 * 1024;

/// The store: the most recent events of every stream of this process, oldest first.
#[derive(Debug)]
pub(super) struct BoundedEventStore {
    inner: Mutex<Kept>,
    max_events: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Kept {
    events: VecDeque<Stored>,
    bytes: usize,
    /// The client each stream's events were sent to; streams with no event kept are dropped
    /// once the map outgrows the events.
    owners: HashMap<Arc<str>, ClientName>,
}

/// Whose stream an event id is of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Owner {
    /// No event of that id is kept: it replays nothing.
    Unknown,
    /// Kept, but none of its stream's events was seen going out to a client.
    Unclaimed,
    /// The client its stream's events were sent to.
    Client(ClientName),
}

#[derive(Debug)]
struct Stored {
    id: String,
    stream: Arc<str>,
    /// The event as sent, with its id.
    event: ServerSseMessage,
    bytes: usize,
}

impl Default for BoundedEventStore {
    fn default() -> Self {
        BoundedEventStore::with_bounds(MAX_EVENTS, MAX_BYTES)
    }
}

impl BoundedEventStore {
    fn with_bounds(max_events: usize, max_bytes: usize) -> Self {
        BoundedEventStore {
            inner: Mutex::default(),
            max_events,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keep(&self, stream: &str, event: &ServerSseMessage) -> EventId {
        let id = uuid::Uuid::now_v7().to_string();
        let bytes = event
            .message
            .as_ref()
            .and_then(|m| serde_json::to_string(m.as_ref()).ok())
            .map_or(0, |s| s.len());
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        let mut kept = self.lock();
        kept.bytes += bytes;
        kept.events.push_back(Stored {
            id: id.clone(),
            stream: Arc::from(stream),
            event,
            bytes,
        });
        while kept.events.len() > self.max_events || kept.bytes > self.max_bytes {
            match kept.events.pop_front() {
                Some(gone) => kept.bytes -= gone.bytes,
                None => break,
            }
        }
        if kept.owners.len() > kept.events.len() * 2 + 16 {
            let Kept { events, owners, .. } = &mut *kept;
            owners.retain(|stream, _| events.iter().any(|e| &e.stream == stream));
        }
        id
    }

    /// Records `client` as the owner of the stream of event `id`, which was just sent to it;
    /// a stream keeps its first owner.
    pub(super) fn claim(&self, id: &str, client: &ClientName) {
        let mut kept = self.lock();
        let Some(stream) = kept
            .events
            .iter()
            .find(|e| e.id == id)
            .map(|e| Arc::clone(&e.stream))
        else {
            return;
        };
        kept.owners.entry(stream).or_insert_with(|| client.clone());
    }

    /// Whose stream event `id` is of.
    pub(super) fn owner(&self, id: &str) -> Owner {
        let kept = self.lock();
        let Some(event) = kept.events.iter().find(|e| e.id == id) else {
            return Owner::Unknown;
        };
        kept.owners
            .get(&event.stream)
            .map_or(Owner::Unclaimed, |c| Owner::Client(c.clone()))
    }

    /// The events of `last`'s stream after it, in order; none when `last` is not kept.
    fn after(&self, last: &str) -> Vec<ServerSseMessage> {
        let kept = self.lock();
        let Some(at) = kept.events.iter().position(|e| e.id == last) else {
            return Vec::new();
        };
        let stream = Arc::clone(&kept.events[at].stream);
        kept.events
            .iter()
            .skip(at + 1)
            .filter(|e| e.stream == stream)
            .map(|e| e.event.clone())
            .collect()
    }
}

#[async_trait::async_trait]
impl EventStore for BoundedEventStore {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        Ok(self.keep(stream_id, event))
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        Ok(Box::pin(futures::stream::iter(self.after(last_event_id))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmptyResult, NumberOrString, ServerJsonRpcMessage, ServerResult};

    fn answer(id: i64) -> ServerSseMessage {
        ServerSseMessage::from_message(ServerJsonRpcMessage::response(
            ServerResult::EmptyResult(EmptyResult {}),
            NumberOrString::Number(id),
        ))
    }

    fn ids(events: &[ServerSseMessage]) -> Vec<Option<String>> {
        events.iter().map(|e| e.event_id.clone()).collect()
    }

    #[test]
    fn replays_only_the_later_events_of_the_same_stream_with_their_ids() {
        let store = BoundedEventStore::default();
        let first = store.keep("a", &answer(1));
        let other = store.keep("b", &answer(2));
        let second = store.keep("a", &answer(3));
        let third = store.keep("a", &answer(4));
        assert_ne!(first, other);
        assert_eq!(
            ids(&store.after(&first)),
            [Some(second), Some(third.clone())]
        );
        assert!(store.after(&third).is_empty(), "nothing after the last");
        assert!(store.after(&other).is_empty(), "b has nothing later");
        assert!(store.after("0/1").is_empty(), "an id never issued");
    }

    #[test]
    fn the_oldest_events_go_first_by_count_and_by_size() {
        let store = BoundedEventStore::with_bounds(2, usize::MAX);
        let first = store.keep("a", &answer(1));
        let second = store.keep("a", &answer(2));
        store.keep("a", &answer(3));
        assert!(store.after(&first).is_empty(), "evicted: replays nothing");
        assert_eq!(store.after(&second).len(), 1);

        let one = serde_json::to_string(
            answer(1)
                .message
                .as_deref()
                .unwrap_or_else(|| panic!("a message")),
        )
        .map_or(0, |s| s.len());
        let store = BoundedEventStore::with_bounds(100, 2 * one);
        let first = store.keep("a", &answer(1));
        let second = store.keep("a", &answer(2));
        store.keep("a", &answer(3));
        assert!(store.after(&first).is_empty(), "over the byte bound");
        assert_eq!(store.after(&second).len(), 1);
        assert_eq!(store.lock().bytes, 2 * one);
    }

    #[test]
    fn a_stream_belongs_to_the_client_its_first_event_went_to() {
        let store = BoundedEventStore::default();
        let alpha = ClientName::stored("alpha");
        let first = store.keep("a", &answer(1));
        assert_eq!(store.owner(&first), Owner::Unclaimed);
        store.claim(&first, &alpha);
        let later = store.keep("a", &answer(2));
        assert_eq!(store.owner(&later), Owner::Client(alpha.clone()));
        store.claim(&later, &ClientName::stored("beta"));
        assert_eq!(
            store.owner(&first),
            Owner::Client(alpha),
            "a stream keeps its first owner"
        );
        assert_eq!(store.owner("never-issued"), Owner::Unknown);
    }

    #[test]
    fn ids_are_not_counters() {
        let store = BoundedEventStore::default();
        let id = store.keep("a", &answer(1));
        assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    }
}
