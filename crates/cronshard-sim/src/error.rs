//! API errors, rendered as the `metav1.Status` objects kube-apiserver returns.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::resource::Resource;

/// One field error inside a 422 Invalid (`details.causes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    pub field: String,
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueTooLong`...
    pub reason: &'static str,
    pub message: String,
}

impl Cause {
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Cause {
            field: field.to_owned(),
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {}: {detail}", json!(value)),
        }
    }

    pub fn required(field: &str) -> Self {
        Cause { field: field.to_owned(), reason: "FieldValueRequired", message: "Required value".to_owned() }
    }
}

/// Every failure the simulated API server can answer with. The variant names are the
/// Status `reason` values, so tests and metrics can match on them.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("{resource} {name:?} not found")]
    NotFound { resource: Resource, name: String },
    #[error("{0}")]
    NamespaceNotFound(String),
    #[error("{resource} {name:?} already exists")]
    AlreadyExists { resource: Resource, name: String },
    #[error(
        "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified; please apply your changes to the latest version and try again"
    )]
    Conflict { resource: Resource, name: String },
    #[error("{kind}{} {name:?} is invalid: {}", if group.is_empty() { String::new() } else { format!(".{group}") }, summary(.causes))]
    Invalid { kind: &'static str, group: &'static str, name: String, causes: Vec<Cause> },
    /// 410 for a list continue token older than the compacted revision.
    #[error(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
    )]
    ContinueExpired { inconsistent_continue: String },
    /// 410 for a read or watch at a compacted resourceVersion.
    #[error("too old resource version: {requested} ({compacted})")]
    ResourceVersionTooOld { requested: u64, compacted: u64 },
    /// 422 for a JSON patch that cannot be applied.
    #[error("the server rejected our request due to an error in our request: {0}")]
    UnprocessablePatch(String),
    /// 410 for a list at an exact, compacted resourceVersion.
    #[error("The resourceVersion for the provided list is too old.")]
    ListTooOld,
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    ResourceVersionTooLarge { requested: u64, current: u64 },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("the server could not find the requested resource")]
    PathNotFound,
    #[error("the server does not allow this method on the requested resource")]
    MethodNotAllowed,
    /// 415, with the media types this request accepts.
    #[error("the body of the request was in an unknown format - accepted media types include: {0}")]
    UnsupportedMediaType(&'static str),
    /// 415 for a protobuf body with a field the simulator's protobuf schema does not have.
    #[error("{0}")]
    UndecodableProtobuf(String),
    #[error("Request entity too large: limit is {0}")]
    RequestEntityTooLarge(usize),
    #[error("Too many requests, please try again later.")]
    TooManyRequests { retry_after_seconds: u64 },
    #[error("{0}")]
    InternalError(String),
    /// 504: the request's deadline passed before it was carried out; nothing was written.
    #[error("Timeout: request did not complete within requested timeout - context deadline exceeded")]
    RequestTimeout,
    #[error("the server is currently unable to handle the request")]
    ServiceUnavailable,
}

fn summary(causes: &[Cause]) -> String {
    let parts: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    if parts.len() == 1 { parts[0].clone() } else { format!("[{}]", parts.join(", ")) }
}

impl ApiError {
    pub fn code(&self) -> StatusCode {
        match self {
            ApiError::NotFound { .. } | ApiError::NamespaceNotFound(_) | ApiError::PathNotFound => {
                StatusCode::NOT_FOUND
            }
            ApiError::AlreadyExists { .. } | ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::Invalid { .. } | ApiError::UnprocessablePatch(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::ContinueExpired { .. } | ApiError::ResourceVersionTooOld { .. } | ApiError::ListTooOld => {
                StatusCode::GONE
            }
            ApiError::ResourceVersionTooLarge { .. } | ApiError::RequestTimeout => StatusCode::GATEWAY_TIMEOUT,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::UnsupportedMediaType(_) | ApiError::UndecodableProtobuf(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RequestEntityTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::InternalError(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The Status `reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            ApiError::NotFound { .. } | ApiError::NamespaceNotFound(_) | ApiError::PathNotFound => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } => "Conflict",
            ApiError::Invalid { .. } | ApiError::UnprocessablePatch(_) => "Invalid",
            ApiError::ContinueExpired { .. } | ApiError::ResourceVersionTooOld { .. } | ApiError::ListTooOld => {
                "Expired"
            }
            ApiError::ResourceVersionTooLarge { .. } | ApiError::RequestTimeout => "Timeout",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Forbidden(_) => "Forbidden",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::MethodNotAllowed => "MethodNotAllowed",
            ApiError::UnsupportedMediaType(_) | ApiError::UndecodableProtobuf(_) => "UnsupportedMediaType",
            ApiError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            ApiError::TooManyRequests { .. } => "TooManyRequests",
            ApiError::InternalError(_) => "InternalError",
            ApiError::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// The variant as a metric or log label: the Status `reason`, which is what clients see.
    pub fn metric_label(&self) -> &'static str {
        self.reason()
    }

    /// The `metav1.Status` object for this error.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": self.reason(),
            "code": self.code().as_u16(),
        });
        let details = match self {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name }
            | ApiError::Conflict { resource, name } => {
                Some(json!({"name": name, "group": resource.group(), "kind": resource.plural()}))
            }
            ApiError::Invalid { kind, group, name, causes } => Some(json!({
                "name": name,
                "group": group,
                "kind": kind,
                "causes": causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect::<Vec<_>>(),
            })),
            ApiError::TooManyRequests { retry_after_seconds } => {
                Some(json!({"retryAfterSeconds": retry_after_seconds}))
            }
            // client-go's reflector looks for this cause to fall back to a fresh list.
            ApiError::ResourceVersionTooLarge { .. } => Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            })),
            ApiError::ContinueExpired { inconsistent_continue } => {
                status["metadata"] = json!({"continue": inconsistent_continue});
                None
            }
            _ => None,
        };
        if let Some(details) = details {
            status["details"] = details;
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let body = self.status().to_string();
        let mut response = (code, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        if let ApiError::TooManyRequests { retry_after_seconds } = self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_seconds));
        }
        response
    }
}

/// `Result` with [`ApiError`].
pub type Result<T, E = ApiError> = std::result::Result<T, E>;
