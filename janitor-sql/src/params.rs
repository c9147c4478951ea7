//! Statement parameters that know their PostgreSQL type, so a statement can be sent unnamed in one round trip
//! (`query_typed`) as well as prepared.

use tokio_postgres::types::{Json, ToSql, Type};

/// A parameter of one of the stores' statements.
pub(crate) trait Param: ToSql + Sync {
    /// The type the statement declares for it.
    fn declared_type(&self) -> Type;

    /// The value, as the driver takes it.
    fn as_sql(&self) -> &(dyn ToSql + Sync);
}

/// A Rust type with one PostgreSQL type, known without a value (so `None` has one too).
pub(crate) trait Typed {
    fn pg_type() -> Type;
}

impl<T: Typed + ToSql + Sync> Param for T {
    fn declared_type(&self) -> Type {
        T::pg_type()
    }

    fn as_sql(&self) -> &(dyn ToSql + Sync) {
        self
    }
}

macro_rules! typed {
    ($($rust:ty => $pg:expr),* $(,)?) => {
        $(impl Typed for $rust {
            fn pg_type() -> Type {
                $pg
            }
        })*
    };
}

typed!(
    &str => Type::TEXT,
    String => Type::TEXT,
    i64 => Type::INT8,
    i32 => Type::INT4,
    f32 => Type::FLOAT4,
    bool => Type::BOOL,
    serde_json::Value => Type::JSONB,
    Vec<&str> => Type::TEXT_ARRAY,
    Vec<String> => Type::TEXT_ARRAY,
    &[&str] => Type::TEXT_ARRAY,
    &[String] => Type::TEXT_ARRAY,
    Vec<Option<&str>> => Type::TEXT_ARRAY,
    Vec<i64> => Type::INT8_ARRAY,
);

impl<T: Typed> Typed for Option<T> {
    fn pg_type() -> Type {
        T::pg_type()
    }
}

impl<T> Typed for Json<T> {
    fn pg_type() -> Type {
        Type::JSONB
    }
}

impl<T> Typed for Vec<Json<T>> {
    fn pg_type() -> Type {
        Type::JSONB_ARRAY
    }
}

impl<T: Typed> Typed for &T {
    fn pg_type() -> Type {
        T::pg_type()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_declares_its_type() {
        let none: Option<&str> = None;
        let params: [(&dyn Param, Type); 7] = [
            (&"text", Type::TEXT),
            (&7_i64, Type::INT8),
            (&none, Type::TEXT),
            (&Some(3_i32), Type::INT4),
            (&Json(1), Type::JSONB),
            (&vec!["a"], Type::TEXT_ARRAY),
            (&&"borrowed", Type::TEXT),
        ];
        for (param, expected) in params {
            assert_eq!(param.declared_type(), expected);
            // The driver encodes the value as the declared type (it refuses a type the value does not fit).
            let mut out = bytes::BytesMut::new();
            assert!(
                param.as_sql().to_sql_checked(&expected, &mut out).is_ok(),
                "{expected}"
            );
        }
    }
}
