use std::fmt;

use crate::__private::SkillError;

/// An expected failure of a skill or of a host call, returned to the host as a value.
///
/// The host shows the message to the user (and to the model) as written, so say what
/// went wrong and what would fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The input was not acceptable.
    InvalidInput(String),
    /// Something named does not exist (a skill, a file, a memory entry).
    NotFound(String),
    /// A capability the call needs was not granted.
    Denied(String),
    /// A host call ran out of time.
    Timeout(String),
    /// Any other failure.
    Failed(String),
}

impl Error {
    /// An [`Error::InvalidInput`] with this message.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// An [`Error::NotFound`] with this message.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    /// An [`Error::Denied`] with this message.
    pub fn denied(message: impl Into<String>) -> Self {
        Self::Denied(message.into())
    }

    /// An [`Error::Failed`] with this message.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }

    /// The message, without the kind.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidInput(m)
            | Self::NotFound(m)
            | Self::Denied(m)
            | Self::Timeout(m)
            | Self::Failed(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Self::InvalidInput(_) => "invalid input",
            Self::NotFound(_) => "not found",
            Self::Denied(_) => "denied",
            Self::Timeout(_) => "timeout",
            Self::Failed(_) => "failed",
        };
        write!(f, "{kind}: {}", self.message())
    }
}

impl std::error::Error for Error {}

impl From<Error> for SkillError {
    fn from(error: Error) -> Self {
        match error {
            Error::InvalidInput(m) => SkillError::InvalidInput(m),
            Error::NotFound(m) => SkillError::NotFound(m),
            Error::Denied(m) => SkillError::Denied(m),
            Error::Timeout(m) => SkillError::Timeout(m),
            Error::Failed(m) => SkillError::Failed(m),
        }
    }
}

impl From<SkillError> for Error {
    fn from(error: SkillError) -> Self {
        match error {
            SkillError::InvalidInput(m) => Error::InvalidInput(m),
            SkillError::NotFound(m) => Error::NotFound(m),
            SkillError::Denied(m) => Error::Denied(m),
            SkillError::Timeout(m) => Error::Timeout(m),
            SkillError::Failed(m) => Error::Failed(m),
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        use std::io::ErrorKind;
        match error.kind() {
            ErrorKind::NotFound => Error::NotFound(error.to_string()),
            ErrorKind::PermissionDenied => Error::Denied(error.to_string()),
            _ => Error::Failed(error.to_string()),
        }
    }
}
