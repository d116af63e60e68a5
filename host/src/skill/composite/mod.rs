//! The executors the kernel itself provides, made of other parts rather than code a
//! skill brings: a [`pipeline`] of skills, and an [`llm`] skill whose body is a prompt.

pub mod llm;
pub mod pipeline;
