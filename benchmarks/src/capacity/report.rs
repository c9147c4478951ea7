//! Machine and version facts for the reports (to be written).
