//! The optional `behavior` section: aggregate counts, declared once as a table.

use serde_json::{Map, Value};

use super::walk::{integer, Path};
use super::PayloadError;

macro_rules! behavior {
    ($( $(#[$doc:meta])* $field:ident : $name:literal, max $max:literal, $req:ident; )*) => {
        /// Aggregate interaction counts. No positions, keys or form values: counts and durations only.
        ///
        /// The six fields the schema requires are present after validation; the rest are optional.
        #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct Behavior {
            $( $(#[$doc])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<u64>, )*
        }

        /// Every behaviour field: JSON name, largest value, and whether the schema requires it.
        pub const BEHAVIOR_FIELDS: &[(&str, u64, bool)] = &[ $( ($name, $max, behavior!(@req $req)), )* ];

        impl Behavior {
            pub(super) fn parse(map: &Map<String, Value>, at: &Path<'_>) -> Result<Self, PayloadError> {
                let mut behavior = Behavior::default();
                for key in map.keys() {
                    if !BEHAVIOR_FIELDS.iter().any(|(name, _, _)| name == key) {
                        return Err(at.child(key).error("unknown field"));
                    }
                }
                $(
                    let path = at.child($name);
                    behavior.$field = match map.get($name) {
                        None if behavior!(@req $req) => return Err(path.error("required")),
                        None => None,
                        Some(value) => Some(integer(value, $max as f64, &path)? as u64),
                    };
                )*
                Ok(behavior)
            }
        }
    };
    (@req required) => { true };
    (@req optional) => { false };
}

behavior! {
    /// Milliseconds since the page loaded (0–604,800,000: seven days).
    page_age_ms: "pageAgeMs", max 604_800_000, required;
    /// Mouse moves seen.
    mouse_move_count: "mouseMoveCount", max 1_000_000, required;
    /// Pointer downs seen.
    pointer_down_count: "pointerDownCount", max 1_000_000, required;
    /// Key downs seen (never which keys).
    key_down_count: "keyDownCount", max 1_000_000, required;
    /// Scroll events seen.
    scroll_count: "scrollCount", max 1_000_000, required;
    /// Visibility changes seen.
    visibility_change_count: "visibilityChangeCount", max 1_000_000, required;
    /// Total mouse travel in CSS pixels.
    mouse_distance_px: "mouseDistancePx", max 1_000_000_000, optional;
    /// Milliseconds with mouse activity.
    mouse_active_ms: "mouseActiveMs", max 1_000_000_000, optional;
    /// Mouse samples taken.
    mouse_sample_count: "mouseSampleCount", max 1_000_000, optional;
    /// Mouse samples with a large jump.
    mouse_large_step_count: "mouseLargeStepCount", max 1_000_000, optional;
    /// Mouse intervals measured.
    mouse_interval_count: "mouseIntervalCount", max 1_000_000, optional;
    /// Mean mouse interval, milliseconds.
    mouse_interval_mean_ms: "mouseIntervalMeanMs", max 1000, optional;
    /// Standard deviation of the mouse interval, milliseconds.
    mouse_interval_std_dev_ms: "mouseIntervalStdDevMs", max 1000, optional;
    /// Interactions closer together than a short gap.
    interaction_short_gap_count: "interactionShortGapCount", max 1_000_000, optional;
    /// Interactions repeating the previous gap.
    interaction_repeat_gap_count: "interactionRepeatGapCount", max 1_000_000, optional;
    /// Interaction gaps that could be compared.
    interaction_comparable_gap_count: "interactionComparableGapCount", max 1_000_000, optional;
    /// Changes of mouse direction.
    mouse_direction_changes: "mouseDirectionChanges", max 1_000_000, optional;
    /// Mouse pauses.
    mouse_pause_count: "mousePauseCount", max 1_000_000, optional;
    /// Total scroll travel in CSS pixels.
    scroll_distance_px: "scrollDistancePx", max 1_000_000_000, optional;
    /// Changes of scroll direction.
    scroll_direction_changes: "scrollDirectionChanges", max 1_000_000, optional;
    /// Interaction intervals measured.
    interaction_interval_count: "interactionIntervalCount", max 1_000_000, optional;
    /// Mean interaction interval, milliseconds.
    interaction_interval_mean_ms: "interactionIntervalMeanMs", max 60_000, optional;
    /// Standard deviation of the interaction interval, milliseconds.
    interaction_interval_std_dev_ms: "interactionIntervalStdDevMs", max 60_000, optional;
}
