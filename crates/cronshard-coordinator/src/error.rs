//! The coordinator's error type.

/// What stops the coordinator before it runs, or a status read.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr)]
pub enum Error {
    /// The Leases could not be listed (`cronshard status`).
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A setting that cannot work: timings out of order, an identity that cannot name a
    /// Lease.
    #[error("invalid setting: {0}")]
    Settings(String),
    /// The namespace of the Leases does not exist (the API server's answer is the source).
    #[error(
        "invalid setting: namespace {namespace:?} does not exist: create it or pass --namespace (the Leases live there)"
    )]
    NamespaceMissing {
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    /// The variant as a metric or log label: its name.
    pub fn metric_label(&self) -> &'static str {
        self.into()
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    //! Labels are the variants' names; sources are kept.

    use std::error::Error as _;

    use super::*;

    fn missing() -> Error {
        let status = kube::core::Status::failure("namespaces \"gone\" not found", "NotFound");
        Error::NamespaceMissing { namespace: "gone".into(), source: kube::Error::Api(Box::new(status)) }
    }

    #[test]
    fn labels_are_the_variant_names() {
        assert_eq!(Error::Settings("x".into()).metric_label(), "Settings");
        assert_eq!(missing().metric_label(), "NamespaceMissing");
    }

    #[test]
    fn a_missing_namespace_keeps_the_api_servers_answer() {
        let error = missing();
        assert!(error.to_string().contains("namespace \"gone\" does not exist"), "{error}");
        let source = error.source().expect("a source");
        assert!(source.to_string().contains("not found"), "{source}");
    }
}
