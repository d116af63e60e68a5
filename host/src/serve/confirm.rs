//! Dangerous calls confirmed by the MCP client's user.
//!
//! A tool about to do something hard to undo (replace a file, `rm -rf`) asks first.
//! Over MCP the question goes to the client, in the way its protocol revision allows:
//!
//! - **Revisions before 2026-07-28**, to a client that declared `elicitation`: an
//!   `elicitation/create` request on the session while the call waits.
//! - **2026-07-28**, which forbids requests from the server, to a client that declared
//!   `elicitation` in the request's `_meta`: the call waits on the server and
//!   `tools/call` answers with an input-required result carrying the question and an
//!   opaque `requestState`; the client asks its user and calls the tool again with the
//!   answer in `inputResponses` and the same `requestState` (SEP-2322). The state is a
//!   random handle to the waiting call, bound to the tool and its arguments.
//! - **Any other client**: nobody can be asked, and the host's `[tools] confirm`
//!   policy answers (deny, unless `confirm = "allow"`).
//!
//! The user says yes by accepting the form with `confirm` ticked; declining,
//! cancelling or leaving it unticked is no. The wait is bounded by
//! [`CONFIRM_WAIT`](crate::skill::kernel::CONFIRM_WAIT) and does not count against the
//! call's time limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, ProtocolVersion,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::refusal::Refusal;
use crate::skill::exchange::BoxFuture;
use crate::skill::kernel::CONFIRM_WAIT;
use crate::skill::kernel::confirm::{Confirmation, Confirmer};
use crate::skill::kernel::executor::SkillOutput;

/// The key of the question in an input-required result's `inputRequests`.
pub const QUESTION: &str = "confirm";

/// Who answers a dangerous call's question in one MCP request.
pub enum Asker {
    /// The session's client, by `elicitation/create`.
    Peer(Peer<RoleServer>),
    /// The client, by an input-required result and a second `tools/call`.
    InputRequired,
    /// Nobody: the host's policy decides.
    Nobody,
}

/// Who can answer for the request of `context`.
pub fn asker(context: &RequestContext<RoleServer>) -> Asker {
    let current = context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    if current {
        let forms = context
            .meta
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        return if forms {
            Asker::InputRequired
        } else {
            Asker::Nobody
        };
    }
    let forms = context
        .peer
        .peer_info()
        .and_then(|info| info.capabilities.elicitation.clone())
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
    if forms {
        Asker::Peer(context.peer.clone())
    } else {
        Asker::Nobody
    }
}

/// The form that asks the user about `request`: its message, and one box to tick.
fn form_for(request: &Confirmation) -> ElicitRequestParams {
    let message = format!(
        "{} wants to run ({} risk): {}\narguments: {}\nTick \"confirm\" and accept to go ahead; decline or cancel to stop it.",
        request.tool, request.risk, request.warning, request.arguments
    );
    let schema = ElicitationSchema::builder()
        .required_bool_with(QUESTION, |field| {
            field
                .title("Go ahead")
                .description(format!("Let {} run", request.tool))
                .with_default(false)
        })
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    }
}

/// Whether `answer` says yes: accepted, with `confirm` ticked.
fn agreed(answer: &ElicitResult) -> bool {
    answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|content| content.get(QUESTION))
            .and_then(Value::as_bool)
            == Some(true)
}

/// Asks the session's client with `elicitation/create`.
#[derive(Debug)]
pub struct AskPeer(pub Peer<RoleServer>);

impl Confirmer for AskPeer {
    fn confirm<'a>(&'a self, request: &'a Confirmation) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            match self.0.create_elicitation(form_for(request)).await {
                Ok(answer) => agreed(&answer),
                Err(e) => {
                    tracing::warn!(tool = %request.tool, "the client could not be asked: {e}");
                    false
                }
            }
        })
    }
}

/// A question a call asks, and where its answer goes.
struct Question {
    request: Confirmation,
    answer: oneshot::Sender<bool>,
}

/// Hands the call's questions to whoever drives it ([`Suspended::drive`]).
#[derive(Debug)]
struct AskLater(mpsc::Sender<Question>);

impl std::fmt::Debug for Question {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Question")
            .field("tool", &self.request.tool)
            .finish_non_exhaustive()
    }
}

impl Confirmer for AskLater {
    fn confirm<'a>(&'a self, request: &'a Confirmation) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            let question = Question {
                request: request.clone(),
                answer,
            };
            if self.0.send(question).await.is_err() {
                return false;
            }
            // No answer (the call was dropped, or given up) is no.
            answered.await.unwrap_or(false)
        })
    }
}

/// The work of one `tools/call`: what it came to, or why it did not run.
pub type Call = std::pin::Pin<Box<dyn Future<Output = Result<SkillOutput, Refusal>> + Send>>;

/// A call whose questions go back to the client as input-required results. It runs
/// on the request that drives it ([`Suspended::drive`]); between the question and the
/// client's answer it waits in [`Pending`], unpolled, as it would wait for the answer
/// anyway. Dropping it stops the call.
pub struct Suspended {
    tool: String,
    arguments: Value,
    call: Call,
    questions: mpsc::Receiver<Question>,
    /// Where the answer to the question the client holds now goes.
    answer: Option<oneshot::Sender<bool>>,
}

/// What one request's part of a suspended call came to.
pub enum Leg {
    /// The call ended.
    Done(Result<SkillOutput, Refusal>),
    /// It asks the client: the result to send.
    Asks(Box<InputRequiredResult>),
}

impl Suspended {
    /// The work `call` makes (given who answers its questions) for `tool` with
    /// `arguments`, its questions held for the client; it starts when driven.
    pub fn start_with(
        tool: &str,
        arguments: Value,
        call: impl FnOnce(Arc<dyn Confirmer>) -> Call,
    ) -> Self {
        let (asks, questions) = mpsc::channel(1);
        Self {
            tool: tool.to_owned(),
            arguments,
            call: call(Arc::new(AskLater(asks))),
            questions,
            answer: None,
        }
    }

    /// Runs the call until it ends, or asks a question (kept in `pending` for the
    /// client's next `tools/call`), or the request is `cancelled` (which stops it).
    pub async fn drive(mut self, pending: &Pending, cancelled: &CancellationToken) -> Leg {
        loop {
            tokio::select! {
                ended = &mut self.call => return Leg::Done(ended),
                question = self.questions.recv() => {
                    // None: the call dropped its confirmer, so it is ending.
                    let Some(question) = question else { continue };
                    self.answer = Some(question.answer);
                    let state = match pending.keep(self) {
                        Ok(state) => state,
                        Err(mut call) => {
                            tracing::warn!("no random handle for the question: it is taken as no");
                            call.answer(false);
                            self = call;
                            continue;
                        }
                    };
                    let mut requests = InputRequests::new();
                    requests.insert(
                        QUESTION.to_owned(),
                        InputRequest::Elicitation(ElicitRequest::new(form_for(&question.request))),
                    );
                    return Leg::Asks(Box::new(InputRequiredResult::new(Some(requests), Some(state))));
                }
                () = cancelled.cancelled() => return Leg::Done(Err(Refusal::Cancelled)),
            }
        }
    }

    /// Gives the client's answer to the call.
    fn answer(&mut self, yes: bool) {
        if let Some(answer) = self.answer.take() {
            let _ = answer.send(yes);
        }
    }
}

/// The calls waiting for their client's answer, by `requestState`.
#[derive(Clone, Default)]
pub struct Pending(Arc<Mutex<HashMap<String, Suspended>>>);

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Pending").field(&self.calls().len()).finish()
    }
}

impl Pending {
    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<String, Suspended>> {
        // A poisoned map still holds whole entries.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `call` until the client answers, or for [`CONFIRM_WAIT`] (then it is
    /// dropped, which stops it); returns its `requestState`, or gives `call` back when
    /// no handle can be made.
    fn keep(&self, call: Suspended) -> Result<String, Suspended> {
        let Some(state) = random_handle() else {
            return Err(call);
        };
        self.calls().insert(state.clone(), call);
        let pending = self.clone();
        let expired = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(CONFIRM_WAIT).await;
            let abandoned = pending.calls().remove(&expired);
            drop(abandoned);
        });
        Ok(state)
    }

    /// The call `state` names, given the client's answer from `responses`: the retry
    /// must name the tool and arguments the call was started with.
    pub fn resume(
        &self,
        state: &str,
        tool: &str,
        arguments: &Value,
        responses: Option<&InputResponses>,
    ) -> Result<Suspended, McpError> {
        let mut calls = self.calls();
        let Some(mut call) = calls.remove(state) else {
            return Err(McpError::invalid_params(
                format!(
                    "no call of {tool} waits for this requestState: it was answered already, or nobody answered within {} minutes; call the tool again without requestState",
                    CONFIRM_WAIT.as_secs() / 60
                ),
                Some(json!({ "tool": tool })),
            ));
        };
        if call.tool != tool || call.arguments != *arguments {
            let started = call.tool.clone();
            calls.insert(state.to_owned(), call);
            return Err(McpError::invalid_params(
                format!(
                    "this requestState belongs to a call of {started} with other arguments; send the tool name and arguments of the first call with it"
                ),
                Some(json!({ "tool": tool })),
            ));
        }
        drop(calls);
        let answer = responses
            .and_then(|responses| responses.get(QUESTION))
            .and_then(|answer| serde_json::from_value::<ElicitResult>(answer.clone()).ok());
        if answer.is_none() {
            tracing::warn!(
                tool,
                "a retry without an answer to {QUESTION:?}: taken as no"
            );
        }
        call.answer(answer.as_ref().is_some_and(agreed));
        Ok(call)
    }
}

/// 128 random bits, in hex: a handle nobody can guess; `None` if the system has no
/// randomness to give.
pub(super) fn random_handle() -> Option<String> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}
