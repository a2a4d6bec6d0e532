//! Whether Go's `net/url.Parse` accepts a string: the one check OpenKruise's PodProbeMarker
//! webhook makes of an `httpGet.path` (`validateHTTPGetAction`: "must be a valid URL path").
//!
//! Reproduced (Go 1.2x `net/url` `Parse` → `parse`, `getScheme`, `parseAuthority`, `parseHost`,
//! `unescape`, `setFragment`): the text after the first `#` is the fragment; ASCII control
//! bytes are refused; a scheme (`[A-Za-z][A-Za-z0-9+.-]*:`) is split off, a leading `:` is a
//! missing scheme; without a scheme a first path segment holding `:` is refused; `//authority`
//! (with a scheme, or without one unless `///`) is checked as userinfo and host (bracketed IPv6
//! literal with a numeric optional port, otherwise a numeric optional port after the last `:`,
//! host characters, `%` escapes); path and fragment must have well-formed `%XX` escapes.

/// Whether `raw` parses with Go's `url.Parse`.
pub fn go_url_parses(raw: &str) -> bool {
    let (u, frag) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    if !parse(u) {
        return false;
    }
    frag.is_none_or(|f| unescape_ok(f, Mode::Fragment))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Fragment,
    Host,
    Zone,
    UserPassword,
}

fn parse(raw: &str) -> bool {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if raw == "*" {
        return true;
    }
    let Some((scheme, rest)) = get_scheme(raw) else {
        return false;
    };
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        rest.split_once('?').map_or(rest, |(r, _)| r)
    };
    if !rest.starts_with('/') {
        if !scheme.is_empty() {
            return true; // opaque
        }
        let segment = rest.split_once('/').map_or(rest, |(s, _)| s);
        if segment.contains(':') {
            return false;
        }
    }
    let mut path = rest;
    if (!scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, tail) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        if !authority_ok(authority) {
            return false;
        }
        path = tail;
    }
    unescape_ok(path, Mode::Path)
}

/// `getScheme`: `Some((scheme, rest))`, `None` for "missing protocol scheme".
fn get_scheme(raw: &str) -> Option<(&str, &str)> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Some(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return None;
                }
                return Some((&raw[..i], &raw[i + 1..]));
            }
            _ => return Some(("", raw)),
        }
    }
    Some(("", raw))
}

fn authority_ok(authority: &str) -> bool {
    let (userinfo, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if !host_ok(host) {
        return false;
    }
    let Some(userinfo) = userinfo else {
        return true;
    };
    if !userinfo.bytes().all(valid_userinfo_byte) {
        return false;
    }
    match userinfo.split_once(':') {
        None => unescape_ok(userinfo, Mode::UserPassword),
        Some((user, password)) => {
            unescape_ok(user, Mode::UserPassword) && unescape_ok(password, Mode::UserPassword)
        }
    }
}

fn valid_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'.'
                | b'_'
                | b':'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
                | b'@'
        )
}

fn valid_optional_port(port: &str) -> bool {
    if port.is_empty() {
        return true;
    }
    let Some(digits) = port.strip_prefix(':') else {
        return false;
    };
    digits.bytes().all(|b| b.is_ascii_digit())
}

fn host_ok(host: &str) -> bool {
    match host.rfind('[') {
        Some(i) if i > 0 => false,
        Some(_) => bracketed_host_ok(host),
        None => {
            // Without a scheme (an `httpGet.path` never has one that reaches here as `http`),
            // Go takes the port after the last colon.
            if let Some(i) = host.rfind(':')
                && !valid_optional_port(&host[i..])
            {
                return false;
            }
            unescape_ok(host, Mode::Host)
        }
    }
}

/// An IP literal: `[` IPv6 address (with an optional `%25` zone) `]` and an optional port.
fn bracketed_host_ok(host: &str) -> bool {
    let Some(close) = host.rfind(']') else {
        return false;
    };
    let port = &host[close + 1..];
    if !valid_optional_port(port) || !unescape_ok(port, Mode::Host) {
        return false;
    }
    let name = &host[1..close];
    let (addr, zone) = match name.find("%25") {
        Some(z) => {
            if !unescape_ok(&name[..z], Mode::Host) || !unescape_ok(&name[z..], Mode::Zone) {
                return false;
            }
            (&name[..z], Some(&name[z + 3..]))
        }
        None => {
            if !unescape_ok(name, Mode::Host) {
                return false;
            }
            (name, None)
        }
    };
    // netip.ParseAddr of the unescaped name, which must not be an IPv4 address.
    addr.parse::<std::net::Ipv6Addr>().is_ok() && zone.is_none_or(|z| !z.is_empty())
}

/// `shouldEscape(c, encodeHost)` is false: what may appear unescaped in a host.
fn host_byte_allowed(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'-' | b'_'
                | b'.'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
}

/// `unescape`'s validation: every `%` is followed by two hex digits; in a host a `%` escape
/// may only encode a non-ASCII byte (or be `%25`), in a zone only a byte allowed in a host, a
/// space or `%`; unescaped ASCII bytes of a host or zone must be allowed in a host.
fn unescape_ok(s: &str, mode: Mode) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return false;
            }
            let escaped = &b[i..i + 3];
            let is_25 = escaped == b"%25";
            if mode == Mode::Host && hex(b[i + 1]) < 8 && !is_25 {
                return false;
            }
            if mode == Mode::Zone {
                let v = (hex(b[i + 1]) << 4) | hex(b[i + 2]);
                if !is_25 && v != b' ' && !host_byte_allowed(v) {
                    return false;
                }
            }
            i += 3;
        } else {
            if matches!(mode, Mode::Host | Mode::Zone) && b[i] < 0x80 && !host_byte_allowed(b[i]) {
                return false;
            }
            i += 1;
        }
    }
    true
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // Both lists checked against Go 1.26's `url.Parse` (module `go 1.23`).
    fn accepts_what_go_accepts() {
        for ok in [
            "",
            "/",
            "/healthz",
            "/a b",
            "healthz",
            "/a?b=c",
            "/a#frag",
            "/%20x",
            "*",
            "http://host:80/x",
            "//host/x",
            "///x",
            "/a:b",
            "a/b:c",
            "mailto:x",
            "/ä",
            "//[::1]:80/x",
            "//user:pw@h/x",
            "//[fe80::1%25en0]/x",
            "//a:1:2/x",
            "a:b/c",
            "//h?x",
            "//h%c3%a4/",
            "//[::ffff:1.2.3.4]/",
        ] {
            assert!(go_url_parses(ok), "{ok:?}");
        }
    }

    #[test]
    fn refuses_what_go_refuses() {
        for bad in [
            "/a\tb",
            "/a\u{7f}",
            ":x",
            "1a:b",
            "/%zz",
            "/%2",
            "/%",
            "/a#%g0",
            "//host:port/x",
            "//[::1/x",
            "//[::1]x/",
            "//ho st/",
            "//h%41/",
            "//u^s@h/",
            "//[1.2.3.4]/x",
            "//a[::1]/x",
            "//h x/",
        ] {
            assert!(!go_url_parses(bad), "{bad:?}");
        }
    }
}
