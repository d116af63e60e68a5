//! Write [Evo](https://github.com/evo-host/evo) skills in Rust.
//!
//! A skill is a type that implements [`Skill`], exported with [`export_skill!`]. The
//! crate turns it into a WebAssembly component built against Evo's WIT contract
//! (`evo:skill@0.2.0`; hosts run components built against 0.1.0 too): input and output are your own serde types, their JSON Schemas are
//! generated with `schemars`, and everything the host offers (calling other skills, the
//! language model, memory, scratch space, events, logs) is a plain Rust function.
//!
//! ```no_run
//! use evo_guest::{Error, JsonSchema, Manifest, Skill};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Input { name: String }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Output { greeting: String }
//!
//! struct Greet;
//!
//! impl Skill for Greet {
//!     type Input = Input;
//!     type Output = Output;
//!
//!     fn manifest() -> Manifest {
//!         Manifest::new("greet", "Greets someone by name.")
//!     }
//!
//!     fn execute(input: Input) -> Result<Output, Error> {
//!         Ok(Output { greeting: format!("Hello, {}!", input.name) })
//!     }
//! }
//!
//! evo_guest::export_skill!(Greet);
//! ```
//!
//! Build it with `evo skill build`: the `skill.wasm` it writes carries its manifest in
//! a custom section, so a host describes the skill without instantiating it, and the
//! schema generator is left out of the component (the manifest is read from a first
//! build and embedded as text in a second, through `EVO_SKILL_MANIFEST`). A plain
//! `cargo build --target wasm32-wasip2 --release` works too: the `.wasm` file in
//! `target/wasm32-wasip2/release/` is the skill, and a host calls its `manifest`
//! export once to read it. The crate README walks from this example to skills that
//! use the host context.
#![deny(missing_docs)]

extern crate self as evo_guest;

pub mod config;
mod context;
mod error;
pub mod http;
mod manifest;

pub use context::{
    LlmRequest, LogLevel, MemoryEntry, StoreOutcome, call, emit, env, llm, llm_with, log, memory,
    remember, scratch, step,
};
pub use error::Error;
pub use manifest::{
    Access, Capabilities, DirRequest, HostPattern, HostRequest, Limits, Manifest, MemoryAccess,
    SecretRequest,
};
pub use schemars::JsonSchema;

/// The WIT package version this SDK builds against.
pub const API_VERSION: &str = env!("EVO_SKILL_API_VERSION");

/// A skill: typed input in, typed output (or an [`Error`]) out.
///
/// Each call runs in a fresh instance, so a skill keeps no state between calls; use
/// [`scratch`] or [`memory`] for that.
pub trait Skill {
    /// The input, deserialized from JSON. Its JSON Schema becomes the skill's input
    /// schema, which the host checks before calling [`Skill::execute`].
    type Input: serde::de::DeserializeOwned + JsonSchema;
    /// The output, serialized to JSON. Its JSON Schema becomes the output schema.
    type Output: serde::Serialize + JsonSchema;

    /// Describes the skill: name, description, and what it needs from the host.
    fn manifest() -> Manifest;

    /// Runs the skill.
    fn execute(input: Self::Input) -> Result<Self::Output, Error>;
}

/// Exports a [`Skill`] implementation as the component's `evo:skill/skill` interface.
///
/// Use it once per crate, at the top level:
///
/// ```ignore
/// evo_guest::export_skill!(MySkill);
/// ```
#[macro_export]
macro_rules! export_skill {
    ($skill:ty) => {
        const _: () = {
            /// Identifies the SDK that built this component (read by `evo` for diagnostics).
            #[unsafe(link_section = "evo:sdk")]
            #[used]
            static EVO_SDK_STAMP: [u8; $crate::__private::SDK_STAMP_LEN] =
                $crate::__private::SDK_STAMP;

            struct EvoExport;

            impl $crate::__private::Guest for EvoExport {
                fn manifest() -> ::std::string::String {
                    // `evo skill build` builds twice: the first build's export gives the
                    // manifest, the second embeds it as text, which leaves the schema
                    // generator out of the component.
                    const EMBEDDED: ::std::option::Option<&str> =
                        ::std::option_env!("EVO_SKILL_MANIFEST");
                    match EMBEDDED {
                        ::std::option::Option::Some(json) => ::std::borrow::ToOwned::to_owned(json),
                        ::std::option::Option::None => {
                            $crate::__private::manifest_json::<$skill>(env!("CARGO_PKG_VERSION"))
                        }
                    }
                }

                fn execute(
                    input: ::std::string::String,
                ) -> ::std::result::Result<$crate::__private::SkillOutput, $crate::__private::SkillError>
                {
                    $crate::__private::execute::<$skill>(&input)
                }
            }

            $crate::__private::bindings::__export_plugin!(EvoExport with_types_in $crate::__private::bindings);
        };
    };
}

/// Writes a message to the host log. The level is optional and defaults to `info`.
///
/// ```no_run
/// evo_guest::log!("parsed {} items", 3);
/// evo_guest::log!(warn, "input had {} empty lines", 2);
/// ```
#[macro_export]
macro_rules! log {
    (trace, $($arg:tt)+) => { $crate::log($crate::LogLevel::Trace, &::std::format!($($arg)+)) };
    (debug, $($arg:tt)+) => { $crate::log($crate::LogLevel::Debug, &::std::format!($($arg)+)) };
    (info, $($arg:tt)+) => { $crate::log($crate::LogLevel::Info, &::std::format!($($arg)+)) };
    (warn, $($arg:tt)+) => { $crate::log($crate::LogLevel::Warn, &::std::format!($($arg)+)) };
    (error, $($arg:tt)+) => { $crate::log($crate::LogLevel::Error, &::std::format!($($arg)+)) };
    ($($arg:tt)+) => { $crate::log($crate::LogLevel::Info, &::std::format!($($arg)+)) };
}

#[doc(hidden)]
pub mod __private {
    //! Support code for the macros; not part of the public API.

    pub use wit_bindgen;

    #[expect(missing_docs, reason = "generated bindings")]
    pub mod bindings {
        wit_bindgen::generate!({
            // The vendored, frozen contract; `API_VERSION` is read from the same file.
            path: "wit/since_v0.2.0",
            world: "evo:skill/plugin",
            pub_export_macro: true,
            export_macro_name: "__export_plugin",
            default_bindings_module: "evo_guest::__private::bindings",
            runtime_path: "evo_guest::__private::wit_bindgen::rt",
        });
    }

    #[expect(missing_docs, reason = "generated bindings")]
    pub mod config_bindings {
        wit_bindgen::generate!({
            path: "wit/wasi-config",
            world: "wasi:config/imports",
            runtime_path: "evo_guest::__private::wit_bindgen::rt",
        });
    }

    pub use bindings::evo::skill::types::{SkillError, SkillOutput};
    pub use bindings::exports::evo::skill::skill::Guest;

    use crate::Skill;

    const SDK_STAMP_STR: &str = concat!(
        "evo-guest ",
        env!("CARGO_PKG_VERSION"),
        "; evo:skill@",
        env!("EVO_SKILL_API_VERSION")
    );

    /// Length of [`SDK_STAMP`].
    pub const SDK_STAMP_LEN: usize = SDK_STAMP_STR.len();

    /// The SDK stamp as a byte array, for a `#[link_section]` static.
    pub const SDK_STAMP: [u8; SDK_STAMP_LEN] = {
        let bytes = SDK_STAMP_STR.as_bytes();
        let mut out = [0u8; SDK_STAMP_LEN];
        let mut i = 0;
        while i < SDK_STAMP_LEN {
            out[i] = bytes[i];
            i += 1;
        }
        out
    };

    /// The manifest of `S` as JSON, with the crate version as the default version.
    pub fn manifest_json<S: Skill>(crate_version: &str) -> String {
        S::manifest().to_json::<S::Input, S::Output>(crate_version)
    }

    /// Decodes the input, runs `S`, and encodes the output.
    pub fn execute<S: Skill>(input: &str) -> Result<SkillOutput, SkillError> {
        let _ = crate::context::take_memory_writes();
        let _ = crate::context::take_steps();
        let input: S::Input = serde_json::from_str(input).map_err(|e| {
            SkillError::InvalidInput(format!("input does not match the schema: {e}"))
        })?;
        let output = S::execute(input).map_err(SkillError::from)?;
        let output = serde_json::to_string(&output)
            .map_err(|e| SkillError::Failed(format!("could not encode the output as JSON: {e}")))?;
        Ok(SkillOutput {
            output,
            memory_writes: crate::context::take_memory_writes(),
            intermediate_steps: crate::context::take_steps(),
        })
    }
}
