//! The clients' shares of the tools, as one dispatch pass claims within them.
//!
//! While several clients call, a client holds at most its share of a tool's concurrent calls on
//! a replica (`clients::ToolShare`), and a job beyond it is refused and requeued without an
//! attempt. Claimed blind, a client's backlog would be claimed, refused and written back over
//! and over while the client holds its share (a row write, a claim slot and a count of
//! `faregate_client_limited_total` each, every pass). So a pass tells the store, for each tool
//! with a share, how many of a client's jobs it may take: none of a client that holds its whole
//! share here, and no more than the slots a client has left
//! ([`ShareRoom`](crate::jobs::store::ShareRoom)).
//!
//! The share's refusal stays the safety net for what a pass cannot see: a slot taken between
//! the claim and the run (an interactive call of the same client), or a job an earlier pass
//! claimed whose run has not taken its slot yet.

use crate::clients::ClientName;
use crate::jobs::store::ShareRoom;

/// A tool's share on this replica now, when its clients are held to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::jobs) struct ShareNow {
    /// How many of the tool's calls one client may hold.
    pub(in crate::jobs) slots: u32,
    /// The slots each client that holds some holds now.
    pub(in crate::jobs) held: Vec<(ClientName, u32)>,
}

/// The room the clients' shares leave, for the claims of one pass.
#[derive(Debug, Default)]
pub(super) struct PassShares {
    /// `(tool, slots)`, for the tools with a share.
    slots: Vec<(String, u32)>,
    /// `(client, tool, slots left)`, for the clients holding some of a tool's slots.
    left: Vec<(ClientName, String, u32)>,
}

impl PassShares {
    /// The room of the tools `shares` names (`(tool, its share now)`).
    pub(super) fn of<'a>(shares: impl Iterator<Item = (&'a str, &'a ShareNow)>) -> Self {
        let mut pass = PassShares::default();
        for (tool, share) in shares {
            pass.slots.push((tool.to_string(), share.slots));
            for (client, held) in &share.held {
                let left = share.slots.saturating_sub(*held);
                pass.left.push((client.clone(), tool.to_string(), left));
            }
        }
        pass
    }

    /// What a claim may take now.
    pub(super) fn room(&self) -> ShareRoom<'_> {
        ShareRoom {
            slots: &self.slots,
            left: &self.left,
        }
    }
}
