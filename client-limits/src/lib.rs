//! What one client may hold of the service, shared by the API's limits and both of its WebSocket
//! endpoints (the `/v1/ws` stream and the embedded chain's PubSub): the address a client is
//! counted as, a connection's own limit on the messages its client sends, and the deadline for a
//! client to take a message sent to it.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

pub mod message_rate;
pub mod socket_send;

pub use message_rate::MessageRate;

/// What a client IP is counted as: an IPv4 address, or an IPv6 address's /64 (one subscriber's
/// allocation: counting per IPv6 address would give every client 2^64 buckets). It shows as the
/// address, or as the network with `/64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpBucket(IpAddr);

impl IpBucket {
    pub fn of(ip: IpAddr) -> IpBucket {
        match ip.to_canonical() {
            IpAddr::V4(v4) => IpBucket(IpAddr::V4(v4)),
            IpAddr::V6(v6) => IpBucket(IpAddr::V6(Ipv6Addr::from(v6.to_bits() & (u128::MAX << 64)))),
        }
    }
}

impl fmt::Display for IpBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => v4.fmt(f),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        let bucket = |ip: &str| IpBucket::of(ip.parse().unwrap()).to_string();
        assert_eq!(bucket("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(bucket("2001:db8:1:2:ffff:ffff:ffff:ffff"), bucket("2001:db8:1:2::"));
        assert_ne!(bucket("2001:db8:1:3::1"), bucket("2001:db8:1:2::1"));
        assert_eq!(bucket("203.0.113.9"), "203.0.113.9");
        assert_eq!(bucket("::ffff:203.0.113.9"), "203.0.113.9");
        let of = |ip: &str| IpBucket::of(ip.parse().unwrap());
        assert_eq!(of("2001:db8:1:2:aaaa::1"), of("2001:db8:1:2::7"));
        assert_eq!(of("::ffff:203.0.113.9"), of("203.0.113.9"));
        assert_ne!(of("203.0.113.9"), of("203.0.113.10"));
    }
}
