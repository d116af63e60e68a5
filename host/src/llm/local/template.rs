//! How a conversation is laid out for a model: the Jinja chat template its GGUF file
//! carries (`tokenizer.chat_template`, the one it was trained with), rendered with
//! minijinja; ChatML when the file has none or its template cannot be rendered.

use candle_core::quantized::gguf_file::Content;

use super::tokenizer::GgufTokenizer;
use crate::llm::{ContentBlock, Message, Role};

/// The template's name in the environment.
const NAME: &str = "chat";

/// A model's chat layout.
pub(super) struct ChatTemplate {
    /// The file's template, compiled; `None` for ChatML.
    env: Option<minijinja::Environment<'static>>,
    bos: String,
    eos: String,
}

/// A message's text, with tool calls and results written out as text (the local
/// model reads them as such).
fn text_of(message: &Message) -> String {
    let parts: Vec<String> = message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::ToolUse { name, input, .. } => {
                format!(
                    "{{\"tool\":{},\"arguments\":{input}}}",
                    serde_json::json!(name)
                )
            }
            ContentBlock::ToolResult { content, .. } => format!("Result: {content}"),
        })
        .collect();
    parts.join("\n")
}

fn role_of(message: &Message) -> &'static str {
    match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The conversation in the ChatML layout SmolLM2, Qwen and most small instruct models
/// were trained on.
pub(super) fn chatml(messages: &[Message]) -> String {
    let mut prompt = String::new();
    for message in messages {
        prompt.push_str(&format!(
            "<|im_start|>{}\n{}<|im_end|>\n",
            role_of(message),
            text_of(message)
        ));
    }
    prompt.push_str("<|im_start|>assistant\n");
    prompt
}

/// What the published chat templates expect of Jinja: Python's string methods
/// (`.strip()`) and `raise_exception`.
fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |message: String| -> Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                message,
            ))
        },
    );
    env
}

impl ChatTemplate {
    /// The layout `content` describes; ChatML if its template does not compile.
    pub(super) fn from_gguf(content: &Content, tokenizer: &GgufTokenizer) -> Self {
        let token = |key: &str| {
            content
                .metadata
                .get(key)
                .and_then(|v| v.to_u32().ok())
                .and_then(|id| tokenizer.tokenizer.id_to_token(id))
                .unwrap_or_default()
        };
        let source = content
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .cloned();
        let env = source.and_then(|source| {
            let mut env = environment();
            match env.add_template_owned(NAME, source) {
                Ok(()) => Some(env),
                Err(e) => {
                    tracing::warn!(target: "evo::llm", "the model's chat template does not compile ({e}); using ChatML");
                    None
                }
            }
        });
        Self {
            env,
            bos: token("tokenizer.ggml.bos_token_id"),
            eos: token("tokenizer.ggml.eos_token_id"),
        }
    }

    /// `messages` laid out, ending where the assistant's answer begins.
    pub(super) fn render(&self, messages: &[Message]) -> String {
        let Some(env) = &self.env else {
            return chatml(messages);
        };
        let as_values = |messages: &[(&str, String)]| -> Vec<minijinja::Value> {
            messages
                .iter()
                .map(|(role, content)| minijinja::context! { role => *role, content => content })
                .collect()
        };
        let plain: Vec<(&str, String)> =
            messages.iter().map(|m| (role_of(m), text_of(m))).collect();
        let render = |messages: &[(&str, String)]| {
            env.get_template(NAME).and_then(|t| {
                t.render(minijinja::context! {
                    messages => as_values(messages),
                    add_generation_prompt => true,
                    bos_token => self.bos,
                    eos_token => self.eos,
                })
            })
        };
        match render(&plain) {
            Ok(prompt) => prompt,
            // Some templates (Gemma's) refuse a system turn: it becomes the start of
            // the first user turn.
            Err(e) => match fold_system(&plain).map(|folded| render(&folded)) {
                Some(Ok(prompt)) => prompt,
                _ => {
                    tracing::warn!(target: "evo::llm", "the model's chat template failed ({e}); using ChatML");
                    chatml(messages)
                }
            },
        }
    }
}

/// `messages` with a leading system turn moved into the first user turn, if there is
/// one to move.
fn fold_system(messages: &[(&'static str, String)]) -> Option<Vec<(&'static str, String)>> {
    let (first, rest) = messages.split_first()?;
    if first.0 != "system" {
        return None;
    }
    let mut folded: Vec<(&'static str, String)> = rest.to_vec();
    match folded.iter_mut().find(|(role, _)| *role == "user") {
        Some((_, content)) => *content = format!("{}\n\n{content}", first.1),
        None => folded.insert(0, ("user", first.1.clone())),
    }
    Some(folded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(source: &str) -> ChatTemplate {
        let mut env = environment();
        env.add_template_owned(NAME, source.to_owned()).unwrap();
        ChatTemplate {
            env: Some(env),
            bos: "<bos>".into(),
            eos: "<eos>".into(),
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::text(Role::System, "Be brief."),
            Message::text(Role::User, "Hi"),
        ]
    }

    #[test]
    fn a_template_that_refuses_a_system_turn_gets_it_in_the_first_user_turn() {
        // Gemma's template, as its GGUF files carry it.
        let gemma = template(
            "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
        );
        assert_eq!(
            gemma.render(&conversation()),
            "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
        );
    }

    #[test]
    fn python_string_methods_work_and_a_broken_template_falls_back_to_chatml() {
        let phi = template(
            "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'].strip() + '<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}",
        );
        assert_eq!(
            phi.render(&conversation()),
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n"
        );
        let broken = template("{{ messages[5]['content'].nosuchmethod() }}");
        assert_eq!(broken.render(&conversation()), chatml(&conversation()));
    }
}
