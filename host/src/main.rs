//! The `evo` command-line interface: a thin layer over the `evo-host` library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
