//! The candidate lookup's row decoding, for its benchmark (`cargo bench -p janitor-sql --bench lookup_rows`)
//! and its tests: the bytes of a text array as PostgreSQL sends it, and the two ways of decoding them.

use janitor_core::{Observation, StoreError};
use tokio_postgres::types::Type;

use crate::visitor_store::lookup_rows;

/// A text array in PostgreSQL's binary format: `dims` dimension lengths (each from 1), elements in order,
/// `None` a NULL element.
pub fn text_array(dims: &[i32], elements: &[Option<&[u8]>]) -> Vec<u8> {
    let mut raw = Vec::new();
    raw.extend((dims.len() as i32).to_be_bytes());
    raw.extend(i32::from(elements.iter().any(Option::is_none)).to_be_bytes());
    raw.extend(Type::TEXT.oid().to_be_bytes());
    for &len in dims {
        raw.extend(len.to_be_bytes());
        raw.extend(1i32.to_be_bytes());
    }
    for element in elements {
        match element {
            None => raw.extend((-1i32).to_be_bytes()),
            Some(bytes) => {
                raw.extend((bytes.len() as i32).to_be_bytes());
                raw.extend(*bytes);
            }
        }
    }
    raw
}

/// The compared part of a `lookup_features` array's bytes, walked in place as the lookup reads it.
pub fn features_in_place(raw: &[u8]) -> Result<Observation, StoreError> {
    lookup_rows::features_in_place(raw)
}

/// The same through tokio-postgres's `Vec<Option<&str>>` decoding, as the lookup read it before.
pub fn features_through_vec(raw: &[u8]) -> Result<Observation, StoreError> {
    lookup_rows::features_through_vec(raw)
}
