//! Erasing an account and a browser on PostgreSQL, in one transaction, by the rule of
//! [`janitor_core::erasure`]: events about other subjects are detached, never deleted.
//!
//! The contract's foreign keys cascade from `identity_subjects` and `visitors` to every event naming the row,
//! as actor or visitor too. So the rows are deleted last, after evidence is erased statement by statement:
//! by then the cascade has nothing left to reach. Round trips: `BEGIN`, the lock, evidence, the subject (with
//! an account), the visitor (with a browser), `COMMIT` — six at most, three when neither exists.

use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::SubjectId;
use janitor_core::{StoreError, VisitorId};

use crate::database::{Connection, Database};
use crate::error::unreadable;
use crate::evidence_store::{count, erase_evidence};

pub(crate) mod statements;

/// Erases `subject` and `browser` (at least one given) in one transaction: on any failure nothing is
/// erased.
pub(crate) async fn erase(
    database: &Database,
    subject: Option<&SubjectId>,
    browser: Option<&VisitorId>,
) -> Result<AccountErasure, StoreError> {
    let mut connection = database.connection().await?;
    connection.begin().await?;
    let (subject_existed, visitor_existed, linked) =
        lock(&mut connection, subject, browser).await?;
    // With an account, its browser goes only when it is the account's own.
    let not_linked = subject.is_some() && visitor_existed && !linked;
    let browser = browser.filter(|_| visitor_existed && !not_linked);
    if !subject_existed && browser.is_none() {
        // The foreign keys leave no event or link naming a row that does not exist: nothing to erase.
        connection.commit().await?;
        let report = AccountErasure::default();
        return Ok(AccountErasure {
            visitor_not_linked: not_linked,
            ..report
        });
    }
    let mut report = erase_evidence(&mut connection, subject, browser).await?;
    report.visitor_not_linked = not_linked;
    if let Some(subject) = subject.filter(|_| subject_existed) {
        erase_subject(&mut connection, subject, &mut report).await?;
    }
    if let Some(browser) = browser {
        let delete = crate::visitor_store::statements::DELETE_VISITOR;
        let deleted = connection.execute(delete, &[&browser.as_str()]).await?;
        report.visitor_erased = deleted > 0;
    }
    connection.commit().await?;
    Ok(report)
}

async fn lock(
    connection: &mut Connection<'_>,
    subject: Option<&SubjectId>,
    browser: Option<&VisitorId>,
) -> Result<(bool, bool, bool), StoreError> {
    let subject = subject.map(SubjectId::as_str);
    let browser = browser.map(VisitorId::as_str);
    let rows = connection
        .query(statements::LOCK_TARGETS, &[&subject, &browser])
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| unreadable("erasure targets", "no row"))?;
    let exists = |column| {
        row.try_get::<_, bool>(column)
            .map_err(|e| unreadable("erasure targets", e))
    };
    Ok((exists(0)?, exists(1)?, exists(2)?))
}

async fn erase_subject(
    connection: &mut Connection<'_>,
    subject: &SubjectId,
    report: &mut AccountErasure,
) -> Result<(), StoreError> {
    let rows = connection
        .query(statements::ERASE_SUBJECT, &[&subject.as_str()])
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| unreadable("erasure counts", "no row"))?;
    report.subject_existed = true;
    report.keys_deleted = count(row, 0)?;
    report.delegations_deleted = count(row, 1)?;
    report.learning_sessions_deleted = count(row, 2)?;
    Ok(())
}
