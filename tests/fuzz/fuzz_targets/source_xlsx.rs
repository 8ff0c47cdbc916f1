#![no_main]

// Each binary uses one of the shared targets.
#[allow(dead_code)]
#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::source_and_prepare("xlsx", data));
