//! The Redis adapter (to be written).
