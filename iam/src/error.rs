//! Why a policy document was rejected: the one error of the policy grammar, shared by the
//! statement parser (`policy`) and the Condition block parser (`condition`).

/// Why a policy document was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not well-formed JSON, or repeats a key inside one object.
    #[error("policy is not valid JSON: {0}")]
    Json(String),
    /// The document is longer than [`crate::policy::MAX_POLICY_BYTES`].
    #[error("policy is {size} bytes; the limit is {limit} bytes")]
    TooLarge {
        /// The document's length in bytes.
        size: usize,
        /// The limit it exceeds.
        limit: usize,
    },
    /// The document has more than [`crate::policy::MAX_STATEMENTS`] statements.
    #[error("policy has {count} statements; the limit is {limit}")]
    TooManyStatements {
        /// How many statements the document has.
        count: usize,
        /// The limit it exceeds.
        limit: usize,
    },
    /// Something about the document outside its statements (Version, Id, the Statement list).
    #[error("{0}")]
    Document(String),
    /// One statement is invalid.
    #[error("Statement {index}: {message}")]
    Statement {
        /// The statement's position in the document, counting from 1.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A Condition block is invalid. [`crate::Policy::parse`] reports these as
    /// [`PolicyError::Statement`] so the statement is named; this variant is what
    /// [`crate::Conditions::parse`] returns on its own.
    #[error("{0}")]
    Condition(String),
}
