//! Webhook certificates, as OpenKruise's self-signed generator and Secret writer keep them:
//! a CA and a serving certificate for the webhook's DNS name (or IP), stored in Secret
//! `kruise-webhook-certs` under the keys `ca-key.pem`, `ca-cert.pem`, `key.pem`/`tls.key` and
//! `cert.pem`/`tls.crt`, regenerated when missing, invalid, not for the expected name, or
//! expiring within the renewal window.
//!
//! Keys are ECDSA P-256 (OpenKruise uses RSA-2048; the apiserver accepts both). This module is
//! pure (no API calls): [`generate`], [`needs_renewal`], and the conversion to
//! and from Secret data.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// Secret key of the CA private key.
pub const CA_KEY: &str = "ca-key.pem";
/// Secret key of the CA certificate (the `caBundle`).
pub const CA_CERT: &str = "ca-cert.pem";
/// Secret key of the serving private key.
pub const SERVER_KEY: &str = "key.pem";
/// Same key under the name cert-manager and kubernetes.io/tls Secrets use.
pub const SERVER_KEY_TLS: &str = "tls.key";
/// Secret key of the serving certificate.
pub const SERVER_CERT: &str = "cert.pem";
/// Same certificate under the kubernetes.io/tls name.
pub const SERVER_CERT_TLS: &str = "tls.crt";
/// Validity of the CA and the serving certificate (OpenKruise: 10 years).
pub const VALIDITY_DAYS: i64 = 3650;
/// Default renewal window (`CERTS_RENEW_BEFORE`, OpenKruise: 6 months).
pub const DEFAULT_RENEW_BEFORE_DAYS: i64 = 180;

/// Errors generating or reading certificates.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Key or certificate generation failed.
    #[error("generating webhook certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// A PEM block could not be parsed.
    #[error("parsing {what}: {reason}")]
    Parse {
        /// Which item.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

/// A CA and a serving certificate signed by it, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertBundle {
    /// CA private key.
    pub ca_key: String,
    /// CA certificate; the `caBundle` of webhook configurations and CRD conversion.
    pub ca_cert: String,
    /// Serving private key.
    pub key: String,
    /// Serving certificate for the webhook host.
    pub cert: String,
}

/// Generates a new CA and a serving certificate for `host` (a DNS name such as
/// `kruise-webhook-service.kruise-system.svc`, or an IP address such as `127.0.0.1`), both valid
/// for [`VALIDITY_DAYS`] from `now`.
pub fn generate(host: &str, now: jiff::Timestamp) -> Result<CertBundle, CertError> {
    let not_before = to_offset(now - jiff::SignedDuration::from_hours(1));
    let not_after = to_offset(now + jiff::SignedDuration::from_hours(24 * VALIDITY_DAYS));

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name = DistinguishedName::new();
    ca.distinguished_name
        .push(DnType::CommonName, "webhook-cert-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_cert = ca.self_signed(&ca_key)?;

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, host);
    params.subject_alt_names = vec![match host.parse::<std::net::IpAddr>() {
        Ok(ip) => SanType::IpAddress(ip),
        Err(_) => SanType::DnsName(host.try_into()?),
    }];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = not_after;
    let issuer = Issuer::new(ca, &ca_key);
    let cert = params.signed_by(&key, &issuer)?;

    Ok(CertBundle {
        ca_key: ca_key.serialize_pem(),
        ca_cert: ca_cert.pem(),
        key: key.serialize_pem(),
        cert: cert.pem(),
    })
}

fn to_offset(t: jiff::Timestamp) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(t.as_second())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// The bundle as Secret data (both key naming conventions for the serving pair).
pub fn to_secret_data(b: &CertBundle) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    for (k, v) in [
        (CA_KEY, &b.ca_key),
        (CA_CERT, &b.ca_cert),
        (SERVER_KEY, &b.key),
        (SERVER_KEY_TLS, &b.key),
        (SERVER_CERT, &b.cert),
        (SERVER_CERT_TLS, &b.cert),
    ] {
        data.insert(k.to_owned(), ByteString(v.as_bytes().to_vec()));
    }
    data
}

/// Reads a bundle from Secret data; `None` when a piece is missing or not UTF-8. The serving
/// pair may be under either naming convention.
pub fn from_secret_data(data: &BTreeMap<String, ByteString>) -> Option<CertBundle> {
    let get = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| data.get(*n))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|s| !s.trim().is_empty())
    };
    Some(CertBundle {
        ca_key: get(&[CA_KEY]).unwrap_or_default(),
        ca_cert: get(&[CA_CERT, "ca.crt"])?,
        key: get(&[SERVER_KEY, SERVER_KEY_TLS])?,
        cert: get(&[SERVER_CERT, SERVER_CERT_TLS])?,
    })
}

/// Why a bundle must be replaced, or `None` when it is fine: the serving certificate does not
/// parse, is not issued for `host`, is not yet valid, or expires within `renew_before`; or the
/// CA does not parse.
pub fn needs_renewal(
    b: &CertBundle,
    host: &str,
    now: jiff::Timestamp,
    renew_before: jiff::SignedDuration,
) -> Option<String> {
    use x509_parser::prelude::*;
    let parse = |what: &'static str, pem: &str| -> Result<Vec<u8>, String> {
        let (_, p) = parse_x509_pem(pem.as_bytes()).map_err(|e| format!("{what}: {e}"))?;
        Ok(p.contents)
    };
    if let Err(e) = parse("CA certificate", &b.ca_cert) {
        return Some(e);
    }
    let der = match parse("serving certificate", &b.cert) {
        Ok(d) => d,
        Err(e) => return Some(e),
    };
    let cert = match X509Certificate::from_der(&der) {
        Ok((_, c)) => c,
        Err(e) => return Some(format!("serving certificate: {e}")),
    };
    let validity = cert.validity();
    let now_s = now.as_second();
    if validity.not_before.timestamp() > now_s {
        return Some("serving certificate is not valid yet".into());
    }
    if validity.not_after.timestamp() - renew_before.as_secs() <= now_s {
        return Some("serving certificate expires within the renewal window".into());
    }
    let names_host = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .is_some_and(|san| {
            san.value.general_names.iter().any(|n| match n {
                GeneralName::DNSName(d) => *d == host,
                GeneralName::IPAddress(ip) => {
                    host.parse::<std::net::IpAddr>().is_ok_and(|h| match h {
                        std::net::IpAddr::V4(v4) => ip == &v4.octets(),
                        std::net::IpAddr::V6(v6) => ip == &v6.octets(),
                    })
                }
                _ => false,
            })
        });
    if !names_host {
        return Some(format!("serving certificate is not issued for {host}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-11-22T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn generated_bundle_is_valid_for_its_host() {
        for host in ["kruise-webhook-service.kruise-system.svc", "127.0.0.1"] {
            let b = generate(host, now()).unwrap();
            assert!(b.ca_cert.starts_with("-----BEGIN CERTIFICATE-----"));
            assert!(b.key.contains("PRIVATE KEY"));
            let renew = jiff::SignedDuration::from_hours(24 * DEFAULT_RENEW_BEFORE_DAYS);
            assert_eq!(needs_renewal(&b, host, now(), renew), None, "{host}");
            assert!(needs_renewal(&b, "other.svc", now(), renew).is_some());
        }
    }

    #[test]
    fn renewal_window_and_garbage_trigger_renewal() {
        let b = generate("a.svc", now()).unwrap();
        let renew = jiff::SignedDuration::from_hours(24 * DEFAULT_RENEW_BEFORE_DAYS);
        let late = now() + jiff::SignedDuration::from_hours(24 * (VALIDITY_DAYS - 100));
        assert!(needs_renewal(&b, "a.svc", late, renew).is_some());
        let mut broken = b.clone();
        broken.cert = "not a certificate".into();
        assert!(needs_renewal(&broken, "a.svc", now(), renew).is_some());
    }

    #[test]
    fn secret_data_round_trip_and_tls_names() {
        let b = generate("a.svc", now()).unwrap();
        let data = to_secret_data(&b);
        assert_eq!(from_secret_data(&data), Some(b.clone()));
        // A cert-manager style Secret (tls.crt / tls.key / ca.crt-less CA under ca-cert.pem).
        let mut tls = BTreeMap::new();
        tls.insert(
            CA_CERT.to_owned(),
            ByteString(b.ca_cert.clone().into_bytes()),
        );
        tls.insert(
            SERVER_CERT_TLS.to_owned(),
            ByteString(b.cert.clone().into_bytes()),
        );
        tls.insert(
            SERVER_KEY_TLS.to_owned(),
            ByteString(b.key.clone().into_bytes()),
        );
        let read = from_secret_data(&tls).unwrap();
        assert_eq!(read.cert, b.cert);
        assert!(from_secret_data(&BTreeMap::new()).is_none());
    }
}
