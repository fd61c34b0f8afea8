//! Stored responses, as `GET /responses/{id}` returns them.

use super::whole::decode_response;
use super::wire::WireResponse;
use kite_core::{Error, Response};

/// Where a stored response stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Waiting to run.
    Queued,
    /// Running.
    InProgress,
    /// Done, with an answer.
    Completed,
    /// Done, cut short (see the answer's finish reason).
    Incomplete,
    /// Done, failed.
    Failed,
    /// Cancelled before it was done.
    Cancelled,
    /// A status kite has no name for, as the provider sent it.
    Other(String),
}

impl Status {
    /// The status named `s` on the wire.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "queued" => Self::Queued,
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "incomplete" => Self::Incomplete,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Other(s) => s,
        }
    }

    /// The response will not change any more.
    pub fn is_done(&self) -> bool {
        !matches!(self, Self::Queued | Self::InProgress)
    }
}

/// A stored response as retrieved (`GET /responses/{id}`): its id and status, and, once it is
/// done, the answer it holds (or the error that failed it).
#[derive(Debug)]
pub struct Stored {
    /// The response's id.
    pub id: String,
    /// Where it stands.
    pub status: Status,
    /// Once done, its answer or the error that failed it.
    pub result: Option<Result<Response, Error>>,
}

/// Decodes a stored response's JSON.
pub fn decode_stored(body: &[u8]) -> Result<Stored, Error> {
    let v: WireResponse = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("response is not valid JSON: {e}"), body))?;
    let (Some(id), Some(status)) = (&v.id, &v.status) else {
        return Err(Error::decode("stored response has no id or status", body));
    };
    let status = Status::from_wire(status.as_str());
    let result = status.is_done().then(|| decode_response(body));
    Ok(Stored {
        id: id.as_str().to_owned(),
        status,
        result,
    })
}
