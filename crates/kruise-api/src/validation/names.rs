//! String rules of apimachinery's `k8s.io/apimachinery/pkg/util/validation` (v0.32): each
//! `is_*` function returns the list of reasons a value is invalid (empty when it is valid),
//! worded exactly as Kubernetes words them, so callers can turn each into a field error.

/// `MaxLenError`: `must be no more than N characters`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `RegexError`: the message, examples and the regular expression the value must match, e.g.
/// `... (e.g. 'my-name',  or '123-abc', regex used for validation is '...')`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(e);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// `EmptyError`: `must be non-empty`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `InclusiveRangeError`: `must be between lo and hi, inclusive`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX: usize = 63;

/// Matches `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`.
fn matches_qualified_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsQualifiedName`: an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63
/// alphanumerics, `-`, `_` or `.`, starting and ending with an alphanumeric.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                errs.extend(
                    is_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// `IsValidLabelValue`: empty, or at most 63 characters shaped like a qualified name's name
/// part.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Matches `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$` (no length limit).
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|c| is_lower_alnum(*c) || *c == b'-')
}

/// Matches DNS-1123 labels joined by `.` (no length limit).
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `IsDNS1123Label`: at most 63 lowercase alphanumerics or `-`, starting and ending with an
/// alphanumeric.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: at most 253 characters, DNS-1123 labels joined by `.`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `NameIsDNSSubdomain`: a DNS-1123 subdomain; with `prefix` (a `generateName`) a trailing `-`
/// is allowed.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// `NameIsDNSLabel` (also `ValidateNamespaceName`): a DNS-1123 label; with `prefix` a trailing
/// `-` is allowed.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// apimachinery's `maskTrailingDash`, exactly: `name[:len(name)-2] + "a"` — Go drops the dash
/// *and the byte before it* (so a `generateName` one byte over a length limit still passes, as
/// OpenKruise's webhooks let it). Bytes, as Go slices them; a cut inside a character leaves
/// replacement characters, which the validation then refuses as Go's does the broken byte.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let mut masked = String::from_utf8_lossy(&name.as_bytes()[..name.len() - 2]).into_owned();
        masked.push('a');
        masked
    } else {
        name.to_owned()
    }
}

/// `IsValidPortNum`: 1 to 65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsValidUserID`: 0 to 2147483647.
pub fn is_valid_user_id(uid: i64) -> Vec<String> {
    if (0..=i64::from(i32::MAX)).contains(&uid) {
        Vec::new()
    } else {
        vec![inclusive_range_error(0, i64::from(i32::MAX))]
    }
}

/// `IsValidGroupID`: 0 to 2147483647.
pub fn is_valid_group_id(gid: i64) -> Vec<String> {
    is_valid_user_id(gid)
}

/// `IsValidPortName` (an IANA_SVC_NAME): at most 15 characters of `a-z`, `0-9` and `-`, at least
/// one letter, no `--`, not starting or ending with `-`.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty() || !port.bytes().all(|c| is_lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `netutils.ParseIPSloppy`: an IPv4 address (leading zeros allowed, as Go's parser before 1.17
/// did) or an IPv6 address.
pub fn parse_ip_sloppy(value: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = value.parse::<std::net::IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = value.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(&parts) {
        if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(std::net::IpAddr::from(octets))
}

/// The reason an IP address is invalid (`IsValidIP`), if it is.
pub fn is_valid_ip(value: &str) -> Option<&'static str> {
    parse_ip_sloppy(value)
        .is_none()
        .then_some("must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")
}

const HTTP_HEADER_NAME_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_NAME_ERR: &str =
    "a valid HTTP header must consist of alphanumeric characters or '-'";

/// `IsHTTPHeaderName`: alphanumerics and `-`.
pub fn is_http_header_name(value: &str) -> Vec<String> {
    if !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-')
    {
        Vec::new()
    } else {
        vec![regex_error(
            HTTP_HEADER_NAME_ERR,
            HTTP_HEADER_NAME_FMT,
            &["X-Header-Name"],
        )]
    }
}

const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_NAME_ERR: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";

fn has_ch_dir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".into()],
        ".." => vec!["must not be '..'".into()],
        v if v.starts_with("..") => vec!["must not start with '..'".into()],
        _ => Vec::new(),
    }
}

/// `IsEnvVarName`: `[-._a-zA-Z][-._a-zA-Z0-9]*`, and not `.`, `..` or starting with `..`.
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let ext = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    let b = value.as_bytes();
    let ok = !b.is_empty() && !b[0].is_ascii_digit() && b.iter().all(|c| ext(*c));
    if !ok {
        errs.push(regex_error(
            ENV_VAR_NAME_ERR,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

/// `IsConfigMapKey`: at most 253 of alphanumerics, `-`, `_` and `.`, and not `.`, `..` or
/// starting with `..`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if value.is_empty()
        || !value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("App_1.x").is_empty());
        assert_eq!(
            is_qualified_name("bad key!"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(is_qualified_name("").len(), 2);
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
        assert_eq!(is_qualified_name("/a"), ["prefix part must be non-empty"]);
        assert!(is_qualified_name("a/b/c")[0].starts_with("a qualified name must consist"));
        assert!(
            is_qualified_name("Bad_Prefix/a")[0]
                .starts_with("prefix part a lowercase RFC 1123 subdomain")
        );
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("my_value.1").is_empty());
        assert_eq!(is_valid_label_value("-bad-").len(), 1);
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
    }

    #[test]
    fn dns_names() {
        assert!(is_dns1123_label("web-0").is_empty());
        assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
        // Go's maskTrailingDash drops the byte before the dash too.
        assert!(name_is_dns_label(&format!("{}-", "a".repeat(63)), true).is_empty());
        assert!(!name_is_dns_label(&format!("{}-", "a".repeat(64)), true).is_empty());
        assert!(name_is_dns_subdomain("a.-", true).is_empty());
        assert!(!name_is_dns_subdomain("é-", false).is_empty());
        assert!(!name_is_dns_subdomain("aé-", true).is_empty());
        assert!(
            is_dns1123_label("Bad_Host")[0]
                .ends_with("regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
        );
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert!(is_dns1123_subdomain("a.b-c.d").is_empty());
        assert_eq!(is_dns1123_subdomain("a..b").len(), 1);
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert_eq!(name_is_dns_subdomain("web-", false).len(), 1);
    }

    #[test]
    fn ports_ids_and_ips() {
        assert!(is_valid_port_num(80).is_empty());
        assert_eq!(
            is_valid_port_num(0),
            ["must be between 1 and 65535, inclusive"]
        );
        assert!(is_valid_port_name("http").is_empty());
        assert_eq!(
            is_valid_port_name("HTTP_BAD"),
            [
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)"
            ]
        );
        assert_eq!(
            is_valid_port_name("a-very-long-port-name"),
            ["must be no more than 15 characters"]
        );
        assert_eq!(is_valid_port_name("a--b").len(), 1);
        assert_eq!(is_valid_port_name("-ab").len(), 1);
        assert_eq!(
            is_valid_user_id(-1),
            ["must be between 0 and 2147483647, inclusive"]
        );
        assert!(is_valid_ip("10.9.8.7").is_none());
        assert!(is_valid_ip("010.009.8.7").is_none());
        assert!(is_valid_ip("2001:db8::ffff").is_none());
        assert!(is_valid_ip("not-an-ip").is_some());
    }

    #[test]
    fn env_names_and_keys() {
        assert!(is_env_var_name("MY_ENV.NAME").is_empty());
        assert_eq!(is_env_var_name("has space").len(), 1);
        assert_eq!(is_env_var_name("1abc").len(), 1);
        assert_eq!(is_env_var_name(".."), ["must not be '..'"]);
        assert!(is_config_map_key("key.name").is_empty());
        assert_eq!(is_config_map_key("..x"), ["must not start with '..'"]);
        assert_eq!(is_config_map_key("a b").len(), 1);
        assert!(is_http_header_name("X-Header").is_empty());
        assert_eq!(is_http_header_name("X Header").len(), 1);
    }
}
