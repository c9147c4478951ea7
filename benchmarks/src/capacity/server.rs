//! The server process (to be written).

/// Entry point of `janitor-capacity serve …`.
pub fn main(_args: Vec<String>) -> Result<(), String> {
    Err("not built yet".to_owned())
}
