//! Pipeline definitions come from clients (`eddy pipeline apply`, the admin API's PUT):
//! parsing (YAML or JSON) must refuse bad ones with an error and never panic or blow up
//! (aliases, nesting), and a parsed definition must survive the catalog's JSON document
//! unchanged. Run: `cargo fuzz run pipeline_definition fuzz/corpus/pipeline_definition`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use eddy_pipelines::Pipeline;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = Pipeline::parse(text) else {
        return;
    };
    let back = Pipeline::from_document(&p.to_document()).expect("round trip");
    assert_eq!(back, p);
    let _ = p.check_deployable();
});
