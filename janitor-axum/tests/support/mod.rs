//! Shared by the Jev test files; each uses a part of it.
#![allow(dead_code)]

pub mod provider;
