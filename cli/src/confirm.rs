//! Asking the user on the terminal before a dangerous call (replacing a file, an edit,
//! a commit, a command that deletes), for `evo tool call` and the agent.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::sync::Arc;

use evo_host::{tools::Confirmation, tools::Confirmer};

/// The terminal as the confirmer, when there is one to ask (stdin and stderr both a
/// terminal); `None` otherwise, and the host's `[tools] confirm` policy answers.
pub(crate) fn terminal() -> Option<Arc<dyn Confirmer>> {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
        .then(|| Arc::new(Terminal) as Arc<dyn Confirmer>)
}

/// Asks on the terminal.
#[derive(Debug)]
struct Terminal;

impl Confirmer for Terminal {
    fn confirm<'a>(&'a self, request: &'a Confirmation) -> evo_host::tools::BoxFuture<'a, bool> {
        let prompt = format!(
            "\n⚠ {} wants to run (risk {}):\n  {}\n  arguments: {}\nProceed? [y/N] ",
            request.tool, request.risk, request.warning, request.arguments
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                eprint!("{prompt}");
                let _ = std::io::stderr().flush();
                let mut line = String::new();
                std::io::stdin().lock().read_line(&mut line).is_ok()
                    && matches!(line.trim(), "y" | "Y" | "yes" | "YES")
            })
            .await
            .unwrap_or(false)
        })
    }
}
