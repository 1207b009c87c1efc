//! Test extension.
