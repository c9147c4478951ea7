//! The tower [`Layer`] that puts an [`Admission`] bound in front of a service.

use tower::Layer;

use super::{Admission, AdmissionService};

/// Wraps services in an [`AdmissionService`]; every service it wraps draws from the same [`Admission`].
/// Made by [`Admission::layer`].
#[derive(Debug, Clone)]
pub struct AdmissionLayer {
    admission: Admission,
}

impl AdmissionLayer {
    /// A layer drawing from `admission`'s slots.
    pub fn new(admission: Admission) -> Self {
        AdmissionLayer { admission }
    }
}

impl<S> Layer<S> for AdmissionLayer {
    type Service = AdmissionService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AdmissionService::new(inner, self.admission.clone())
    }
}
