//! Says at build time (debug builds, i.e. `cargo test`) when the PostgreSQL half of the job
//! store tests will check nothing, because a passing test's own output is hidden.

fn main() {
    println!("cargo:rerun-if-env-changed=FAREGATE_TEST_POSTGRES_URL");
    println!("cargo:rerun-if-changed=build.rs");
    let debug = std::env::var("PROFILE").is_ok_and(|p| p == "debug");
    if debug && std::env::var_os("FAREGATE_TEST_POSTGRES_URL").is_none() {
        println!(
            "cargo:warning=FAREGATE_TEST_POSTGRES_URL is not set: the PostgreSQL job-store tests (the conformance suite's PostgreSQL half and the fleet test) will pass without checking anything. .ci/run sets it to postgres://postgres@127.0.0.1:5432/test."
        );
    }
}
