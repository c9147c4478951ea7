//! Statements with their tables named by schema, for connections whose session settings cannot be relied on
//! (a transaction pooler, a pool handed in): there, `search_path` is not ours to set.

use crate::config::SchemaName;

/// The tables the migrations create, and the one function the stores call as a table (`FROM f(...)`); only
/// these names are qualified.
const TABLES: &[&str] = &[
    "janitor_save_observation",
    "visitors",
    "observations",
    "protection_quotas",
    "evaluation_controls",
    "identity_subjects",
    "application_events",
    "device_links",
    "identity_keys",
    "identity_delegations",
    "learning_sessions",
    "janitor_migrations",
    "janitor_key_checks",
];

/// The keywords after which a table's name stands in the stores' statements.
const BEFORE_TABLE: &[&str] = &["FROM", "JOIN", "INTO", "UPDATE"];

/// `sql` with every table reference that follows `FROM`, `JOIN`, `INTO` or `UPDATE` prefixed by `schema.`.
///
/// Words inside quotes are left alone, and so are table names used as qualifiers (`identity_subjects.kind`),
/// which PostgreSQL resolves against the qualified table of the statement.
pub(crate) fn qualify(sql: &str, schema: &SchemaName) -> String {
    let mut out = String::with_capacity(sql.len() + 4 * schema.as_str().len());
    let mut previous_word = "";
    let mut rest = sql;
    while let Some(c) = rest.chars().next() {
        if c == '\'' || c == '"' {
            // A literal or a quoted identifier, copied whole.
            let end = rest[1..].find(c).map_or(rest.len(), |at| at + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
            previous_word = "";
        } else if is_word(c) {
            let end = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
            let word = &rest[..end];
            let qualified_already = rest[end..].starts_with('.');
            if TABLES.contains(&word)
                && !qualified_already
                && BEFORE_TABLE
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(previous_word))
            {
                out.push_str(schema.as_str());
                out.push('.');
            }
            out.push_str(word);
            previous_word = word;
            rest = &rest[end..];
        } else {
            out.push(c);
            if !c.is_whitespace() {
                previous_word = "";
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(sql: &str) -> String {
        qualify(sql, &SchemaName::new("tenant").unwrap())
    }

    #[test]
    fn table_references_are_qualified() {
        assert_eq!(
            q("DELETE FROM visitors v WHERE NOT EXISTS (SELECT 1 FROM observations o)"),
            "DELETE FROM tenant.visitors v WHERE NOT EXISTS (SELECT 1 FROM tenant.observations o)"
        );
        assert_eq!(
            q("INSERT INTO protection_quotas AS q (id) VALUES ($1)"),
            "INSERT INTO tenant.protection_quotas AS q (id) VALUES ($1)"
        );
        assert_eq!(
            q("UPDATE device_links SET x = 1 FROM\n  janitor_migrations, x.visitors"),
            "UPDATE tenant.device_links SET x = 1 FROM\n  tenant.janitor_migrations, x.visitors"
        );
    }

    #[test]
    fn names_that_are_not_table_references_stay() {
        for sql in [
            "SELECT visitor_id, visitors FROM unnest($1) AS visitors",
            "SELECT '{FROM visitors}' FROM \"observations\"",
            "WHERE identity_subjects.kind = EXCLUDED.kind",
            "SELECT count(*) FROM pruned",
        ] {
            assert_eq!(q(sql), sql);
        }
    }

    #[test]
    #[cfg(feature = "testing")]
    fn no_statement_of_the_stores_is_left_unqualified() {
        let mut texts: Vec<String> = crate::testing::statements::STATEMENTS
            .iter()
            .map(|(_, text)| text.to_string())
            .collect();
        let probes = janitor_core::identification::candidates::probes_for(
            &janitor_core::testing::visitor_store::observation("x"),
        );
        texts.push(crate::testing::statements::candidate_lookup(&probes).unwrap());
        for text in texts {
            let qualified = q(&text);
            let words: Vec<&str> = qualified.split_whitespace().collect();
            for pair in words.windows(2) {
                let table = pair[1].trim_matches(|c: char| !is_word(c) && c != '.');
                if BEFORE_TABLE.contains(&pair[0].to_ascii_uppercase().as_str()) {
                    assert!(
                        !TABLES.contains(&table),
                        "{table} unqualified in {qualified}"
                    );
                }
            }
        }
    }
}
