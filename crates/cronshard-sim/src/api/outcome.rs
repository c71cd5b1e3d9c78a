//! What an API handler produced: the response, and the object it answered with for the audit log.

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::store::Object;

/// What a handler produced, with what the audit log needs to know.
pub(super) struct Outcome {
    pub(super) response: Response,
    pub(super) object: Option<Arc<Object>>,
}

impl Outcome {
    pub(super) fn object(code: StatusCode, object: Arc<Object>, warnings: &[String]) -> Self {
        let mut response = (code, [(header::CONTENT_TYPE, "application/json")], object.body.clone()).into_response();
        for warning in warnings {
            let text = format!("299 - {}", json!(warning));
            if let Ok(value) = HeaderValue::from_str(&text) {
                response.headers_mut().append(header::WARNING, value);
            }
        }
        Outcome { response, object: Some(object) }
    }

    pub(super) fn plain(response: Response) -> Self {
        Outcome { response, object: None }
    }
}
