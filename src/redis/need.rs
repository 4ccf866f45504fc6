//! What a process will ask of Redis: each command it sends, as it sends it (keys under the
//! prefix), and the feature that sends it. The start-up check dry-runs every one as the
//! configured ACL user (`acl`), so a missing permission stops the process at start-up, naming
//! the command and the feature, instead of failing (or retrying for ever) later.
//!
//! Each Redis user declares its own needs beside the code that sends them (the page index, the
//! change log, the rate limiter, the sync checkpoints); this module declares only its own (the
//! start-up check, and a Cluster's topology) and knows none of the others.

/// One command a process sends, with arguments shaped like the real ones (ACL key patterns are
/// checked against its keys), and what needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    feature: &'static str,
    command: Vec<String>,
}

/// Commands whose first argument is a subcommand, which ACL rules name as `command|subcommand`.
const CONTAINERS: [&str; 7] = [
    "ACL", "CLIENT", "CLUSTER", "CONFIG", "OBJECT", "SCRIPT", "XINFO",
];

impl Need {
    /// `command` (its name, then its arguments), sent by `feature` (a phrase: "the page
    /// index's writes (apply.lua)").
    pub fn new(
        feature: &'static str,
        command: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            feature,
            command: command.into_iter().map(Into::into).collect(),
        }
    }

    /// What sends the command.
    pub fn feature(&self) -> &'static str {
        self.feature
    }

    /// The command and its arguments.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// The command's name as users read it: `XADD`, `CLUSTER SLOTS`.
    pub fn name(&self) -> String {
        self.parts().join(" ").to_ascii_uppercase()
    }

    /// The command as an ACL rule names it (after the `+`): `xadd`, `cluster|slots`.
    pub fn acl_name(&self) -> String {
        self.parts().join("|").to_ascii_lowercase()
    }

    fn parts(&self) -> &[String] {
        let container = self
            .command
            .first()
            .is_some_and(|c| CONTAINERS.contains(&c.to_ascii_uppercase().as_str()));
        let len = if container { 2 } else { 1 };
        &self.command[..len.min(self.command.len())]
    }
}

/// What the connection layer itself sends: `PING` (the start-up check, and health checks), and
/// on a Cluster `CLUSTER SLOTS` (the client's map of slots to nodes, and `SCAN` on every
/// master). `ACL DRYRUN`, which the check itself runs, is not among them: without it the check
/// is skipped, never failed.
pub fn own_needs(cluster: bool) -> Vec<Need> {
    let mut needs = vec![Need::new(
        "the start-up check and health checks (/readyz)",
        ["PING"],
    )];
    if cluster {
        needs.push(Need::new(
            "Redis Cluster: the client's map of slots to nodes, and SCAN on every master",
            ["CLUSTER", "SLOTS"],
        ));
    }
    needs
}

/// The rule that lets a user run the start-up check itself (`ACL DRYRUN`, Redis 7.0 or later).
pub const DRYRUN_RULE: &str = "acl|dryrun";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subcommand_is_part_of_the_name_only_for_container_commands() {
        let slots = Need::new("t", ["CLUSTER", "SLOTS"]);
        assert_eq!(
            (slots.name(), slots.acl_name()),
            ("CLUSTER SLOTS".into(), "cluster|slots".into())
        );
        let xadd = Need::new("t", ["xadd", "p:{changes}", "*", "t", "u"]);
        assert_eq!(
            (xadd.name(), xadd.acl_name()),
            ("XADD".into(), "xadd".into())
        );
    }
}
