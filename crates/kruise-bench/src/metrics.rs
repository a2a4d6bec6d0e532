//! The managers' `/metrics`: Prometheus' text format, and the API request counters read from it.

use std::net::SocketAddr;
use std::time::Duration;

use crate::process::Manager;

/// One sample of the Prometheus text exposition format.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: Vec<(String, String)>,
    pub(crate) value: f64,
}

impl Sample {
    pub(crate) fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses the samples of a Prometheus text exposition (comments, blank and malformed lines are
/// skipped; a trailing timestamp is ignored).
pub(crate) fn parse_prometheus(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_sample).collect()
}

fn parse_sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
    let name = line[..name_end].to_string();
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        loop {
            // Skip separators, then either `}` or `key="value"`.
            while chars
                .next_if(|(_, c)| *c == ',' || c.is_whitespace())
                .is_some()
            {}
            let (i, c) = chars.next()?;
            if c == '}' {
                rest = &body[i + 1..];
                break;
            }
            let mut key = String::from(c);
            loop {
                let (_, c) = chars.next()?;
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if chars.next()?.1 != '"' {
                return None;
            }
            let mut value = String::new();
            loop {
                match chars.next()?.1 {
                    '"' => break,
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    other => value.push(other),
                }
            }
            labels.push((key.trim().to_string(), value));
        }
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// The manager's API requests (`rest_client_requests_total`, every code and host) by kind of
/// HTTP method: reads are GET/HEAD (get, list and watch), writes POST/PUT/PATCH/DELETE.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Requests {
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) other: u64,
}

impl Requests {
    fn from_metrics(text: &str) -> Self {
        let mut r = Self::default();
        for s in parse_prometheus(text) {
            if s.name != "rest_client_requests_total" {
                continue;
            }
            let n = s.value as u64;
            match s.label("method").unwrap_or("") {
                "GET" | "HEAD" => r.reads += n,
                "POST" | "PUT" | "PATCH" | "DELETE" => r.writes += n,
                _ => r.other += n,
            }
        }
        r
    }

    pub(crate) fn total(&self) -> u64 {
        self.reads + self.writes + self.other
    }

    pub(crate) fn since(&self, earlier: &Self) -> Self {
        Self {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            other: self.other.saturating_sub(earlier.other),
        }
    }
}

/// The manager's writes by what they wrote (`kruise_rest_client_writes_total`): key
/// `group/resource[/subresource] verb code`.
pub(crate) fn writes_by_resource(text: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for s in parse_prometheus(text) {
        if s.name != "kruise_rest_client_writes_total" {
            continue;
        }
        let group = s.label("group").unwrap_or("");
        let resource = s.label("resource").unwrap_or("");
        let sub = s.label("subresource").unwrap_or("");
        let mut key = if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        };
        if !sub.is_empty() {
            key = format!("{key}/{sub}");
        }
        let key = format!(
            "{key} {} {}",
            s.label("verb").unwrap_or(""),
            s.label("code").unwrap_or("")
        );
        *out.entry(key).or_default() += s.value as u64;
    }
    out
}

/// The manager's `/metrics` text.
pub(crate) async fn scrape_text(http: &reqwest::Client, m: &Manager) -> Result<String, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(body),
        (status, body) => Err(format!(
            "manager /metrics answered {status}: {}",
            body.chars().take(200).collect::<String>()
        )),
    }
}

/// `GET http://<addr><path>`: status and body.
pub(crate) async fn http_get(
    http: &reqwest::Client,
    addr: SocketAddr,
    path: &str,
) -> Result<(u16, String), String> {
    let url = format!("http://{addr}{path}");
    let resp = http
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status().as_u16();
    let body = resp.text().await.map_err(|e| format!("GET {url}: {e}"))?;
    Ok((status, body))
}

/// The manager's request counters from its `/metrics`.
pub(crate) async fn scrape_requests(
    http: &reqwest::Client,
    m: &Manager,
) -> Result<Requests, String> {
    match http_get(http, m.metrics, "/metrics").await? {
        (200, body) => Ok(Requests::from_metrics(&body)),
        (status, body) => Err(format!(
            "manager /metrics answered {status}: {}",
            body.chars().take(200).collect::<String>()
        )),
    }
}

pub(crate) fn http_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_samples_with_labels_escapes_and_timestamps() {
        let text = "# HELP rest_client_requests Number of HTTP requests.\n\
            # TYPE rest_client_requests counter\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"GET\"} 12\n\
            rest_client_requests_total{code=\"201\",host=\"api\",method=\"POST\"} 3 1700000000000\n\
            weird{a=\"x\\\"y,}\", b=\"\\\\\"} 1.5e2\n\
            up 1\n\
            \n\
            broken{a=\"x\" 1\n";
        let s = parse_prometheus(text);
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0].name, "rest_client_requests_total");
        assert_eq!(s[0].label("method"), Some("GET"));
        assert_eq!(s[0].value, 12.0);
        assert_eq!(s[1].value, 3.0);
        assert_eq!(s[2].label("a"), Some("x\"y,}"));
        assert_eq!(s[2].label("b"), Some("\\"));
        assert_eq!(s[2].value, 150.0);
        assert_eq!(
            s[3],
            Sample {
                name: "up".into(),
                labels: vec![],
                value: 1.0
            }
        );
    }

    #[test]
    fn requests_split_reads_and_writes() {
        let text = "rest_client_requests_total{code=\"200\",host=\"api\",method=\"GET\"} 10\n\
            rest_client_requests_total{code=\"404\",host=\"api\",method=\"GET\"} 2\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"PATCH\"} 4\n\
            rest_client_requests_total{code=\"201\",host=\"api\",method=\"POST\"} 1\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"DELETE\"} 1\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"PUT\"} 2\n\
            rest_client_requests_total{code=\"200\",host=\"api\",method=\"OPTIONS\"} 1\n\
            controller_runtime_reconcile_total{controller=\"cloneset\"} 99\n";
        let r = Requests::from_metrics(text);
        assert_eq!(
            r,
            Requests {
                reads: 12,
                writes: 8,
                other: 1
            }
        );
        assert_eq!(r.total(), 21);
        let later = Requests {
            reads: 20,
            writes: 9,
            other: 1,
        };
        assert_eq!(
            later.since(&r),
            Requests {
                reads: 8,
                writes: 1,
                other: 0
            }
        );
    }
}
