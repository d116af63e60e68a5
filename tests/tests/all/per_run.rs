//! Choices made per run: the model a run or an llm skill asks for (within what the
//! operator allows), and the values every skill of a run is told (`env`). The model is
//! a loopback server speaking OpenAI's wire format, so the requests are the real ones.

use std::path::Path;
use std::sync::{Arc, Mutex};

use evo_tests::cli::{HttpServer, command, stderr};
use evo_tests::http::{Request, openai_server};
use serde_json::{Value, json};

/// What every answer of the model says: a routing that answers directly, which is also
/// an object any llm skill with an open output schema may return.
pub(crate) const ANSWER: &str =
    r#"{"intents":[],"routing":{"strategy":"direct_answer","direct_response":"Hi."}}"#;

/// A model server on loopback that streams [`ANSWER`] to every request.
pub(crate) fn model_server() -> (String, Arc<Mutex<Vec<Request>>>) {
    openai_server(ANSWER)
}

/// The `model` and the text of every request the server saw.
pub(crate) fn requests(seen: &Arc<Mutex<Vec<Request>>>) -> Vec<(String, String)> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            (
                body["model"].as_str().unwrap_or_default().to_owned(),
                body["messages"].to_string(),
            )
        })
        .collect()
}

/// `evo ARGS` in `home` with the model server at `base` as `openai:gpt-default`.
pub(crate) fn evo_with_model(home: &Path, base: &str, args: &[&str]) -> std::process::Output {
    command(home, args)
        .env("EVO_LLM", "openai:gpt-default")
        .env("OPENAI_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap()
}

#[test]
fn agent_run_model_asks_every_request_of_the_run_for_that_model() {
    // "RunInput { taskId, message, model?, providerId? }": a model per run.
    let home = tempfile::tempdir().unwrap();
    for routing in [true, false] {
        let (base, seen) = model_server();
        let mut args = vec!["agent", "run", "hello there", "--model", "gpt-x"];
        if !routing {
            args.push("--no-routing");
        }
        let out = evo_with_model(home.path(), &base, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let models: Vec<String> = requests(&seen).into_iter().map(|(m, _)| m).collect();
        assert!(!models.is_empty());
        assert!(
            models.iter().all(|m| m == "gpt-x"),
            "routing {routing}: {models:?}"
        );
    }
    // Without it, the configured model.
    let (base, seen) = model_server();
    let out = evo_with_model(home.path(), &base, &["agent", "run", "hello there"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(requests(&seen)[0].0, "gpt-default");
}

/// An llm skill `ask-big` that asks for model `gpt-big` and tells the model the
/// operator's `team` and the run's locale.
fn ask_big(root: &Path) -> std::path::PathBuf {
    let dir = root.join("ask-big");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: ask-big\ndescription: Asks the big model.\n---\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("skill.json"),
        json!({
            "name": "ask-big",
            "description": "Asks the big model.",
            "mode": "llm",
            "model": "gpt-big",
            "input": { "type": "object", "properties": { "q": { "type": "string" } } },
            "output": { "type": "object" }
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("prompt.md"),
        "Answer {{input.q}} for team {{env.team}} in locale {{env.locale}}.",
    )
    .unwrap();
    dir
}

#[test]
fn an_llm_skill_gets_its_model_only_where_the_operator_allows_it_and_reads_env() {
    let root = tempfile::tempdir().unwrap();
    let skill = ask_big(root.path());
    let skill = skill.to_str().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("evo.toml"), "[env]\nteam = \"infra\"\n").unwrap();

    // Not allowed: refused before any request, saying what is.
    let (base, seen) = model_server();
    let out = evo_with_model(
        &home,
        &base,
        &["skill", "run", skill, "--input", r#"{"q":"why"}"#],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with(
            "error[MODEL_NOT_ALLOWED]: ask-big asks for model \"gpt-big\", which this host does not allow; allowed: only the configured model\n  hint: ask for an allowed model, or let the operator add this one to `[llm] models` in evo.toml"
        ),
        "{}",
        stderr(&out)
    );
    assert!(requests(&seen).is_empty());

    // Allowed: asked for, with the operator's value and the host's in its prompt.
    std::fs::write(
        home.join("evo.toml"),
        "[llm]\nmodels = [\"gpt-big\"]\n\n[env]\nteam = \"infra\"\n",
    )
    .unwrap();
    let (base, seen) = model_server();
    let out = evo_with_model(
        &home,
        &base,
        &["skill", "run", skill, "--input", r#"{"q":"why"}"#],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let sent = requests(&seen);
    assert_eq!(sent[0].0, "gpt-big");
    assert!(
        sent[0]
            .1
            .contains("Answer why for team infra in locale en."),
        "{}",
        sent[0].1
    );

    // A name the host sets is not the operator's to set.
    std::fs::write(home.join("evo.toml"), "[env]\nsession = \"mine\"\n").unwrap();
    let out = evo_with_model(&home, &base, &["config", "show"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("\"session\" is a value the host sets (session, locale, cwd, model); name yours otherwise"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn over_http_a_run_picks_its_model_among_those_allowed() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("evo.toml"), "[llm]\nmodels = [\"gpt-small\"]\n").unwrap();
    let (base, seen) = model_server();
    let mut serve = command(&home, &["serve", "--http", "127.0.0.1:0"]);
    serve
        .env("EVO_LLM", "openai:gpt-default")
        .env("OPENAI_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_KEY", "sk-test");
    let server = HttpServer::start_command(serve);
    let run = |model: &str| {
        crate::serve_http::http(
            "POST",
            &format!("{}/v1/agent/run", server.base),
            &[],
            Some(&json!({ "message": "hello", "model": model }).to_string()),
        )
    };
    let (status, body) = run("gpt-huge");
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["code"], "MODEL_NOT_ALLOWED", "{body}");
    assert!(requests(&seen).is_empty());

    let (status, body) = run("gpt-small");
    assert_eq!(status, 200, "{body}");
    let text = body.as_str().unwrap_or_default();
    assert!(text.contains("event: done"), "{text}");
    assert!(
        requests(&seen)
            .iter()
            .all(|(model, _)| model == "gpt-small"),
        "{:?}",
        requests(&seen)
    );
}
