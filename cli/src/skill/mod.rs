//! `evo skill …`: run, install and inspect skills.

mod author;
mod grants;
mod info;
mod install;
mod list;
mod registry;
mod run;

pub(crate) use author::{Lang, new};
pub(crate) use list::first_sentence;
pub(crate) use run::read_input;

use std::path::PathBuf;

use clap::Subcommand;

use super::args::{self, Grants, Sources};
use super::{Failure, Globals};

#[derive(Debug, Subcommand)]
pub(crate) enum SkillCommand {
    /// Run a skill once and print its output.
    ///
    /// SKILL is a built-in tool or installed skill name (`calculate`), a skill directory
    /// (SKILL.md, skill.json, skill.wasm, prompt.md), or a `.wasm` component. The call goes
    /// through the same gates as an agent's: input defaults and validation, the skill's
    /// timeout and retries, output validation.
    Run {
        /// The skill: a name, a directory, or a `.wasm` file.
        skill: String,
        /// The input as JSON; `-` reads it from stdin.
        #[arg(long, short, default_value = "{}", value_name = "JSON")]
        input: String,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
    /// Build the skill project in DIR into DIR/skill.wasm with its language's toolchain
    /// (cargo, ComponentizeJS, componentize-py); says what to install when one is
    /// missing. The component carries its manifest, so hosts describe it without
    /// running it; a Rust project is built twice, the second time without the schema
    /// generator.
    Build {
        /// The project (made by `evo new`).
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// The component to write (default DIR/skill.wasm).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Build the project in DIR and run the cases in DIR/tests/*.json through the host:
    /// `{"input": {…}, "output": {…}}` or `{"input": {…}, "error": "CODE"}`.
    Test {
        /// The project.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Test the skill.wasm already built.
        #[arg(long)]
        no_build: bool,
        #[command(flatten)]
        grants: Grants,
    },
    /// Write an installable ZIP of the built skill in DIR: one directory named like the
    /// skill, with its skill.wasm (and README.md, SKILL.md if present).
    Pack {
        /// The project.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// The ZIP to write (default DIR/NAME.zip).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Install a skill from a ZIP archive, a directory, a bare .wasm component, or an OCI
    /// registry into the data directory.
    ///
    /// The skill is checked and loaded as the host will load it before anything is
    /// written; the capabilities it asks for are shown and recorded, and it will not be
    /// given more later without a reinstall.
    ///
    /// `oci://REGISTRY/REPOSITORY[:TAG|@sha256:DIGEST]` installs from an OCI registry:
    /// every blob is checked against its digest, signatures against `[trust] keys` in
    /// evo.toml, and the digest installed is pinned in the lock file (evo.lock).
    Install {
        /// A ZIP archive holding one skill directory, a skill directory (SKILL.md,
        /// skill.json, skill.wasm, prompt.md or scripts/execute.js), a .wasm component
        /// (installed under the name its manifest gives), or oci://REFERENCE.
        #[arg(required_unless_present = "locked")]
        source: Option<String>,
        /// Replace an installed skill of the same name.
        #[arg(long)]
        overwrite: bool,
        /// Keep a Node script skill a script (a subprocess), without trying to run it
        /// as a component.
        #[arg(long)]
        native: bool,
        /// Install exactly the digests the lock file pins (all of them without
        /// SOURCE); a tag that moved since is reported, not followed.
        #[arg(long)]
        locked: bool,
        /// Install under NAME instead of the name the skill gives itself (say, beside
        /// a built-in tool or another skill of that name). Its files are not changed;
        /// grants, `[skill_config]`, the lock file and `evo skill update` follow NAME.
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
    },
    /// Publish a skill to an OCI registry: a .wasm component (an Evo skill or a plain
    /// component) as a Wasm OCI artifact other Wasm tools pull, a skill directory or
    /// ZIP as Evo's skill artifact. It is checked as an install would check it first.
    Publish {
        /// A .wasm component, a built skill project, a skill directory, or a skill ZIP.
        path: PathBuf,
        /// Where: REGISTRY/REPOSITORY:TAG (with or without oci://).
        reference: String,
        /// Sign it with this ECDSA P-256 private key (PEM, PKCS#8; `evo skill keygen`
        /// makes one): pushed beside it as cosign 3 and cosign 2 write theirs (a Sigstore
        /// bundle among its referrers, and the `.sig` tag).
        #[arg(long, value_name = "KEY")]
        sign: Option<PathBuf>,
    },
    /// Follow the tags skills were installed from: a tag that names another digest now
    /// is pulled (signature checked), installed, and pinned in the lock file.
    Update {
        /// The skills (default: every skill installed from a registry).
        names: Vec<String>,
    },
    /// Make a key pair to sign published skills with: PATH.key (private, PKCS#8 PEM,
    /// readable only by you) and PATH.pub (public: what `[trust] keys` lists).
    Keygen {
        /// Where, without extension (e.g. keys/alice).
        path: PathBuf,
    },
    /// Change an installed skill's description (only the description can be changed;
    /// the rest of its SKILL.md stays byte for byte).
    UpdateDescription {
        /// The skill's name.
        name: String,
        /// The new description, one line.
        description: String,
    },
    /// Find installed skills for a request, by keywords and embeddings together (the default
    /// embedder matches wording; `evo memory reindex --embedder minilm` adds meaning).
    Search {
        /// What you want done, in plain words.
        query: String,
        /// How many results.
        #[arg(long, short = 'n', default_value_t = 5)]
        limit: usize,
        /// Search the configured registries instead of what is installed: the
        /// repositories they list (`/v2/_catalog`) by name, title, description and
        /// keywords. Listings are kept for 10 minutes.
        #[arg(long)]
        registry: bool,
        /// With --registry: read the listings again now.
        #[arg(long, requires = "registry")]
        refresh: bool,
    },
    /// Show what a skill asks for, its own entry in evo.toml ([grants.skill.NAME]) and
    /// what it holds.
    Grants {
        /// The skill's name.
        name: String,
    },
    /// Grant a skill more, by name: written to its own entry ([grants.skill.NAME]) in
    /// evo.toml. A skill that asks gets what it asks for within its entry; a plain
    /// component with no manifest gets all of it. A running `evo serve` is changed
    /// through its API (POST /v1/skills/NAME/grants), not by this.
    #[command(after_help = "Examples:\n  \
        evo skill grant notes --allow-memory read-write\n  \
        evo skill grant fs --dir ./docs::/data:ro\n  \
        evo skill grant weather --allow-host https://api.weather.example --allow-secret WEATHER_KEY")]
    Grant {
        /// The skill's name.
        name: String,
        #[command(flatten)]
        values: args::GrantFlags,
    },
    /// Take away what a skill was granted by name: the same flags as `grant`; a
    /// directory by its guest path alone (`--dir /data`), `--allow-memory` with any level.
    Revoke {
        /// The skill's name.
        name: String,
        #[command(flatten)]
        values: args::GrantFlags,
    },
    /// Remove an installed skill.
    Uninstall {
        /// The skill's name.
        name: String,
    },
    /// List the skills available: built-in tools, installed skills, and skill directories.
    List {
        /// Only names containing this.
        #[arg(long)]
        name: Option<String>,
        /// Only skills with this tag (repeat for all of several).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Page to show, from 1 (with --limit).
        #[arg(long, default_value_t = 1)]
        page: usize,
        /// Skills per page.
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        sources: Sources,
    },
    /// Show per-skill call statistics (all runs that used this data directory), or with
    /// --installs what is installed by tag and by day and week.
    Stats {
        /// Only this skill.
        skill: Option<String>,
        /// Install statistics instead of call statistics.
        #[arg(long, conflicts_with = "skill")]
        installs: bool,
    },
    /// Show a skill's manifest, input and output schemas, limits, and what it would be
    /// granted.
    Info {
        /// The skill: a name, a directory, or a `.wasm` file.
        skill: String,
        #[command(flatten)]
        sources: Sources,
        #[command(flatten)]
        grants: Grants,
    },
}

pub(crate) async fn run(command: SkillCommand, globals: &Globals) -> Result<(), Failure> {
    match command {
        SkillCommand::Run {
            skill,
            input,
            sources,
            grants,
        } => run::run(globals, &skill, input, &sources, &grants).await,
        SkillCommand::Build { dir, out } => author::build(globals, &dir, out.as_deref()).await,
        SkillCommand::Test {
            dir,
            no_build,
            grants,
        } => author::test(globals, &dir, no_build, &grants).await,
        SkillCommand::Pack { dir, out } => author::pack(globals, &dir, out.as_deref()).await,
        SkillCommand::Install {
            source: Some(source),
            overwrite,
            native: _,
            locked,
            as_name,
        } if source.starts_with(evo_host::registry::SCHEME) => {
            registry::install(globals, &source, overwrite, locked, as_name).await
        }
        SkillCommand::Install {
            source: None,
            locked: true,
            as_name: None,
            ..
        } => registry::install_locked(globals).await,
        SkillCommand::Install {
            source: None,
            as_name: Some(_),
            ..
        } => Err(Failure::usage(
            "INVALID_ARGUMENT",
            "--as names one skill, and --locked without SOURCE installs every skill the lock file pins (each under the name it pins)".into(),
            Some("give the skill's SOURCE with --as"),
        )),
        SkillCommand::Install {
            source,
            overwrite,
            native,
            locked,
            as_name,
        } => {
            if locked {
                return Err(Failure::usage(
                    "INVALID_ARGUMENT",
                    "--locked installs from a registry, and a local file has no lock entry".into(),
                    Some(
                        "give oci://REFERENCE, or leave SOURCE out to install everything the lock file pins",
                    ),
                ));
            }
            let source = PathBuf::from(source.unwrap_or_default());
            install::install(globals, &source, overwrite, native, as_name).await
        }
        SkillCommand::Publish {
            path,
            reference,
            sign,
        } => registry::publish(globals, &path, &reference, sign.as_deref()).await,
        SkillCommand::Update { names } => registry::update(globals, &names).await,
        SkillCommand::Keygen { path } => registry::keygen(globals, &path),
        SkillCommand::UpdateDescription { name, description } => {
            install::update_description(globals, &name, &description).await
        }
        SkillCommand::Uninstall { name } => install::uninstall(globals, &name).await,
        SkillCommand::Grants { name } => grants::show(globals, &name).await,
        SkillCommand::Grant { name, values } => {
            grants::change(globals, &name, evo_host::manage::Change::Grant, &values).await
        }
        SkillCommand::Revoke { name, values } => {
            grants::change(globals, &name, evo_host::manage::Change::Revoke, &values).await
        }
        SkillCommand::Search {
            query,
            limit,
            registry: true,
            refresh,
        } => list::search_registries(globals, &query, limit, refresh).await,
        SkillCommand::Search { query, limit, .. } => list::search(globals, &query, limit).await,
        SkillCommand::List {
            name,
            tags,
            page,
            limit,
            sources,
        } => {
            let filter = list::Filter {
                name,
                tags,
                page,
                limit,
            };
            list::list(globals, &filter, &sources).await
        }
        SkillCommand::Stats { skill, installs } => {
            list::stats(globals, skill.as_deref(), installs).await
        }
        SkillCommand::Info {
            skill,
            sources,
            grants,
        } => info::info(globals, &skill, &sources, &grants).await,
    }
}
