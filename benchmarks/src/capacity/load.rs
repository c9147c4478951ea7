//! The load process (to be written).

/// Entry point of `janitor-capacity load …`.
pub fn main(_args: Vec<String>) -> Result<(), String> {
    Err("not built yet".to_owned())
}
