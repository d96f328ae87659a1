//! Arbitrary bytes as a pipeline TOML file: parsing must return Ok or Err, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // TODO(lead): switch to `eddy_engine::spec::parse_pipeline_str(text)` once the spec module
    // has it (it was being written in parallel with this target); until then this only fuzzes
    // the TOML layer the spec parser sits on.
    let _parsed: Result<toml::Value, _> = toml::from_str(text);
});
