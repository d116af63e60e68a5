//! A run's handle for its calls: [`SkillContext`], what every executor gets and every
//! nested call, scratch write, memory request and event goes through.

use super::*;

/// One frame of a run: what a skill sees while it executes. Cheap to clone.
#[derive(Clone)]
pub struct SkillContext {
    pub(super) kernel: Arc<Kernel>,
    pub(super) run: Arc<Run>,
    pub(super) depth: u32,
    pub(super) parent: Option<Arc<str>>,
    /// Inside a preprocessor's call: what it calls is not preprocessed in turn.
    pub(super) preprocessing: bool,
}

impl fmt::Debug for SkillContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillContext")
            .field("task_id", &self.run.task_id)
            .field("depth", &self.depth)
            .field("parent", &self.parent)
            .finish_non_exhaustive()
    }
}

impl SkillContext {
    /// A context outside any host: no other skills, no model, no memory; every request
    /// for them fails with a message saying so. For running one component on its own
    /// (tests, benchmarks, reading a manifest).
    pub fn detached() -> Self {
        Arc::new(Kernel::new(Arc::new(SkillTable::new()))).context(RunOptions::default())
    }

    /// The run's id.
    pub fn task_id(&self) -> &str {
        &self.run.task_id
    }

    /// The run's scratch space, shared by every frame.
    pub fn scratch(&self) -> &Scratch {
        &self.run.scratch
    }

    /// Frames above this one (0 for the run itself).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The depth limit.
    pub fn max_depth(&self) -> u32 {
        self.kernel.config.max_depth
    }

    /// The skill this frame belongs to (`None` for the run itself).
    pub fn parent_skill(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    internal_pub! {
        /// The kernel.
        fn kernel(&self) -> &Arc<Kernel> {
            &self.kernel
        }
    }

    /// Long-term memory, when attached.
    pub fn memory(&self) -> Option<&Arc<dyn Memory>> {
        self.kernel.memory.as_ref()
    }

    /// Sends `event` to the run's listener.
    pub fn emit(&self, event: RunEvent) {
        if let Some(sink) = &self.run.events {
            sink.send(event);
        }
    }

    /// Writes a refusal made inside this frame (an outbound request the grant does not
    /// cover, …) to the security log: the `evo::security` target and a `blocked` row of
    /// the call history, with this frame's skill as the caller, and `hint` saying what to
    /// do about it.
    pub fn record_refusal(&self, tool: &str, arguments: &Value, message: &str, hint: &str) {
        let caller = self.parent.as_deref().unwrap_or(&self.run.caller);
        tracing::warn!(target: "evo::security", caller, tool, "blocked: {message}");
        self.kernel.record(Record {
            id: 0,
            at_ms: crate::unix_millis() as i64,
            caller: caller.to_owned(),
            task_id: self.run.task_id.clone(),
            tool: tool.to_owned(),
            arguments: crate::skill::observe::history::redact(arguments),
            status: Status::Blocked,
            duration_ms: 0.0,
            error: Some(format!("[PERMISSION_DENIED] {message}")),
            hint: Some(hint.to_owned()),
            node: String::new(),
        });
    }

    /// Logs `message`, tagged with the skill and depth.
    pub fn log(&self, message: &str) {
        tracing::info!(
            target: "evo::skill",
            task = %self.run.task_id,
            skill = self.parent.as_deref().unwrap_or("root"),
            depth = self.depth,
            "{message}"
        );
    }

    /// What the host tells every skill of the run, read-only: the operator's values
    /// (`[env]` in evo.toml), then the host's own: `session` (the run's id, or the
    /// session the front end gave), `locale`, `cwd`, and `model` when the run asked for
    /// one.
    pub fn env(&self) -> Value {
        let mut env = self.kernel.config.env.clone();
        let session = self.run.session.as_deref().unwrap_or(&self.run.task_id);
        env.insert("session".into(), session.into());
        env.insert(
            "locale".into(),
            serde_json::to_value(self.kernel.config.locale).unwrap_or_default(),
        );
        if let Some(model) = &self.run.model {
            env.insert("model".into(), model.as_str().into());
        }
        Value::Object(env)
    }

    /// Asks the language model: for the model the request names (which must be one
    /// `[llm] models` allows), else the run's, else the configured one.
    pub async fn llm(&self, mut request: LlmRequest) -> Result<String> {
        let Some(llm) = &self.kernel.llm else {
            return Err(Error::LlmNotConfigured);
        };
        if request.caller.is_empty() {
            request.caller = self.parent.as_deref().unwrap_or("root").to_owned();
        }
        match &request.model {
            Some(model) if !self.kernel.config.models.contains(model) => {
                return Err(Error::ModelNotAllowed {
                    asker: request.caller,
                    model: model.clone(),
                    allowed: self.kernel.config.models.clone(),
                });
            }
            Some(_) => {}
            None => request.model = self.run.model.clone(),
        }
        llm.complete(request).await
    }

    /// Calls skill `name` with `input` and returns its output.
    pub async fn call(&self, name: &str, input: Value) -> Result<Value> {
        self.call_full(name, input).await.map(|out| out.output)
    }

    /// Calls skill `name` with `input` and returns everything it produced. A call made
    /// by the run itself (not by another skill) keeps the memory writes the skill
    /// suggested before it returns, and says what became of each in
    /// [`SkillOutput::memory`] and a `memory_writes` event.
    pub async fn call_full(&self, name: &str, input: Value) -> Result<SkillOutput> {
        let mut result = self.call_unkept(name, input).await;
        if self.depth == 0
            && let Ok(out) = &mut result
        {
            self.keep_memory_writes(name, out).await;
        }
        result
    }

    /// Keeps the memory writes `out` suggests (see [`Memory::keep`]) and adds what
    /// became of them to `out.memory`, unless the run leaves them. Without memory
    /// attached each is refused.
    pub(super) async fn keep_memory_writes(&self, skill: &str, out: &mut SkillOutput) {
        if !out.memory_writes.is_empty() && !self.run.leave_memory_writes {
            let writes = out.memory_writes.clone();
            let kept = match self.memory() {
                Some(memory) => memory.keep(writes).await,
                None => writes
                    .iter()
                    .map(|w| MemoryWriteOutcome::refused(w, "no memory is attached to this host"))
                    .collect(),
            };
            out.memory.extend(kept);
        }
        if !out.memory.is_empty() {
            self.emit(RunEvent::memory_writes(skill, &out.memory));
        }
    }

    async fn call_unkept(&self, name: &str, input: Value) -> Result<SkillOutput> {
        let started = Instant::now();
        let at_ms = crate::unix_millis() as i64;
        let skill = match self.lookup(name) {
            Ok(skill) => skill,
            Err(e) => return Err(e),
        };
        let name = skill.meta.name.as_str();
        let caller = self.parent.as_deref().unwrap_or(&self.run.caller);
        let call = self
            .kernel
            .live
            .started(name, caller, &self.run.task_id, at_ms);
        // Preprocessed first, so the history keeps what the skill was given (a redaction
        // reaches the record too); a preprocessor's own input is what it was asked to
        // clean, and is not kept.
        let (arguments, result) = match self.preprocess_input(name, input).await {
            Ok(input) => {
                let arguments = if self.preprocessing {
                    r#"{"withheld":"a preprocessor's call: its input is what it was asked to clean"}"#
                        .to_owned()
                } else {
                    crate::skill::observe::history::redact(&input)
                };
                (arguments, self.gated(&skill, input, started).await)
            }
            Err(e) => {
                self.kernel.stats.record(name, false, started.elapsed());
                let withheld =
                    r#"{"withheld":"its preprocessor failed, so its input was not cleaned"}"#;
                (withheld.to_owned(), Err(e))
            }
        };
        let status = match &result {
            Ok(_) => Status::Success,
            Err(Error::Blocked { .. }) => Status::Blocked,
            Err(_) => Status::Error,
        };
        self.kernel.record_call(
            Some(call),
            Record {
                id: 0,
                at_ms,
                caller: caller.to_owned(),
                task_id: self.run.task_id.clone(),
                tool: name.to_owned(),
                arguments,
                status,
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                error: result.as_ref().err().map(|e| format!("[{}] {e}", e.code())),
                hint: result
                    .as_ref()
                    .err()
                    .and_then(Error::hint)
                    .map(str::to_owned),
                node: String::new(),
            },
        );
        result
    }

    fn lookup(&self, name: &str) -> Result<Arc<RegisteredSkill>> {
        let max = self.kernel.config.max_depth;
        if self.depth >= max {
            return Err(Error::SkillDepth {
                skill: name.to_owned(),
                depth: self.depth,
                max,
            });
        }
        self.kernel
            .registry
            .get(name)
            .ok_or_else(|| Error::SkillNotFound {
                name: name.to_owned(),
            })
    }

    async fn gated(
        &self,
        skill: &Arc<RegisteredSkill>,
        input: Value,
        started: Instant,
    ) -> Result<SkillOutput> {
        let config = &self.kernel.config;
        let name = skill.meta.name.as_str();
        if let Err(e) = self.permit(skill, &input) {
            self.kernel.stats.record(name, false, started.elapsed());
            return Err(e);
        }
        let mut input = input;
        let schema = skill.input_schema();
        // What the caller sent, for the report: kept only when defaults can change it.
        let sent = schema.has_defaults().then(|| input.clone());
        schema.apply_defaults(&mut input);
        let violations = match &sent {
            Some(sent) => schema.check_sent(sent, &input),
            None => schema.check(&input),
        };
        if !violations.is_empty() {
            let attempt = self.run.input_failure(name);
            // A model in a loop gets more tries in one run; a single call (the CLI, an MCP
            // or HTTP request) has one, and its report does not count attempts.
            let max_attempts = if self.run.single_call {
                1
            } else {
                config.max_input_attempts
            };
            let report =
                ValidationReport::new(name, Direction::Input, attempt, max_attempts, violations);
            let error = Error::Validation(Box::new(report));
            self.kernel.stats.record(name, false, started.elapsed());
            return Err(error);
        }

        self.emit(RunEvent::skill_call(name, &input, self.depth + 1));
        let child = SkillContext {
            kernel: self.kernel.clone(),
            run: self.run.clone(),
            depth: self.depth + 1,
            parent: Some(name.into()),
            preprocessing: self.preprocessing,
        };
        let result = match execute_with_retry(skill, input, child).await {
            Ok(out) => check_output(skill, out),
            Err(e) => Err(e),
        };
        let elapsed = started.elapsed();
        self.kernel.stats.record(name, result.is_ok(), elapsed);
        match &result {
            Ok(out) => self.emit(RunEvent::skill_result(name, &out.output, elapsed)),
            Err(e) => self.emit(RunEvent::skill_failed(name, e, elapsed)),
        }
        result
    }
}

impl SkillContext {
    /// This frame, for calling preprocessors: what they call is not preprocessed.
    fn preprocessor_frame(&self) -> SkillContext {
        SkillContext {
            preprocessing: true,
            ..self.clone()
        }
    }

    /// `input` for `skill` after the preprocessors of its input (`[preprocess] input`),
    /// each called with `{"skill", "input"}` and answering `{"input"}`.
    async fn preprocess_input(&self, skill: &str, input: Value) -> Result<Value> {
        if self.preprocessing {
            return Ok(input);
        }
        let names = self.kernel.config.preprocess.of_input(skill);
        if names.is_empty() {
            return Ok(input);
        }
        let frame = self.preprocessor_frame();
        let mut input = input;
        for preprocessor in names {
            let asked = serde_json::json!({ "skill": skill, "input": input });
            // Boxed: a preprocessor's call goes through `gated`, which calls this.
            let answer = Box::pin(frame.call_unkept(preprocessor, asked)).await;
            input = match answer.map(|out| out.output) {
                Ok(Value::Object(mut fields)) if fields.contains_key("input") => {
                    fields.remove("input").unwrap_or_default()
                }
                Ok(other) => {
                    return Err(preprocessor_failed(
                        preprocessor,
                        skill,
                        Error::InvalidOutput {
                            skill: preprocessor.to_owned(),
                            reason: format!(
                                "an input preprocessor answers {{\"input\": …}}, not {other}"
                            ),
                        },
                    ));
                }
                Err(e) => return Err(preprocessor_failed(preprocessor, skill, e)),
            };
        }
        Ok(input)
    }

    /// `message` after the preprocessors of agent messages (`[preprocess] message`), each
    /// called with `{"message"}` and answering `{"message", …}`; what else one answers
    /// goes into the run's scratch under its name.
    pub async fn preprocess_message(&self, message: String) -> Result<String> {
        let frame = self.preprocessor_frame();
        let mut message = message;
        for preprocessor in &self.kernel.config.preprocess.message {
            let asked = serde_json::json!({ "message": message });
            // Boxed: a preprocessor's call goes through `gated`, which calls this.
            let answer = Box::pin(frame.call_unkept(preprocessor, asked)).await;
            message = match answer.map(|out| out.output) {
                Ok(Value::Object(mut fields)) => match fields.remove("message") {
                    Some(Value::String(text)) if !text.trim().is_empty() => {
                        if !fields.is_empty()
                            && let Err(e) = self.scratch().set(preprocessor, Value::Object(fields))
                        {
                            tracing::warn!(
                                "{preprocessor}: what it answered besides the message is not kept: {e}"
                            );
                        }
                        text
                    }
                    other => {
                        return Err(preprocessor_failed(
                            preprocessor,
                            "the message",
                            Error::InvalidOutput {
                                skill: preprocessor.clone(),
                                reason: format!(
                                    "a message preprocessor answers a non-empty \"message\" string, not {}",
                                    other.unwrap_or(Value::Null)
                                ),
                            },
                        ));
                    }
                },
                Ok(other) => {
                    return Err(preprocessor_failed(
                        preprocessor,
                        "the message",
                        Error::InvalidOutput {
                            skill: preprocessor.clone(),
                            reason: format!(
                                "a message preprocessor answers {{\"message\": …}}, not {other}"
                            ),
                        },
                    ));
                }
                Err(e) => return Err(preprocessor_failed(preprocessor, "the message", e)),
            };
        }
        Ok(message)
    }
}

fn preprocessor_failed(preprocessor: &str, target: &str, source: Error) -> Error {
    Error::Preprocessor {
        preprocessor: preprocessor.to_owned(),
        target: target.to_owned(),
        source: Box::new(source),
    }
}

async fn execute_with_retry(
    skill: &RegisteredSkill,
    input: Value,
    ctx: SkillContext,
) -> Result<SkillOutput> {
    let meta = &skill.meta;
    let mut timeout = Duration::from_millis(meta.timeout_ms);
    if skill.executor.owns_deadline() {
        timeout += DEADLINE_GRACE;
    }
    // Compiling (on a cache miss) is bounded by the compile deadline, not the call's.
    skill.executor.prepare().await?;
    let mut backoff = ctx.kernel.config.retry_backoff;
    let mut attempt = 0;
    let mut input = Some(input);
    loop {
        let last = attempt == meta.retry;
        // The last attempt takes the input; earlier ones keep it for the next.
        let this_input = if last { input.take() } else { input.clone() }.unwrap_or(Value::Null);
        // The time the call waits for its user's answers is not the call's time.
        let outcome = tokio::select! {
            outcome = skill.executor.execute(this_input, ctx.clone()) => outcome,
            () = ctx.deadline(Instant::now() + timeout) => Err(Error::Timeout {
                skill: meta.name.clone(),
                limit_ms: meta.timeout_ms,
            }),
        };
        match outcome {
            Err(error) if !last && error.is_transient() => {
                attempt += 1;
                tracing::info!(
                    target: "evo::skill",
                    skill = %meta.name,
                    attempt,
                    retries = meta.retry,
                    "transient failure, retrying in {} ms: {error}",
                    backoff.as_millis()
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_RETRY_BACKOFF);
            }
            other => return other,
        }
    }
}
