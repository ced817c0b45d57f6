//! The healthy search's provider half alone: the captured 62 KB Duffel answer
//! (`benches/load/duffel_offers.json`, the upstream body of the overhead scenario) decoded into
//! the `search_flights` result and written as its JSON text (as the answer writes it), plus `content` once, in a loop, in one
//! process with no HTTP around it. It exists so that a change to the adapter's parsing can be
//! counted on its own (under callgrind, one decode's instructions do not depend on the
//! machine's load) before the whole gateway is profiled with `profile.sh`.
//!
//! `cargo run --release --example decode_cost -- [CALLS] [--json OUT]`: decodes CALLS times
//! (default 1,000) and prints the mean wall-clock time per decode; with `--json OUT` it also
//! writes the result's JSON and content text once to OUT, so two builds can be compared byte
//! for byte. Counting: `valgrind --tool=callgrind target/release/examples/decode_cost 200`,
//! then the total divided by 200 (start-up, the schema compile and the file read are outside
//! the loop but inside the total, so also run it with 0 calls and subtract).

use std::hint::black_box;
use tokio::time::Instant;

use chrono::NaiveDate;
use faregate::providers::duffel;
use faregate::tools::{ArgumentValidator, ToolRequest};

const BODY: &[u8] = include_bytes!("duffel_offers.json");

fn request() -> ToolRequest {
    let spec = faregate::tools::spec("search_flights").expect("search_flights is in the catalog");
    let validator = ArgumentValidator::new(spec).expect("its schema compiles");
    let today = NaiveDate::from_ymd_opt(2026, 1, 1).expect("a date");
    let args =
        serde_json::json!({"origin": "JFK", "destination": "LHR", "departure_date": "2026-12-21"});
    validator
        .check(&args, today, None)
        .expect("the arguments are valid")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut calls: usize = 1_000;
    let mut json_out: Option<String> = None;
    while let Some(a) = args.next() {
        if a == "--json" {
            json_out = args.next();
        } else {
            calls = a.parse().expect("CALLS is a number");
        }
    }
    let request = request();
    let started = Instant::now();
    for _ in 0..calls {
        let output = duffel::decode_response(&request, 200, black_box(BODY))
            .expect("the captured answer decodes");
        black_box(serde_json::to_vec(&output).expect("serializes"));
    }
    if calls > 0 {
        let per = started.elapsed() / calls as u32;
        println!("{calls} decodes, {per:?} per decode (decode, result JSON)");
    }
    if let Some(path) = json_out {
        let output = duffel::decode_response(&request, 200, BODY).expect("decodes");
        let text = format!(
            "{}\n{}\n",
            serde_json::to_string(&output).expect("serializes"),
            output.content()
        );
        std::fs::write(&path, text).expect("OUT is writable");
    }
}
