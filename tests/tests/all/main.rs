//! Evo's integration tests: one binary, one module per area.

mod agent;
mod answers;
mod attack;
mod authoring;
mod auto_wasm;
mod browser;
mod calculate;
mod catalogue;
mod chatter;
mod cli;
mod composite;
mod config;
mod console;
mod crash;
mod described;
mod docs;
mod errors;
mod examples;
mod exfil;
mod faults;
mod fetch;
mod figures;
mod file_head;
mod fixture_probe;
mod guests;
mod history_api;
mod js_limits;
mod js_plain_shapes;
mod js_recall;
mod js_text_stats;
mod kernel;
mod layering;
mod llm;
mod local_model;
mod manage;
mod mcp_confirm;
mod memory;
mod metrics;
mod misbehaving;
mod native;
mod nodes;
mod notes;
mod packages;
mod parked;
mod per_run;
mod plain_hostile;
mod plain_io;
mod plain_kinds;
mod preprocess;
mod properties;
mod py_limits;
mod py_plain_shapes;
mod py_recall;
mod py_text_stats;
mod queue;
mod registry;
mod registry_bundles;
mod registry_trust;
mod remote;
mod results;
mod serve;
mod serve_gate;
mod serve_http;
mod serve_stdio;
mod service;
mod shared_functions;
mod short_names;
mod skill_scripts;
mod storage;
mod swapped_memory;
mod text_stats;
mod tool_loop;
mod tools;
mod versions;
mod wording;

/// Fails the build if a skill in `skills-wasm/` has no test module of its own name.
macro_rules! assert_test_exists {
    ($name:ident) => {
        #[expect(unused_imports, reason = "only checks that the module exists")]
        use self::$name as _;
    };
}
evo_tests::foreach_skill!(assert_test_exists);
