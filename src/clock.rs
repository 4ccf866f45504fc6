//! The wall clock, in epoch milliseconds: the one reading every layer stamps times with
//! (comment creation and edits, votes, the sync worker's lag and checkpoint time, the live
//! feed's delivery delay). It imports nothing from the crate, so any layer can use it.

/// Now, in epoch milliseconds (0 before the epoch, `u64::MAX` past what `u64` holds).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
