//! A small model's runs (see [`ModelTraits::small`](crate::llm::ModelTraits::small)):
//! a model of a few hundred million parameters cannot tell skills apart, write their
//! inputs reliably or state facts it was not given, so what it may do is bounded here.
//!
//! - **Routing without the model where the words decide**: small talk never reaches a
//!   tool; arithmetic in words reaches `calculate` with an expression written here;
//!   otherwise the skill index's first pick, when it scores at least
//!   [`intent::SMALL_MODEL_MIN_SCORE`], with its input written by the model under the
//!   skill's schema.
//! - **No action from a guess**: a routed call that needs more than `read_only`, or
//!   reaches the network, runs only once the user confirms it (the CLI's prompt, an MCP
//!   client's question); where nobody can be asked it is refused, whatever the score
//!   and whatever `[tools] confirm` says.
//! - **Answers that quote results**: what a tool returned reaches the user as the tool
//!   gave it, with what was run; a failure says what failed and why.
//! - **No facts from the weights where a tool is needed**: questions only a tool can
//!   answer (the weather, the user's files) get an honest "I cannot", and an answer
//!   stating a number that neither the message nor a tool gave is replaced by one.

mod words;

use super::*;
use crate::skill::kernel::confirm::{Confirmation, Risk};
use crate::skill::kernel::executor::ExecutorKind;
use crate::skill::permission::Permission;

/// Characters of a tool's result quoted in an answer; the whole result is in the run's
/// events (`--json`).
const QUOTE_CHARS: usize = 2_000;

/// Characters of a guessed input shown in the command a refusal suggests: longer,
/// it is the model rambling, not something to copy.
const MAX_SHOWN_INPUT: usize = 160;

/// Tokens a small model's own answer may take: it is told to answer in a sentence or
/// two, and past that it rambles (a joke ran to the 120 s deadline on a busy machine).
const SMALL_MODEL_ANSWER_TOKENS: u32 = 96;

/// The tool that computes arithmetic.
const CALCULATE: &str = "calculate";

impl Agent {
    /// Routing for a small model: small talk is answered; arithmetic goes to
    /// `calculate`; else the skill the index ranks first, when it ranks it at least
    /// [`intent::SMALL_MODEL_MIN_SCORE`], with its input written by the model (held to
    /// the skill's input schema); else a direct answer.
    pub(super) async fn route_small(&self, ctx: &SkillContext, message: &str) -> Routing {
        if let Some(reply) = words::small_talk_reply(message) {
            return Routing::answer(reply);
        }
        let skills = self.offered(ctx);
        if let Some(expression) = words::arithmetic(message)
            && skills.iter().any(|s| s.meta.name == CALCULATE)
        {
            return Routing::single(
                CALCULATE,
                json!({ "expression": expression }),
                "the message is arithmetic".into(),
            );
        }
        let best = self.ranked(message, &skills, 1).into_iter().next();
        tracing::debug!(
            target: "evo::agent",
            best = ?best.map(|(i, score)| (skills[i].meta.name.as_str(), score)),
            "small-model routing"
        );
        let Some((i, score)) = best.filter(|(_, score)| *score >= intent::SMALL_MODEL_MIN_SCORE)
        else {
            return Routing::direct();
        };
        let skill = &skills[i];
        // What only a skill about it can see (the weather, email): a pick that does
        // not name it is the index matching other words ("what's … like … today" →
        // read; "my latest emails" → git).
        if let Some(word) = words::tool_only_word(message) {
            let about = format!(
                "{} {} {}",
                skill.meta.name,
                skill.meta.description,
                skill.meta.tags.join(" ")
            );
            // "emails" → "email", but "news" stays.
            let stem = word
                .strip_suffix('s')
                .filter(|stem| stem.len() >= 4)
                .unwrap_or(word);
            if !about.to_lowercase().contains(stem) {
                return Routing::direct();
            }
        }
        // A skill that runs programs, with nobody to confirm it: refused now, before
        // the model spends seconds writing its input.
        if skill.permission() >= Permission::Execute && !ctx.can_ask() {
            let name = skill.meta.name.as_str();
            return Routing::answer(refuse_guess(
                ctx,
                name,
                &json!({}),
                format!(
                    "the local model guessed that your message asks for {name}, which runs programs, and nobody can be asked to confirm it here"
                ),
            ));
        }
        intent::route_to(
            ctx,
            self.provider.as_ref(),
            self.chat_options(),
            message,
            skill,
            score,
        )
        .await
    }

    /// A small model's `single_skill` run: the routed skill called (once the user
    /// confirms it, if it does more than read), and its result quoted.
    pub(super) async fn run_guessed(
        &self,
        turn: &Turn<'_>,
        step: &intent::RoutedSkill,
    ) -> Result<(String, Vec<MemoryWriteOutcome>)> {
        let ctx = turn.ctx;
        let name = step.name.as_str();
        let input = step.input.clone().unwrap_or_else(|| json!({}));
        if !self.options.permissions.allows(ctx, name) {
            let refusal = tool_loop::refuse(ctx, name, &input);
            return Ok((
                say(turn, format!("I did not run {name}: {refusal}.")),
                Vec::new(),
            ));
        }
        if let Some(skill) = ctx.kernel().registry().get(name)
            && let Some((what, risk)) = beyond_reading(&skill, &input)
        {
            if let Err(refusal) = self.ask_first(turn, name, &input, what, risk).await {
                return Ok((say(turn, refusal), Vec::new()));
            }
            ctx.approve_once(name);
        }
        let result = ctx.call_full(name, input.clone()).await;
        ctx.clear_approval();
        Ok(match result {
            Ok(out) => (say(turn, quote(name, &input, &out.output)), out.memory),
            Err(error) => (say(turn, failed(name, &input, &error)), Vec::new()),
        })
    }

    /// Asks the user whether the guessed call of `name` may go ahead; the refusal to
    /// give the user when it may not (nobody to ask, or a no).
    async fn ask_first(
        &self,
        turn: &Turn<'_>,
        name: &str,
        input: &Value,
        what: &str,
        risk: Risk,
    ) -> std::result::Result<(), String> {
        let ctx = turn.ctx;
        let guessed =
            format!("the local model guessed that your message asks for {name}, which {what}");
        let refuse = |message: String| refuse_guess(ctx, name, input, message);
        // A guess is not an instruction: the host's `[tools] confirm = "allow"` stands
        // for a user who asked for the call, which nobody did here.
        if !ctx.can_ask() {
            // The model's input, when it is short enough to be worth copying.
            let shown = input.to_string();
            // Inside single quotes the shell reads nothing but a single quote: an input
            // holding one (the model's text, perhaps steered) is not offered to copy.
            let command = if shown.len() <= MAX_SHOWN_INPUT && !shown.contains('\'') {
                format!("evo tool call {name} --input '{shown}'")
            } else {
                format!("evo tool call {name} --input '{{…}}'")
            };
            return Err(refuse(format!(
                "{guessed}, and nobody can be asked to confirm it here. If you meant it, run it yourself: {command}"
            )));
        }
        let asked = ctx
            .confirm(Confirmation {
                tool: name.to_owned(),
                arguments: input.clone(),
                risk,
                warning: format!("{guessed}; \"{}\"", turn.message),
            })
            .await;
        asked.map_err(|e| match e {
            Error::Blocked { message, .. } => refuse(message),
            other => refuse(other.to_string()),
        })
    }

    /// Whether every call of skill `name` only reads (what a small model may be offered
    /// in a tool loop, where it chooses the calls itself).
    pub(super) fn only_reads(&self, ctx: &SkillContext, name: &str) -> bool {
        ctx.kernel().registry().get(name).is_some_and(|skill| {
            skill.permission() == Permission::ReadOnly
                && beyond_reading(&skill, &json!({})).is_none()
        })
    }

    /// A small model's direct answer: an honest "I cannot" for what only a tool can
    /// see, else the model's answer, unless it states a number nobody gave it.
    pub(super) async fn answer_small(&self, turn: &Turn<'_>) -> Result<String> {
        if let Some(topic) = words::tool_only_topic(turn.message) {
            return Ok(say(
                turn,
                format!(
                    "I cannot tell you about {topic}: no tool I can use here sees it, and I will not make it up. `evo skill search \"{}\"` lists the installed skills for a request.",
                    turn.message.replace('"', "'")
                ),
            ));
        }
        let messages = conversation(turn.answer_system, turn.history, turn.message.to_owned());
        // The answer is a sentence or two: a blank line ends it, where a small model
        // starts on something else ("This is a special case of …").
        let options = ChatOptions {
            max_tokens: Some(SMALL_MODEL_ANSWER_TOKENS),
            stop: vec!["\n\n".into()],
            ..self.chat_options()
        };
        let answer = collect(self.provider.chat(messages, options), |_| {}).await?;
        let text = answer.text.trim();
        let response = if let Some(number) = ungrounded_number(text, turn.message) {
            tracing::debug!(target: "evo::agent", number, "small-model answer withheld: {text}");
            "I cannot answer that reliably: my answer stated a number that no tool computed and you did not give, and the local model is too small to be trusted with those. For a calculation, write it out (`what is 12^2 - 4`); for facts, use a larger model (EVO_LLM).".to_owned()
        } else if text.is_empty() {
            "I have no answer to that.".to_owned()
        } else {
            text.to_owned()
        };
        Ok(say(turn, response))
    }
}

/// Refuses the guessed call of `name` with `input` for `message`: a failed
/// `skill_result` event and a row of the security log; returns the answer saying so.
fn refuse_guess(ctx: &SkillContext, name: &str, input: &Value, message: String) -> String {
    let error = Error::Blocked {
        tool: name.to_owned(),
        message: message.clone(),
        reason: crate::error::BlockReason::Confirmation,
    };
    ctx.emit(RunEvent::skill_failed(
        name,
        &error,
        std::time::Duration::ZERO,
    ));
    ctx.record_refusal(
        name,
        input,
        &message,
        "a small model's guess runs a tool that does more than read only after the user confirms it; run the tool yourself (`evo tool call`) or use a larger model (EVO_LLM)",
    );
    format!("I did not run {name}: {message}.")
}

/// Sends `text` to the run's listener as the answer, and returns it.
fn say(turn: &Turn<'_>, text: String) -> String {
    turn.token(&text);
    text
}

/// What a call of `skill` with `input` does beyond reading, and its risk; `None` for a
/// read.
fn beyond_reading(skill: &RegisteredSkill, input: &Value) -> Option<(&'static str, Risk)> {
    match skill.permission_for(input) {
        Permission::Admin => return Some(("changes the host", Risk::High)),
        Permission::Execute => return Some(("runs programs", Risk::High)),
        Permission::ReadWrite => return Some(("changes files or memory", Risk::Medium)),
        Permission::ReadOnly => {}
    }
    let network = !skill.meta.capabilities.hosts.is_empty()
        || matches!(skill.kind(), ExecutorKind::Service | ExecutorKind::Remote);
    network.then_some(("reaches the network", Risk::Medium))
}

/// `value` for a sentence: strings as they are, everything else as compact JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The call of `name` with `input`, for a sentence: `calculate (expression: 2 + 2)`.
fn described(name: &str, input: &Value) -> String {
    let fields: Vec<String> = input
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {}", plain(v)))
        .collect();
    if fields.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", fields.join(", "))
    }
}

/// `text` cut to [`QUOTE_CHARS`], saying so.
fn bounded(mut text: String) -> String {
    if text.len() > QUOTE_CHARS {
        let mut cut = QUOTE_CHARS;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let left = text.len() - cut;
        text.truncate(cut);
        text.push_str(&format!(
            "… ({left} more bytes; `--json` shows the whole result)"
        ));
    }
    text
}

/// The answer quoting what `name` returned: what was run, then each field of its output.
fn quote(name: &str, input: &Value, output: &Value) -> String {
    let result = match output {
        Value::Object(fields) if !fields.is_empty() => fields
            .iter()
            .map(|(k, v)| format!("{k}: {}", plain(v)))
            .collect::<Vec<_>>()
            .join("\n"),
        other => plain(other),
    };
    bounded(format!("Ran {}.\n{result}", described(name, input)))
}

/// The answer saying that the call of `name` failed, and why.
fn failed(name: &str, input: &Value, error: &Error) -> String {
    let why = match error {
        Error::Validation(report) => report.to_llm_text(),
        other => other.to_string(),
    };
    bounded(format!(
        "I could not do it: {} failed [{}]: {why}",
        described(name, input),
        error.code()
    ))
}

/// The first number in `answer` (a run of digits) that `message` does not hold: one the
/// model made up.
pub(super) fn ungrounded_number(answer: &str, message: &str) -> Option<String> {
    let numbers = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_ascii_digit())
            .filter(|n| !n.is_empty())
            .map(|n| n.trim_start_matches('0').to_owned())
            .collect()
    };
    let given = numbers(message);
    numbers(answer).into_iter().find(|n| !given.contains(n))
}

/// Words of `text` long enough to mean something, lower case.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4 && !w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// Whether `text` and `message` share two ideographs in a row: Chinese and Japanese are
/// written without spaces, so a phrase is not split into words, and a fact taken from
/// the message keeps some of its characters together.
fn shares_ideographs(text: &str, message: &str) -> bool {
    let ideograph = |c: char| ('\u{3040}'..='\u{9fff}').contains(&c);
    let chars: Vec<char> = text.chars().collect();
    chars.windows(2).any(|pair| {
        pair.iter().all(|&c| ideograph(c)) && message.contains(&pair.iter().collect::<String>())
    })
}

/// The first value of `input` that a small model made up rather than took from
/// `message`, quoted: a number the message does not hold, or a text with no word and
/// no number of the message (a path, a pattern or a date from nowhere). A small model
/// fills a field it cannot fill with something plausible; run, its result would be
/// an answer to a question nobody asked.
pub(super) fn made_up(input: &Value, message: &str) -> Option<String> {
    match input {
        Value::Object(fields) => fields.values().find_map(|v| made_up(v, message)),
        Value::Array(items) => items.iter().find_map(|v| made_up(v, message)),
        Value::Number(n) => {
            let text = n.to_string();
            ungrounded_number(&text, message).map(|_| text)
        }
        Value::String(text) => {
            if ungrounded_number(text, message).is_some() {
                return Some(format!("{text:?}"));
            }
            let given = message.to_lowercase();
            let own = words(text);
            let numbers = text.chars().any(|c| c.is_ascii_digit());
            let shares =
                own.iter().any(|w| given.contains(w.as_str())) || shares_ideographs(text, &given);
            (!own.is_empty() && !shares && !numbers).then(|| format!("{text:?}"))
        }
        Value::Bool(_) | Value::Null => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_models_input_is_held_to_the_message() {
        // Taken from the message: run.
        let message = "what is the square root of 2209?";
        assert_eq!(
            made_up(&json!({ "expression": "sqrt(2209)" }), message),
            None
        );
        let message = "where are all the test_*.py scripts in this tree?";
        assert_eq!(
            made_up(&json!({ "pattern": "**/test_*.py" }), message),
            None
        );
        let message = "make sure you know next time that my daughter is called Ana";
        let store = json!({ "content": "The user's daughter is called Ana" });
        assert_eq!(made_up(&store, message), None);
        // Made up: a path, a date, a count the message never gave.
        let message = "open src/main.rs so I can look at it";
        let read = json!({ "file_path": "/Users/Huggs-Lemmings/Projects/project.jsx" });
        assert_eq!(
            made_up(&read, message).as_deref(),
            Some("\"/Users/Huggs-Lemmings/Projects/project.jsx\"")
        );
        // Written without spaces: two characters of the message in a row are enough.
        let message = "记住我的牙医叫王医生";
        assert_eq!(
            made_up(&json!({ "content": "用户的牙医是王医生" }), message),
            None
        );
        assert!(made_up(&json!({ "content": "明天下午开会讨论预算" }), message).is_some());
        let message = "which lines mention TODO in the codebase?";
        assert!(made_up(&json!({ "pattern": "2022-07-22T12:22:22Z" }), message).is_some());
        let message = "make structured data out of this export: id,total\n7,19.5";
        assert!(made_up(&json!({ "id": 1, "total": "19.5" }), message).is_some());
    }

    #[test]
    fn a_result_is_quoted_with_what_was_run() {
        assert_eq!(
            quote(
                "calculate",
                &json!({ "expression": "sqrt(144) + 10" }),
                &json!({ "result": 22 })
            ),
            "Ran calculate (expression: sqrt(144) + 10).\nresult: 22"
        );
        let long = quote("read", &json!({}), &json!({ "content": "x".repeat(5_000) }));
        assert!(long.len() < QUOTE_CHARS + 100, "{}", long.len());
        assert!(long.ends_with("`--json` shows the whole result)"), "{long}");
    }

    #[test]
    fn a_number_the_message_did_not_give_is_found() {
        assert_eq!(
            ungrounded_number("15% of 80 is 10.", "what is 15% of 80?"),
            Some("10".into())
        );
        assert_eq!(
            ungrounded_number("It is 22.", "what is 20 + 2?"),
            Some("22".into())
        );
        assert_eq!(ungrounded_number("Paris.", "capital of France?"), None);
        assert_eq!(ungrounded_number("You said 80.", "80 apples"), None);
    }
}
