//! The device-association read: links made through the library's API between sparse subjects and new
//! browsers, then assessed again and again (one link read by id each, judged against subject, browser and now).

use std::sync::Arc;

use janitor_core::evidence::{
    DeviceAssessment, DeviceLinkInput, LinkId, SubjectId, VerificationInput, VerificationMethod,
};
use janitor_core::{Retention, VisitorId, VisitorStore};
use janitor_sql::PgVisitorStore;

use super::points::Workload;
use crate::capacity::seed::{self, now_ms, SPARSE_SUBJECTS};
use crate::closed_loop::{self, Outcome, Point};

/// Links made before the point.
pub const LINKS: u64 = 64;

/// Tasks of the point.
pub const CONCURRENCY: u64 = 64;

/// How long the links last: 30 days.
const LINK_LIFETIME_MS: i64 = 30 * 24 * 3_600_000;

/// Makes [`LINKS`] links (each with a browser of its own) and runs the read point over them.
pub async fn run(workload: &Workload) -> Result<Point, String> {
    let visitors = PgVisitorStore::new(workload.database.clone(), Retention::default());
    let mut links: Vec<(LinkId, SubjectId, VisitorId)> = Vec::new();
    for n in 0..LINKS {
        let now = now_ms();
        let visitor = VisitorId::generate();
        visitors
            .create_visitor(&visitor, now)
            .await
            .map_err(|e| format!("device links: creating a browser: {e}"))?;
        let subject = seed::sparse_subject(&workload.evidence, n * 1_543 % SPARSE_SUBJECTS);
        let input = DeviceLinkInput {
            subject: subject.clone(),
            visitor: visitor.clone(),
            verification: VerificationInput {
                method: VerificationMethod::Password,
                issuer: "capacity-harness".to_owned(),
                // One verification per link and run: a reused fixture keeps earlier runs' links.
                event_id: format!("link-{}-{n}", workload.run_tag),
                verified_at: now,
            },
            expires_at: now + LINK_LIFETIME_MS,
        };
        let link = workload
            .evidence
            .at(now)
            .link(&input)
            .await
            .map_err(|e| format!("device links: linking: {e}"))?;
        links.push((link.id, subject, visitor));
    }
    let (evidence, links) = (workload.evidence.clone(), Arc::new(links));
    Ok(closed_loop::run(
        "device-association-read",
        CONCURRENCY,
        workload.samples,
        &workload.gauges,
        move |i| {
            let (evidence, links) = (evidence.clone(), links.clone());
            async move {
                let (id, subject, visitor) = &links[(i % links.len() as u64) as usize];
                match evidence.at(now_ms()).assess(id, subject, visitor).await {
                    Ok(DeviceAssessment::VerifiedAssociation { .. }) => {
                        Outcome::expected("verified-association")
                    }
                    Ok(DeviceAssessment::Invalid { .. }) => Outcome::unexpected("invalid"),
                    Err(e) => Outcome::error(e),
                }
            }
        },
    )
    .await)
}
