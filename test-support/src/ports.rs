//! Loopback ports for the servers tests start: spans of ports free now and outside the kernel's ephemeral
//! range, and who holds a port that is taken.
//!
//! A port in the ephemeral range (Linux: 32768–60999, `net.ipv4.ip_local_port_range`) can be held at any
//! moment by another program's outgoing connection, so a fixed port there fails a run now and then with only
//! "Address already in use". A server that can listen on port 0 should (see
//! [`free_port`](crate::cluster::free_port)); one that needs several ports at known distances from a first
//! one (a server and its control port) takes a [`free_span`]. Each span a process takes is new to it, so tests
//! running side by side never share one, and every port of it could be bound a moment ago.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port a span may use: above the ports of well-known services.
const FIRST: u16 = 20_000;

/// The first port a span never uses: 30000 and up, below the ephemeral range, belong to the capacity harness
/// (its disposable cluster on 30434, its fleets from 30490), which may run beside the tests.
const END: u16 = 30_000;

/// The kernel's ephemeral range: `(first, last)`, or Linux's default when it cannot be read.
pub fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut bounds = text.split_whitespace().map(str::parse::<u16>);
            Some((bounds.next()?.ok()?, bounds.next()?.ok()?))
        })
        .unwrap_or((32_768, 60_999))
}

/// The first port of `len` consecutive ports on 127.0.0.1 that could all be bound just now, from 20000 to
/// 29999 (below the ephemeral range and the capacity harness's ports), and never one that overlaps a span this process took before. Another process may still bind
/// one of them before the caller's server does; the server's refusal then names the holder ([`holder`]).
///
/// # Errors
/// When `len` is 0, or no such span is left below the ephemeral range.
pub fn free_span(len: u16) -> Result<u16, String> {
    // Where the next span may start: process-wide, so tests of one binary never share a port, and starting at
    // a place of this process's own, so two runs side by side do not try the same spans first.
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let top = u32::from(ephemeral_range().0.clamp(FIRST + 1, END));
    let room = top - u32::from(FIRST);
    let len32 = u32::from(len);
    if len == 0 || len32 > room {
        return Err(format!(
            "a span of {len} ports: from 1 to {room} fit below the ephemeral range"
        ));
    }
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7_919) % room,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..room / len32 + 1 {
        let offset = NEXT.fetch_add(len32, Ordering::SeqCst) % room;
        if offset + len32 > room {
            continue; // a span never wraps around the top
        }
        let first = (u32::from(FIRST) + offset) as u16;
        if (first..first + len).all(can_bind) {
            return Ok(first);
        }
    }
    Err(format!(
        "no {len} consecutive free ports on 127.0.0.1 from {FIRST} to {top}"
    ))
}

fn can_bind(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Who holds TCP `port` on this machine, for a refusal to say: the processes with a socket on it (pid and
/// name, from /proc) and the sockets' states, or `None` when /proc shows no socket on it.
pub fn holder(port: u16) -> Option<String> {
    let sockets = sockets_on(port);
    if sockets.is_empty() {
        return None;
    }
    let mut owners = Vec::new();
    if let Ok(processes) = std::fs::read_dir("/proc") {
        for process in processes.flatten() {
            let pid = process.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
                continue;
            };
            let holds = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|target| {
                    let target = target.to_string_lossy();
                    sockets.iter().any(|(inode, _)| {
                        target
                            .strip_prefix("socket:[")
                            .and_then(|t| t.strip_suffix(']'))
                            == Some(inode.as_str())
                    })
                })
            });
            if holds {
                let name = std::fs::read_to_string(process.path().join("comm")).unwrap_or_default();
                owners.push(format!("pid {pid} ({})", name.trim()));
            }
        }
    }
    let mut states: Vec<&str> = sockets.iter().map(|(_, state)| *state).collect();
    states.sort_unstable();
    states.dedup();
    let states = states.join(", ");
    Some(if owners.is_empty() {
        format!(
            "a socket in state {states} that no process of ours owns (another user's, or closing)"
        )
    } else {
        format!("{} (socket state {states})", owners.join(", "))
    })
}

/// The sockets whose local port is `port`: inode and state name, from /proc/net/tcp and tcp6.
fn sockets_on(port: u16) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) =
                (fields.get(1), fields.get(3), fields.get(9))
            else {
                continue;
            };
            let local_port = local
                .rsplit_once(':')
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
            if local_port == Some(port) {
                found.push(((*inode).to_owned(), state_name(state)));
            }
        }
    }
    found
}

fn state_name(hex: &str) -> &'static str {
    match hex {
        "01" => "ESTABLISHED",
        "02" => "SYN_SENT",
        "03" => "SYN_RECV",
        "04" => "FIN_WAIT1",
        "05" => "FIN_WAIT2",
        "06" => "TIME_WAIT",
        "07" => "CLOSE",
        "08" => "CLOSE_WAIT",
        "09" => "LAST_ACK",
        "0A" => "LISTEN",
        "0B" => "CLOSING",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_free_below_the_ephemeral_range_and_never_shared() {
        let (ephemeral, _) = ephemeral_range();
        let a = free_span(110).unwrap();
        let b = free_span(110).unwrap();
        for first in [a, b] {
            let end = u32::from(first) + 110;
            assert!(
                first >= FIRST && end <= u32::from(ephemeral.min(END)),
                "{first}"
            );
        }
        assert!(a.abs_diff(b) >= 110, "{a} and {b} overlap");
        assert!(free_span(0).is_err());
        // The whole range fits once; one port more does not.
        let room = ephemeral.clamp(FIRST + 1, END) - FIRST;
        assert!(free_span(room + 1).unwrap_err().contains("fit below"));
    }

    #[test]
    fn a_listening_port_is_named_with_its_process() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let holder = holder(port).unwrap();
        assert!(
            holder.contains(&format!("pid {}", std::process::id())),
            "{holder}"
        );
        assert!(holder.contains("LISTEN"), "{holder}");
    }
}
