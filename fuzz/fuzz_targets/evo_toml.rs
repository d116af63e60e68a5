//! An `evo.toml`: loaded, or CONFIG_INVALID naming the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Err(e) = evo_host::Config::from_toml(std::path::Path::new("evo.toml"), text) {
        assert_eq!(e.code(), "CONFIG_INVALID", "{e}");
        assert!(e.to_string().contains("evo.toml"), "{e}");
    }
});
