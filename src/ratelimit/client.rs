//! Whose budget a request spends: the verified token's subject when there is one, else the
//! client's address.

use std::fmt::Write as _;
use std::net::IpAddr;

/// The name of one client's budgets: `sub:<subject>` or `ip:<address>`. Safe inside a Redis
/// key and its hash tag (no `{`, `}`, spaces or control characters: they are %-escaped).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(String);

impl ClientKey {
    /// The key of a request from `address`, signed in as `sub` if its token was verified.
    ///
    /// A subject keys the budget wherever the requests come from, so one principal cannot
    /// multiply its budget over addresses. An IPv6 address is keyed by its /64: one host
    /// usually holds a whole /64 and could otherwise take a fresh budget per address. An
    /// IPv4-mapped IPv6 address is its IPv4 address.
    pub fn new(sub: Option<&str>, address: IpAddr) -> Self {
        if let Some(sub) = sub {
            let mut key = String::with_capacity(4 + sub.len());
            key.push_str("sub:");
            for c in sub.chars() {
                if c == '{' || c == '}' || c == '%' || c.is_whitespace() || c.is_control() {
                    let mut buffer = [0; 4];
                    for byte in c.encode_utf8(&mut buffer).bytes() {
                        let _ = write!(key, "%{byte:02X}");
                    }
                } else {
                    key.push(c);
                }
            }
            return Self(key);
        }
        match network(address) {
            IpAddr::V4(v4) => Self(format!("ip:{v4}")),
            IpAddr::V6(v6) => Self(format!("ip:{v6}/64")),
        }
    }

    /// The same client's key for a budget of its own, apart from its others:
    /// `subscribe/ip:192.0.2.1`.
    pub fn scoped(&self, scope: &str) -> Self {
        Self(format!("{scope}/{}", self.0))
    }

    /// The key as text (`sub:…` or `ip:…`), as buckets are keyed.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The network that stands for one client at `address`: an IPv4 address itself (IPv4-mapped
/// IPv6 included), an IPv6 address's /64, since one host usually holds a whole /64 and could
/// otherwise take a fresh share per address. Budgets ([`ClientKey`]) and the per-address
/// connection cap both key by it.
pub fn network(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(network))
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn a_subject_keys_the_budget_whatever_the_address() {
        assert_eq!(
            ClientKey::new(Some("user-42"), ip("203.0.113.9")),
            ClientKey::new(Some("user-42"), ip("198.51.100.1"))
        );
        assert_eq!(
            ClientKey::new(Some("user-42"), ip("203.0.113.9")).as_str(),
            "sub:user-42"
        );
        assert_ne!(
            ClientKey::new(Some("ip:203.0.113.9"), ip("203.0.113.9")),
            ClientKey::new(None, ip("203.0.113.9")),
            "a subject never collides with an address"
        );
    }

    #[test]
    fn braces_and_spaces_in_a_subject_cannot_break_the_hash_tag() {
        let key = ClientKey::new(Some("a}b {c}%"), ip("127.0.0.1"));
        assert_eq!(key.as_str(), "sub:a%7Db%20%7Bc%7D%25");
    }

    #[test]
    fn addresses_key_ipv4_as_is_and_ipv6_by_its_slash_64() {
        assert_eq!(
            ClientKey::new(None, ip("203.0.113.9")).as_str(),
            "ip:203.0.113.9"
        );
        assert_eq!(
            ClientKey::new(None, ip("::ffff:203.0.113.9")).as_str(),
            "ip:203.0.113.9"
        );
        assert_eq!(
            ClientKey::new(None, ip("2001:db8:1:2:aaaa::1")),
            ClientKey::new(None, ip("2001:db8:1:2:bbbb::2"))
        );
        assert_eq!(
            ClientKey::new(None, ip("2001:db8:1:2:aaaa::1")).as_str(),
            "ip:2001:db8:1:2::/64"
        );
        assert_ne!(
            ClientKey::new(None, ip("2001:db8:1:2::1")),
            ClientKey::new(None, ip("2001:db8:1:3::1"))
        );
    }
}
