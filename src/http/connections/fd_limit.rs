//! The process's file-descriptor limit: every socket is one, and the default soft limit of many
//! systems (1,024, or 64 in a tight container) is far below what `--max-connections` allows.
//!
//! At start-up the soft limit is raised to the hard one (what an unprivileged process may do),
//! and the connection cap is kept below it, leaving room for the backends' connections, the
//! JWKS client and files: when the cap is reached, a new socket is refused at once, rather
//! than `accept` failing with "too many open files" for everyone, `/healthz` included.

/// File descriptors kept for everything but client connections: the backends' connection
/// pools, the DynamoDB and JWKS clients, files and logs (a quarter of a small limit).
const RESERVED: u64 = 256;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; the soft limit in force afterwards, or
/// `None` where it cannot be read.
#[cfg(unix)]
pub(super) fn raise() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else {
        return limit.current;
    };
    if hard <= soft {
        return Some(soft);
    }
    let raised = Rlimit {
        current: Some(hard),
        maximum: Some(hard),
    };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            tracing::debug!(from = soft, to = hard, "raised the file-descriptor limit");
            Some(hard)
        }
        Err(error) => {
            tracing::warn!(%error, soft, hard, "cannot raise the file-descriptor limit");
            Some(soft)
        }
    }
}

#[cfg(not(unix))]
pub fn raise() -> Option<u64> {
    None
}

/// The connection cap that fits under a soft limit of `limit` descriptors: `wanted`, or fewer
/// when the limit leaves no room for them and the [`RESERVED`] ones.
pub(super) fn connections_under(limit: Option<u64>, wanted: usize) -> usize {
    let Some(limit) = limit else {
        return wanted;
    };
    let reserved = RESERVED.min(limit / 4);
    let room = usize::try_from(limit.saturating_sub(reserved)).unwrap_or(usize::MAX);
    wanted.min(room).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_room_for_the_backends_under_the_limit() {
        assert_eq!(connections_under(None, 10_000), 10_000);
        assert_eq!(connections_under(Some(1_048_576), 10_000), 10_000);
        assert_eq!(connections_under(Some(1_024), 10_000), 768);
        assert_eq!(connections_under(Some(64), 10_000), 48);
        assert_eq!(connections_under(Some(64), 10), 10);
    }

    #[cfg(unix)]
    #[test]
    fn raising_leaves_the_soft_limit_at_the_hard_one() {
        let after = raise().expect("a limit");
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(Some(after), limit.current);
        assert_eq!(limit.current, limit.maximum);
    }
}
