//! Identification: from a browser's payload to a visitor id.
//!
//! The payload is validated strictly ([`payload`]) and normalized into an [`Observation`](observation::Observation);
//! a cookie visit reads its visitor's history, a missing-cookie visit looks up candidates by probes
//! ([`candidates`]), scores them ([`similarity`]), may ask an [`Evaluator`](evaluator::Evaluator) (the Jev
//! provider's compact state and questions are in [`jev`]) and decides whether to restore an id ([`decision`]).
//! The [`Engine`](engine::Engine) runs one identification over a [`VisitorStore`](store::VisitorStore).

pub mod candidates;
pub mod config;
pub mod decision;
pub mod engine;
pub mod evaluator;
pub mod jev;
pub mod network;
pub mod observation;
pub mod payload;
pub mod policy;
pub mod similarity;
pub mod store;
