//! Arbitrary bytes as a pipeline TOML file through the whole spec parser and validator (and,
//! when valid, the output schema and the query plan): Ok or Err, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = eddy_engine::spec::parse_pipeline_str(text) {
        let _schema = p.output_schema();
        // A pipeline that validates must plan: a planning error would be a validation gap.
        let plan = eddy_engine::plan::QueryPlan::new(&p);
        assert!(plan.is_ok(), "valid pipeline does not plan: {plan:?}");
    }
});
