//! What the candidate lookup reads of each row: the compared features as a small text array (the column of
//! `migrations/0006_lookup_features.sql`), decoded without a JSON parser, or the whole `signals_json` as before.

use std::error::Error;
use std::sync::Arc;

use janitor_core::identification::observation::{Automation, Graphics, Hardware, Screen, Size};
use janitor_core::{Observation, StoreError};
use postgres_protocol::types::array_from_sql;
use tokio_postgres::fallible_iterator::FallibleIterator;
use tokio_postgres::types::{FromSql, Json, Type};
use tokio_postgres::Row;

use crate::error::unreadable;

/// How [`PgVisitorStore`](crate::PgVisitorStore) reads candidate rows. Every way gives the same ranking; they
/// differ in what the server sends and the client decodes, and are kept so that a benchmark can compare them
/// in one run ([docs/storage.md](https://github.com/janitor-rust/janitor/blob/main/docs/storage.md), "The candidate lookup").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LookupRead {
    /// The stored `lookup_features` column: fourteen short texts per row, no JSON on either side. The default:
    /// the fastest measured.
    #[default]
    StoredFeatures,
    /// The same array computed from `signals_json` by the lookup itself: no stored column is read, the server
    /// extracts the fields of every row at every lookup.
    ComputedFeatures,
    /// The whole `signals_json`, as text, parsed by the client: the design before the compact rows.
    SignalsJson,
    /// The stored features, read from the opt-in covering indexes alone (no heap page, once vacuum has marked
    /// the table's pages visible). **Only with those indexes**: build them first with
    /// [`Database::create_covering_lookup_indexes`](crate::Database::create_covering_lookup_indexes) and check
    /// [`missing_covering_lookup_indexes`](crate::Database::missing_covering_lookup_indexes); without them the
    /// screen probes find no index and read the table.
    CoveringIndexes,
}

/// The JSON paths of the compared features, in the order of the `lookup_features` array.
pub(crate) const FEATURE_PATHS: [&str; 14] = [
    "{platform}",
    "{browser}",
    "{timezone}",
    "{languages}",
    "{screen,width}",
    "{screen,height}",
    "{viewport,width}",
    "{viewport,height}",
    "{hardware,hardwareConcurrency}",
    "{hardware,deviceMemory}",
    "{hardware,maxTouchPoints}",
    "{graphics,webglVendor}",
    "{graphics,webglRenderer}",
    "{automation,webdriver}",
];

/// The array of the compared features of `signals_json`, as the migration's generated column defines it.
pub(crate) fn features_expression() -> String {
    let fields: Vec<String> = FEATURE_PATHS
        .iter()
        .map(|path| format!("signals_json #>> '{path}'"))
        .collect();
    format!("ARRAY[{}]", fields.join(", "))
}

impl LookupRead {
    /// The select-list item of the row's observation.
    pub(crate) fn column(self) -> String {
        match self {
            LookupRead::StoredFeatures | LookupRead::CoveringIndexes => {
                "lookup_features".to_owned()
            }
            LookupRead::ComputedFeatures => features_expression(),
            LookupRead::SignalsJson => "signals_json".to_owned(),
        }
    }

    /// The observation of `row`'s column `column`, read as this way selected it.
    pub(crate) fn observation(
        self,
        row: &Row,
        column: usize,
    ) -> Result<Arc<Observation>, StoreError> {
        match self {
            LookupRead::SignalsJson => row
                .try_get::<_, Json<Observation>>(column)
                .map(|Json(o)| Arc::new(o))
                .map_err(|e| unreadable("an observation", e)),
            LookupRead::StoredFeatures
            | LookupRead::ComputedFeatures
            | LookupRead::CoveringIndexes => {
                let RawTextArray(raw) = row
                    .try_get(column)
                    .map_err(|e| unreadable("the compared features", e))?;
                features_in_place(raw).map(Arc::new)
            }
        }
    }
}

/// The compared part of the bytes of a `lookup_features` array: the texts walked in place.
pub(crate) fn features_in_place(raw: &[u8]) -> Result<Observation, StoreError> {
    compared_observation(&feature_fields(raw)?)
}

/// The same through tokio-postgres's `Vec<Option<&str>>` decoding, as the lookup read it before the walk.
#[cfg(feature = "testing")]
pub(crate) fn features_through_vec(raw: &[u8]) -> Result<Observation, StoreError> {
    let fields = Vec::<Option<&str>>::from_sql(&Type::TEXT_ARRAY, raw)
        .map_err(|e| unreadable("the compared features", e))?;
    compared_observation(&fields)
}

/// The texts of a one-dimensional text array, read in place (no vector per row); NULL elements are `None`.
fn feature_fields(raw: &[u8]) -> Result<[Option<&str>; FEATURE_PATHS.len()], StoreError> {
    let wrong = |e| unreadable("the compared features", e);
    let array = array_from_sql(raw).map_err(wrong)?;
    if array.dimensions().count().map_err(wrong)? > 1 {
        return Err(unreadable(
            "the compared features",
            "not a one-dimensional array",
        ));
    }
    let mut fields = [None; FEATURE_PATHS.len()];
    let mut values = array.values();
    let mut count = 0;
    while let Some(value) = values.next().map_err(wrong)? {
        if let Some(field) = fields.get_mut(count) {
            *field = value
                .map(std::str::from_utf8)
                .transpose()
                .map_err(|e| unreadable("the compared features", e))?;
        }
        count += 1;
    }
    if count != FEATURE_PATHS.len() {
        return Err(unreadable(
            "the compared features",
            format!("{count} fields, not {}", FEATURE_PATHS.len()),
        ));
    }
    Ok(fields)
}

/// A text array's bytes as the server sent them, to be walked in place.
struct RawTextArray<'a>(&'a [u8]);

impl<'a> FromSql<'a> for RawTextArray<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(RawTextArray(raw))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TEXT_ARRAY
    }
}

fn number(field: Option<&str>) -> Result<Option<f64>, StoreError> {
    // PostgreSQL spells a JSON number as its exact decimal; Rust's parse rounds it correctly, as JSON.parse
    // and serde_json (float_roundtrip) do, so the value is the one the whole observation would hold.
    field
        .map(|text| {
            text.parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .ok_or_else(|| unreadable("a compared number", "not a finite JSON number"))
        })
        .transpose()
}

fn languages(field: Option<&str>) -> Result<Option<Vec<String>>, StoreError> {
    // The one structured field: a short JSON array of strings, so a JSON parse here is cheap.
    match field {
        None => Ok(None),
        Some(text) => serde_json::from_str(text).map_err(|e| unreadable("the languages", e)),
    }
}

fn flag(field: Option<&str>) -> Result<Option<bool>, StoreError> {
    match field {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(unreadable("the webdriver flag", "not a JSON boolean")),
    }
}

/// The [`compared_part`](janitor_core::identification::similarity::compared_part) of a stored observation,
/// from the fourteen fields of its `lookup_features` array.
pub(crate) fn compared_observation(fields: &[Option<&str>]) -> Result<Observation, StoreError> {
    let [platform, browser, timezone, langs, sw, sh, vw, vh, cores, memory, touch, vendor, renderer, webdriver] =
        *fields
    else {
        return Err(unreadable(
            "the compared features",
            format!("{} fields, not {}", fields.len(), FEATURE_PATHS.len()),
        ));
    };
    let text = |field: Option<&str>| field.map(str::to_owned);
    let (sw, sh, vw, vh) = (number(sw)?, number(sh)?, number(vw)?, number(vh)?);
    let (cores, memory, touch) = (number(cores)?, number(memory)?, number(touch)?);
    Ok(Observation {
        platform: text(platform),
        browser: text(browser),
        timezone: text(timezone),
        languages: languages(langs)?,
        screen: (sw.is_some() || sh.is_some()).then(|| Screen {
            width: sw,
            height: sh,
            ..Screen::default()
        }),
        viewport: (vw.is_some() || vh.is_some()).then_some(Size {
            width: vw,
            height: vh,
        }),
        hardware: (cores.is_some() || memory.is_some() || touch.is_some()).then_some(Hardware {
            hardware_concurrency: cores,
            device_memory: memory,
            max_touch_points: touch,
        }),
        automation: flag(webdriver)?.map(|w| Automation { webdriver: Some(w) }),
        graphics: (vendor.is_some() || renderer.is_some()).then(|| Graphics {
            webgl_vendor: text(vendor),
            webgl_renderer: text(renderer),
        }),
        ..Observation::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_defines_the_same_array() {
        let migration = include_str!("../../migrations/0006_lookup_features.sql");
        let squeezed = migration
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace("ARRAY[ ", "ARRAY[")
            .replace(" ]", "]");
        assert!(
            squeezed.contains(&format!(
                "GENERATED ALWAYS AS ({}) STORED",
                features_expression()
            )),
            "{squeezed}"
        );
    }

    #[test]
    fn fields_decode_into_the_compared_part() {
        let mut fields: Vec<Option<&str>> = vec![None; 14];
        assert_eq!(
            compared_observation(&fields).unwrap(),
            Observation::default()
        );
        fields[0] = Some("a,\"b\"");
        fields[3] = Some(r#"["en,", "\u00e9"]"#);
        fields[4] = Some("0.30000000000000004");
        // How PostgreSQL spells the JSON number 1.7976931348623157e308 (f64::MAX): all 309 digits.
        let max = format!("17976931348623157{}", "0".repeat(292));
        fields[9] = Some(&max);
        fields[10] = Some("0");
        fields[13] = Some("false");
        let o = compared_observation(&fields).unwrap();
        assert_eq!(o.platform.as_deref(), Some("a,\"b\""));
        assert_eq!(o.languages, Some(vec!["en,".to_owned(), "é".to_owned()]));
        assert_eq!(o.screen.unwrap().width, Some(0.1 + 0.2));
        let hardware = o.hardware.unwrap();
        assert_eq!(hardware.device_memory, Some(f64::MAX));
        assert_eq!(hardware.max_touch_points, Some(0.0));
        assert_eq!(o.automation.unwrap().webdriver, Some(false));
    }

    #[test]
    fn malformed_fields_are_unreadable_not_a_panic() {
        let base: Vec<Option<&str>> = vec![None; 14];
        assert!(compared_observation(&base[..13]).is_err());
        for (at, bad) in [
            (4, "wide"),
            (4, "NaN"),
            (8, "inf"),
            (3, "{\"en\":1}"),
            (13, "yes"),
        ] {
            let mut fields = base.clone();
            fields[at] = Some(bad);
            assert!(compared_observation(&fields).is_err(), "{at} {bad}");
        }
    }

    /// The driver checks a column's type with `accepts` before decoding it, so another array type (a schema
    /// whose column is not `text[]`) is a data error, never bytes walked as text.
    #[test]
    fn only_a_text_array_is_walked_as_the_features() {
        assert!(<RawTextArray as FromSql>::accepts(&Type::TEXT_ARRAY));
        for other in [
            Type::VARCHAR_ARRAY,
            Type::BPCHAR_ARRAY,
            Type::NAME_ARRAY,
            Type::INT4_ARRAY,
            Type::JSONB_ARRAY,
            Type::TEXT,
            Type::JSONB,
            Type::BYTEA,
        ] {
            assert!(!<RawTextArray as FromSql>::accepts(&other), "{other}");
        }
    }

    /// The in-place walk gives what tokio-postgres's own `Vec<Option<&str>>` decoding gives, and refuses what
    /// it refuses or what is not fourteen fields. (The array's bytes are built by `testing`.)
    #[cfg(feature = "testing")]
    #[test]
    fn feature_fields_decode_as_the_driver_does() {
        let texts: Vec<String> = (0..15).map(|i| format!("f{i} é")).collect();
        let element = |i: usize| (i % 4 != 1).then(|| texts[i].as_bytes());
        for n in [0, 1, 13, 14, 15] {
            let elements: Vec<Option<&[u8]>> = (0..n).map(element).collect();
            let raw = crate::testing::lookup_rows::text_array(&[n as i32], &elements);
            let driver = Vec::<Option<&str>>::from_sql(&Type::TEXT_ARRAY, &raw).unwrap();
            match feature_fields(&raw) {
                Ok(fields) => {
                    assert_eq!(n, 14);
                    assert_eq!(fields.to_vec(), driver);
                }
                Err(e) => assert_ne!(n, 14, "{e}"),
            }
        }
        let mut elements: Vec<Option<&[u8]>> = (0..14).map(element).collect();
        let two_dimensional = crate::testing::lookup_rows::text_array(&[7, 2], &elements);
        assert!(Vec::<Option<&str>>::from_sql(&Type::TEXT_ARRAY, &two_dimensional).is_err());
        assert!(feature_fields(&two_dimensional).is_err());
        elements[2] = Some(&[0xff, 0xfe]);
        let not_utf8 = crate::testing::lookup_rows::text_array(&[14], &elements);
        assert!(Vec::<Option<&str>>::from_sql(&Type::TEXT_ARRAY, &not_utf8).is_err());
        assert!(feature_fields(&not_utf8).is_err());
        let truncated = crate::testing::lookup_rows::text_array(&[14], &elements[..13]);
        assert!(Vec::<Option<&str>>::from_sql(&Type::TEXT_ARRAY, &truncated).is_err());
        assert!(feature_fields(&truncated).is_err());
        assert!(feature_fields(&[]).is_err());
    }
}
