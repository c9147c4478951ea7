//! The candidate lookup's row decoding, for its benchmark (`cargo bench -p janitor-sql --features testing
//! --bench lookup_rows`) and its tests: the bytes of a text array as PostgreSQL sends it, and the two ways of
//! decoding them.

use bytes::BytesMut;
use janitor_core::{Observation, StoreError};
use postgres_protocol::types::{array_to_sql, ArrayDimension};
use postgres_protocol::IsNull;
use tokio_postgres::types::Type;

use crate::visitor_store::lookup_rows;

/// A text array in PostgreSQL's binary format, written by postgres-protocol: `dims` dimension lengths (each
/// from 1), then `elements` in order (`None` a NULL element), whether or not they fill the dimensions.
pub fn text_array(dims: &[i32], elements: &[Option<&[u8]>]) -> Vec<u8> {
    let mut raw = BytesMut::new();
    let dimensions = dims.iter().map(|&len| ArrayDimension {
        len,
        lower_bound: 1,
    });
    array_to_sql(
        dimensions,
        Type::TEXT.oid(),
        elements,
        |element, buf| {
            Ok(match element {
                None => IsNull::Yes,
                Some(bytes) => {
                    buf.extend_from_slice(bytes);
                    IsNull::No
                }
            })
        },
        &mut raw,
    )
    .expect("lengths fit in an i32");
    raw.to_vec()
}

/// The compared part of a `lookup_features` array's bytes, walked in place as the lookup reads it.
pub fn features_in_place(raw: &[u8]) -> Result<Observation, StoreError> {
    lookup_rows::features_in_place(raw)
}

/// The same through tokio-postgres's `Vec<Option<&str>>` decoding, as the lookup read it before.
pub fn features_through_vec(raw: &[u8]) -> Result<Observation, StoreError> {
    lookup_rows::features_through_vec(raw)
}
