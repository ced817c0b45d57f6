//! Where the clients' share of a tool still lets one client take all of it.
//!
//! While several clients call, a client holds at most `ceil(max_concurrent × share)` of a
//! tool's slots, and at most `client_max_concurrent_calls` calls in flight in all. That leaves
//! the other clients something of every tool, except where both allow one client every slot:
//! a bulkhead of one slot (no share of one slot leaves anything), `[limits]
//! client_share_of_tool = 1`, or a share that rounds up to the whole bulkhead. There, one
//! client's burst still answers the others `unavailable` for a healthy tool, so `faregate
//! check` and `serve` say so, naming the tool and the fix. (A client's in-flight cap above a
//! tool's bulkhead is no such case any more: the share bounds it per tool.)

use super::model::Config;

/// One warning per tool whose every slot one client may hold, when `clients` clients call
/// (none for one client: there is nobody to starve).
pub fn unshared_tools(config: &Config, clients: usize) -> Vec<String> {
    if clients < 2 {
        return Vec::new();
    }
    let share = config.limits.client_share_of_tool;
    // The most calls in flight any client may have: `[limits]`' (the flat list's keys), or a
    // `[[clients]]` entry's own; unset is no cap.
    let mut caps = std::iter::once(config.limits.client_max_concurrent_calls).chain(
        config
            .clients
            .iter()
            .map(|c| c.limits.client_max_concurrent_calls),
    );
    let cap = caps.try_fold(0, |most, cap| cap.map(|cap| most.max(cap)));
    config
        .tools
        .iter()
        .filter_map(|tool| {
            let slots = tool.max_concurrent;
            let held = share.slots(slots).min(cap.unwrap_or(u32::MAX));
            if held < slots {
                return None;
            }
            let why = if slots == 1 {
                "a bulkhead of one slot cannot be shared".to_string()
            } else if share.is_whole() {
                "[limits] client_share_of_tool = 1 shares nothing".to_string()
            } else {
                format!("ceil({slots} × client_share_of_tool {share}) is all of them")
            };
            // The smallest bulkhead this share leaves the others a slot of, if any.
            let enough = (slots + 1..=100_000).find(|n| share.slots(*n) < *n);
            let fix = match (enough, slots > 1 && !share.is_whole()) {
                (Some(n), true) => format!(
                    "raise max_concurrent to {n} or more, or lower [limits] client_share_of_tool"
                ),
                (Some(n), false) => format!("raise max_concurrent to {n} or more"),
                (None, _) => "lower [limits] client_share_of_tool below 1".to_string(),
            };
            Some(format!(
                "{}: max_concurrent: one client may hold all {slots} of {}'s concurrent calls ({why}), so while it does every other client is answered unavailable; {fix}",
                tool.file.display(),
                tool.name
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::ToolShare;
    use crate::config::tests::MapFiles;

    /// The shipped configuration with `share`, `in_flight` as `[limits]`' cap and
    /// `get_flight_status`'s bulkhead of `slots`.
    fn config(share: f64, in_flight: Option<u32>, slots: u32) -> Config {
        let mut config = MapFiles::defaults()
            .load()
            .unwrap_or_else(|e| panic!("{e}"));
        config.limits.client_share_of_tool =
            ToolShare::new(share).unwrap_or_else(|e| panic!("{e}"));
        config.limits.client_max_concurrent_calls = in_flight;
        for tool in &mut config.tools {
            if tool.name == "get_flight_status" {
                tool.max_concurrent = slots;
            }
        }
        config
    }

    #[test]
    fn the_shipped_configuration_leaves_every_tool_to_every_client() {
        // An in-flight cap of 32 over get_flight_status's 16: harmless with the share.
        assert_eq!(
            unshared_tools(&config(0.5, Some(32), 16), 5),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_tool_one_client_may_fill_is_named_with_its_fix() {
        let one_slot = unshared_tools(&config(0.5, Some(32), 1), 2);
        assert_eq!(
            one_slot,
            [
                "/cfg/tools/get_flight_status.toml: max_concurrent: one client may hold all 1 of get_flight_status's concurrent calls (a bulkhead of one slot cannot be shared), so while it does every other client is answered unavailable; raise max_concurrent to 2 or more"
            ]
        );
        let shipped = config(1.0, None, 16);
        let whole = unshared_tools(&shipped, 2);
        assert!(
            whole.iter().any(|w| w.contains(
                "all 16 of get_flight_status's concurrent calls ([limits] client_share_of_tool = 1 shares nothing), so while it does every other client is answered unavailable; lower [limits] client_share_of_tool below 1"
            )),
            "{whole:#?}"
        );
        assert_eq!(whole.len(), shipped.tools.len(), "every tool: {whole:#?}");
        let rounded = unshared_tools(&config(0.9, None, 4), 2);
        assert_eq!(
            rounded,
            [
                "/cfg/tools/get_flight_status.toml: max_concurrent: one client may hold all 4 of get_flight_status's concurrent calls (ceil(4 × client_share_of_tool 0.9) is all of them), so while it does every other client is answered unavailable; raise max_concurrent to 10 or more, or lower [limits] client_share_of_tool"
            ]
        );
    }

    #[test]
    fn an_in_flight_cap_under_the_bulkhead_or_one_client_is_no_foot_gun() {
        assert!(
            unshared_tools(&config(1.0, Some(8), 16), 2).is_empty(),
            "8 in flight leave every shipped tool's others a slot"
        );
        assert!(unshared_tools(&config(1.0, None, 16), 1).is_empty());
    }
}
