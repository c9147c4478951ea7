//! The endpoint's part in login-labelled learning: the `__visitor_learning` cookie, the request's learning
//! context, and the call to [`Learning::observe`](janitor_core::learning::Learning::observe).

use http::header::HeaderValue;
use http::request::Parts;
use janitor_core::directory::AssessmentContext;
use janitor_core::learning::{LearningCookie, LearningVisit, Login};
use janitor_core::Observation;

use super::VisitorContext;
use crate::handle::Inner;

/// The learning cookie's name: the visitor cookie's, with `_learning`.
pub const LEARNING_COOKIE_NAME: &str = "__visitor_learning";

/// What server code tells the endpoint about learning for one request, as a request extension beside the
/// [`VisitorContext`]. Never taken from the request body or headers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearningContext {
    /// The user's choice, where the application asks for it: under the default per-request policy only
    /// `Some(true)` is collected; under the application policy everything but `Some(false)` is.
    pub consent: Option<bool>,
    /// Who the application's own authentication verified, to be assessed by the identity directory: a
    /// verified person acting as themselves (`actor_id` = `subject_id`, no delegation) labels the flow.
    pub verified: Option<AssessmentContext>,
}

/// The value of exactly one `__visitor_learning` cookie, if the request carries exactly one.
fn learning_cookie(parts: &Parts) -> Option<&str> {
    super::cookie::named(&parts.headers, LEARNING_COOKIE_NAME)
}

/// `__visitor_learning=<id>; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=<secs>`, host-only; an empty
/// value with `Max-Age=0` clears it.
pub(crate) fn set_learning_cookie(cookie: &LearningCookie, secure: bool) -> String {
    let (value, max_age) = match cookie {
        LearningCookie::Set {
            id, max_age_secs, ..
        } => (id.as_str(), *max_age_secs),
        LearningCookie::Clear => ("", 0),
    };
    format!(
        "{LEARNING_COOKIE_NAME}={value}; HttpOnly{}; SameSite=Lax; Path=/; Max-Age={max_age}",
        if secure { "; Secure" } else { "" },
    )
}

/// Who is signed in: the directory's assessment of a verified context; an account without one is a login
/// that never labels; neither is anonymous.
async fn login(janitor: &Inner, parts: &Parts, context: Option<&LearningContext>) -> Login {
    if let Some(verified) = context.and_then(|c| c.verified.as_ref()) {
        return match janitor.directory.assess(verified).await {
            Ok(attribution) => Login::from_attribution(&attribution),
            Err(e) => {
                tracing::warn!(error = %e, "the learning login could not be assessed");
                Login::Other
            }
        };
    }
    let signed_in = parts
        .extensions
        .get::<VisitorContext>()
        .is_some_and(|c| c.account.is_some());
    if signed_in {
        Login::Other
    } else {
        Login::Anonymous
    }
}

/// The learning `Set-Cookie` line for this request, if any. Learning never fails the identification: a store
/// failure is logged (without ids) and the cookie left alone.
pub(crate) async fn observe(
    janitor: &Inner,
    parts: &Parts,
    observation: Observation,
) -> Option<HeaderValue> {
    let cookie = learning_cookie(parts);
    let secure = janitor.config.cookie.secure();
    if !janitor.learning.config().enabled() {
        // Off: no store or directory read; a leftover cookie is cleared.
        return cookie.and_then(|_| {
            HeaderValue::from_str(&set_learning_cookie(&LearningCookie::Clear, secure)).ok()
        });
    }
    // Boxed: the learning future is kilobytes, and every identification would otherwise carry it unused.
    Box::pin(learn(janitor, parts, observation, cookie, secure)).await
}

/// [`observe`] with learning on.
async fn learn(
    janitor: &Inner,
    parts: &Parts,
    mut observation: Observation,
    cookie: Option<&str>,
    secure: bool,
) -> Option<HeaderValue> {
    let context = parts.extensions.get::<LearningContext>();
    let login = login(janitor, parts, context).await;
    // Learning keeps the page's own signals, as it did before the engine was given the network and
    // extended ones.
    observation.network = None;
    observation.extended = None;
    let visit = LearningVisit {
        cookie,
        consent: context.and_then(|c| c.consent),
        login: &login,
        observation: &observation,
    };
    let outcome = match janitor.learning.observe(visit).await {
        Ok(outcome) => outcome?,
        Err(e) => {
            tracing::warn!(error = %e, "learning storage failed; the identification is answered without it");
            return None;
        }
    };
    let line = set_learning_cookie(&outcome, secure);
    HeaderValue::from_str(&line).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::COOKIE;
    use janitor_core::learning::{Prediction, PredictionStatus, SessionId};

    #[test]
    fn cookie_lines() {
        let id = SessionId::parse(&format!("ses_{}", "a".repeat(48))).unwrap();
        let set = LearningCookie::Set {
            id,
            max_age_secs: 1800,
            prediction: Prediction::status(PredictionStatus::NotRun),
        };
        assert_eq!(
            set_learning_cookie(&set, true),
            format!(
                "__visitor_learning=ses_{}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=1800",
                "a".repeat(48)
            )
        );
        assert_eq!(
            set_learning_cookie(&LearningCookie::Clear, false),
            "__visitor_learning=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"
        );
    }

    #[test]
    fn exactly_one_cookie_counts() {
        let parts = |cookies: &[&str]| {
            let mut builder = http::Request::builder();
            for c in cookies {
                builder = builder.header(COOKIE, *c);
            }
            builder.body(()).unwrap().into_parts().0
        };
        let one = parts(&["__visitor=vis_1; __visitor_learning=ses_x"]);
        assert_eq!(learning_cookie(&one), Some("ses_x"));
        let two = parts(&["__visitor_learning=a", "__visitor_learning=b"]);
        assert_eq!(learning_cookie(&two), None);
        let none = parts(&["__visitor_learningx=a; __visitor=vis_1"]);
        assert_eq!(learning_cookie(&none), None);
        // Read as the visitor cookie is: spaces around the name and value, a quoted value.
        let spaced = parts(&["__visitor=vis_1; __visitor_learning = \"ses_x\" "]);
        assert_eq!(learning_cookie(&spaced), Some("ses_x"));
    }
}
