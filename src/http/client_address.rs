//! Which address a request comes from: the TCP peer, or, when the peer is a proxy the operator
//! trusts (`--trusted-proxies`), the address `X-Forwarded-For` names.
//!
//! `X-Forwarded-For` is a list each proxy appends its own peer to, so only its right end can be
//! believed: everything left of the first untrusted entry may have been written by the client.
//! The address is therefore the right-most entry that is not a trusted proxy, reading leftwards
//! from the peer (a chain of trusted proxies is walked through). If every entry is trusted, the
//! left-most one is taken; an entry that is not an address ends the walk at the last trusted
//! hop, so garbage can only make a client share its proxy's budget, never pick another one.
//! From an untrusted peer the header is ignored: anyone could send it.

use std::net::{IpAddr, SocketAddr};

use axum::http::HeaderMap;

/// Networks whose `X-Forwarded-For` is believed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<Network>);

/// An address and how many of its leading bits count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Network {
    address: IpAddr,
    bits: u8,
}

impl Network {
    fn contains(self, ip: IpAddr) -> bool {
        match (self.address, ip) {
            (IpAddr::V4(network), IpAddr::V4(ip)) => {
                mask32(u32::from(network), self.bits) == mask32(u32::from(ip), self.bits)
            }
            (IpAddr::V6(network), IpAddr::V6(ip)) => {
                mask128(u128::from(network), self.bits) == mask128(u128::from(ip), self.bits)
            }
            _ => false,
        }
    }
}

fn mask32(value: u32, bits: u8) -> u32 {
    value.checked_shr(32 - u32::from(bits)).unwrap_or(0)
}

fn mask128(value: u128, bits: u8) -> u128 {
    value.checked_shr(128 - u32::from(bits)).unwrap_or(0)
}

impl TrustedProxies {
    /// Parses addresses (`10.0.0.7`, `::1`) and networks (`10.0.0.0/8`, `fd00::/8`).
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let mut networks = Vec::with_capacity(items.len());
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            let (address, bits) = match item.split_once('/') {
                Some((address, bits)) => (address, Some(bits)),
                None => (item, None),
            };
            let address: IpAddr = address
                .parse()
                .map_err(|_| format!("`{item}` is not an address or a network (a.b.c.d/n)"))?;
            let address = address.to_canonical();
            let max = if address.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(bits) => bits
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("`{item}`: the prefix length must be 0 to {max}"))?,
            };
            networks.push(Network { address, bits });
        }
        Ok(Self(networks))
    }

    /// Whether `ip` is in one of the networks (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|network| network.contains(ip))
    }
}

/// The address of the client behind `peer` (see the module's comment).
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> IpAddr {
    let mut client = peer.to_canonical();
    if !trusted.contains(client) {
        return client;
    }
    // Several header lines are one list, in order.
    for line in headers.get_all("x-forwarded-for").iter().rev() {
        let Ok(line) = line.to_str() else {
            return client;
        };
        for entry in line.rsplit(',') {
            let Some(address) = parse_entry(entry.trim()) else {
                return client;
            };
            client = address;
            if !trusted.contains(address) {
                return client;
            }
        }
    }
    client
}

/// An entry of `X-Forwarded-For`: an address, possibly with a port (`[::1]:80`, `10.0.0.1:80`).
fn parse_entry(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .or_else(|_| entry.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
        .map(|ip| ip.to_canonical())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn trusted(items: &[&str]) -> TrustedProxies {
        TrustedProxies::parse(&items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            .expect("valid networks")
    }

    fn forwarded(lines: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for line in lines {
            headers.append(
                "x-forwarded-for",
                HeaderValue::from_str(line).expect("a header value"),
            );
        }
        headers
    }

    #[test]
    fn networks_and_addresses_parse_and_match() {
        let proxies = trusted(&["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1", "0.0.0.0/0"]);
        assert!(proxies.contains(ip("10.200.3.4")));
        assert!(proxies.contains(ip("192.168.1.7")));
        assert!(proxies.contains(ip("fd12::1")));
        assert!(proxies.contains(ip("::1")));
        assert!(proxies.contains(ip("::ffff:10.1.1.1")), "IPv4-mapped");
        assert!(!trusted(&["10.0.0.0/8"]).contains(ip("11.0.0.1")));
        assert!(!trusted(&["192.168.1.7"]).contains(ip("192.168.1.8")));
        assert!(!trusted(&["fd00::/8"]).contains(ip("fe80::1")));
        assert!(trusted(&["0.0.0.0/0"]).contains(ip("203.0.113.1")));
        assert!(!trusted(&["0.0.0.0/0"]).contains(ip("2001:db8::1")));
        for bad in ["10.0.0.0/33", "::/129", "proxy.example.com", "10.0.0.0/x"] {
            let error = TrustedProxies::parse(&[bad.to_owned()]).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
    }

    #[test]
    fn the_header_counts_only_from_a_trusted_peer() {
        let headers = forwarded(&["198.51.100.7"]);
        let proxies = trusted(&["127.0.0.1"]);
        assert_eq!(
            client_address(ip("127.0.0.1"), &headers, &proxies),
            ip("198.51.100.7")
        );
        assert_eq!(
            client_address(ip("203.0.113.5"), &headers, &proxies),
            ip("203.0.113.5"),
            "an untrusted peer's header is ignored"
        );
        assert_eq!(
            client_address(ip("127.0.0.1"), &headers, &TrustedProxies::default()),
            ip("127.0.0.1")
        );
        assert_eq!(
            client_address(ip("127.0.0.1"), &HeaderMap::new(), &proxies),
            ip("127.0.0.1"),
            "a trusted peer without the header is the client"
        );
    }

    #[test]
    fn the_right_most_untrusted_entry_is_the_client() {
        let proxies = trusted(&["127.0.0.1", "10.0.0.0/8"]);
        // The client wrote the first entry itself; the proxies appended the rest.
        let headers = forwarded(&["1.1.1.1, 198.51.100.7, 10.0.0.2", "10.0.0.3"]);
        assert_eq!(
            client_address(ip("127.0.0.1"), &headers, &proxies),
            ip("198.51.100.7")
        );
        let all_trusted = forwarded(&["10.0.0.9, 10.0.0.2"]);
        assert_eq!(
            client_address(ip("127.0.0.1"), &all_trusted, &proxies),
            ip("10.0.0.9")
        );
        let ports = forwarded(&["[2001:db8::7]:4711, 10.0.0.2:80"]);
        assert_eq!(
            client_address(ip("127.0.0.1"), &ports, &proxies),
            ip("2001:db8::7")
        );
        let garbage = forwarded(&["198.51.100.7, unknown, 10.0.0.2"]);
        assert_eq!(
            client_address(ip("127.0.0.1"), &garbage, &proxies),
            ip("10.0.0.2"),
            "garbage ends the walk at the last trusted hop"
        );
    }
}
