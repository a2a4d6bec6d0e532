//! `kruise-admission-corpus`: records OpenKruise v1.9.0's admission verdicts for the cases of
//! [`kruise_e2e::corpus`] into `tests/admission-corpus/<corpus>.jsonl` (how to run the Go
//! manager for it: `hack/admission-corpus/README.md`).
//!
//! `record` posts every case as an AdmissionReview (admission.k8s.io/v1) straight to the
//! manager's webhook server, the way the API server would: the mutating webhook first, its JSON
//! patch applied, then the validating webhook on the mutated object. For UPDATE cases the old
//! object is first sent through the mutating webhook as a CREATE (what the API server would have
//! stored). Existing `deviation` marks are kept by case id. `list` prints the case counts.
//!
//! Exits non-zero with a reason when the manager cannot be reached or answers malformed JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, Subcommand};
use kruise_e2e::corpus::{self, Answer, Case, Record};
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(name = "kruise-admission-corpus", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print each corpus and its number of cases.
    List,
    /// Filter OpenKruise's rendered manifests (`kubectl kustomize config/default`, on stdin) to
    /// what an out-of-cluster manager needs (Namespace, CustomResourceDefinition, webhook
    /// configurations, ClusterRole) with every webhook called by URL at `--url`; YAML on stdout.
    Manifests {
        /// Base URL the API server calls the webhooks at.
        #[arg(long, default_value = "https://127.0.0.1:9876")]
        url: String,
    },
    /// Send every case through a running OpenKruise manager's webhook server and write the
    /// recorded verdicts.
    Record {
        /// Base URL of the manager's webhook server.
        #[arg(long, default_value = "https://127.0.0.1:9876")]
        url: String,
        /// CA certificate (PEM) the serving certificate is signed by (the manager's
        /// WEBHOOK_CERT_DIR/ca-cert.pem).
        #[arg(long)]
        ca: PathBuf,
        /// Output directory.
        #[arg(long, default_value = "tests/admission-corpus")]
        out: PathBuf,
        /// Record only these corpora (default: all).
        #[arg(long = "only")]
        only: Vec<String>,
    },
}

fn paths(kind: &str) -> (Option<&'static str>, Option<&'static str>) {
    match kind {
        "CloneSet" => (
            Some("/mutate-apps-kruise-io-v1alpha1-cloneset"),
            Some("/validate-apps-kruise-io-v1alpha1-cloneset"),
        ),
        "StatefulSet" => (
            Some("/mutate-apps-kruise-io-statefulset"),
            Some("/validate-apps-kruise-io-statefulset"),
        ),
        "DaemonSet" => (
            Some("/mutate-apps-kruise-io-daemonset"),
            Some("/validate-apps-kruise-io-daemonset"),
        ),
        "Pod" => (Some("/mutate-pod"), None),
        _ => (None, None),
    }
}

struct Recorder {
    http: reqwest::Client,
    url: String,
    seq: u64,
}

impl Recorder {
    async fn post(
        &mut self,
        path: &str,
        case: &Case,
        operation: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<Answer> {
        self.seq += 1;
        let name = object
            .or(old)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let gvk = json!({"group": case.group, "version": case.version, "kind": case.kind});
        let gvr = json!({"group": case.group, "version": case.version, "resource": case.resource});
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": format!("00000000-0000-4000-8000-{:012}", self.seq),
                "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
                "name": name, "namespace": corpus::NAMESPACE, "operation": operation,
                "userInfo": {"username": "kruise-admission-corpus"},
                "object": object, "oldObject": old, "dryRun": false,
                "options": if operation == "DELETE" { json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions"}) }
                           else if operation == "UPDATE" { json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}) }
                           else { json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}) }
            }
        });
        let resp = self
            .http
            .post(format!("{}{path}", self.url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&review)?)
            .send()
            .await
            .with_context(|| format!("POST {path} for case {}", case.id))?;
        let status = resp.status();
        let bytes = resp
            .bytes()
            .await
            .with_context(|| format!("case {}: reading the answer of {path}", case.id))?;
        let body: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("case {}: answer of {path} is not JSON", case.id))?;
        if !status.is_success() {
            bail!("case {}: {path} answered HTTP {status}: {body}", case.id);
        }
        let r = body
            .get("response")
            .ok_or_else(|| anyhow!("case {}: no response in {body}", case.id))?;
        let allowed = r.get("allowed").and_then(Value::as_bool).unwrap_or(false);
        let code = r
            .pointer("/status/code")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u16;
        let message = r
            .pointer("/status/message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let mut patched = None;
        if allowed && path.starts_with("/mutate") {
            let mut obj = object.cloned().unwrap_or(Value::Null);
            if let Some(p) = r.get("patch").and_then(Value::as_str) {
                use base64::Engine as _;
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(p)
                    .with_context(|| format!("case {}: patch is not base64", case.id))?;
                let patch: json_patch::Patch = serde_json::from_slice(&raw)
                    .with_context(|| format!("case {}: patch is not a JSON patch", case.id))?;
                json_patch::patch(&mut obj, &patch)
                    .with_context(|| format!("case {}: patch does not apply", case.id))?;
            }
            patched = Some(obj);
        }
        let message = corpus::without_pointer_addresses(&message);
        Ok(Answer {
            allowed,
            code,
            paths: if allowed {
                Vec::new()
            } else {
                corpus::paths_in_message(&message)
            },
            message,
            patched,
        })
    }

    async fn record(&mut self, case: &Case) -> Result<Option<Record>> {
        let (mutate, validate) = paths(&case.kind);
        let mut case = case.clone();
        if case.operation == "UPDATE"
            && let (Some(m), Some(old)) = (mutate, case.old_object.clone())
        {
            let stored = self.post(m, &case, "CREATE", Some(&old), None).await?;
            match stored.patched {
                Some(o) if stored.allowed => case.old_object = Some(o),
                _ => return Ok(None),
            }
        }
        let mut rec = Record {
            case: case.clone(),
            mutation: None,
            validation: None,
            deviation: None,
        };
        let mut object = case.object.clone();
        if case.operation != "DELETE"
            && let Some(m) = mutate
        {
            let a = self
                .post(
                    m,
                    &case,
                    &case.operation,
                    object.as_ref(),
                    case.old_object.as_ref(),
                )
                .await?;
            if !a.allowed {
                rec.mutation = Some(a);
                return Ok(Some(rec));
            }
            object = a.patched.clone();
            rec.mutation = Some(a);
        }
        if let Some(v) = validate {
            let obj = if case.operation == "DELETE" {
                None
            } else {
                object.as_ref()
            };
            rec.validation = Some(
                self.post(v, &case, &case.operation, obj, case.old_object.as_ref())
                    .await?,
            );
        }
        Ok(Some(rec))
    }
}

fn existing_deviations(file: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .filter_map(|r| r.deviation.map(|d| (r.case.id, d)))
        .collect()
}

/// See [`Command::Manifests`].
fn manifests(url: &str) -> Result<()> {
    use serde::Deserialize as _;
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)?;
    const KEEP: &[&str] = &[
        "Namespace",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterRole",
    ];
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&input) {
        let mut v = Value::deserialize(doc).context("manifests on stdin are not YAML")?;
        let kind = v
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !KEEP.contains(&kind.as_str()) {
            continue;
        }
        if kind.ends_with("WebhookConfiguration") {
            if let Some(a) = v
                .pointer_mut("/metadata/annotations")
                .and_then(Value::as_object_mut)
            {
                a.remove("template");
            }
            for wh in v
                .get_mut("webhooks")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let path = wh
                    .pointer("/clientConfig/service/path")
                    .and_then(Value::as_str)
                    .unwrap_or("/")
                    .to_owned();
                wh["clientConfig"] = json!({"url": format!("{url}{path}")});
            }
        }
        out.push(serde_yaml_ng::to_string(&v)?);
    }
    if out.is_empty() {
        bail!("no manifests on stdin (expected the output of kubectl kustomize config/default)");
    }
    print!("{}", out.join("---\n"));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            for c in corpus::all() {
                println!("{}\t{}", c.name, c.cases.len());
            }
            Ok(())
        }
        Command::Manifests { url } => manifests(&url),
        Command::Record { url, ca, out, only } => {
            let pem = std::fs::read(&ca).with_context(|| format!("reading {}", ca.display()))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .with_context(|| format!("{} is not a PEM certificate", ca.display()))?;
            let http = reqwest::Client::builder()
                .add_root_certificate(cert)
                .timeout(Duration::from_secs(30))
                .build()?;
            let mut rec = Recorder { http, url, seq: 0 };
            std::fs::create_dir_all(&out)?;
            for c in corpus::all() {
                if !only.is_empty() && !only.iter().any(|o| o == c.name) {
                    continue;
                }
                let file = out.join(format!("{}.jsonl", c.name));
                let deviations = existing_deviations(&file);
                let started = Instant::now();
                let mut lines = Vec::new();
                let (mut denied, mut admitted, mut skipped) = (0, 0, 0);
                for (i, case) in c.cases.iter().enumerate() {
                    match rec.record(case).await? {
                        Some(mut r) => {
                            r.deviation = deviations.get(&r.case.id).cloned();
                            if r.allowed() {
                                admitted += 1;
                            } else {
                                denied += 1;
                            }
                            lines.push(serde_json::to_string(&r)?);
                        }
                        None => skipped += 1,
                    }
                    if (i + 1) % 100 == 0 {
                        eprintln!(
                            "[corpus] {}: {}/{} cases sent ({:.1}s)",
                            c.name,
                            i + 1,
                            c.cases.len(),
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
                std::fs::write(&file, lines.join("\n") + "\n")
                    .with_context(|| format!("writing {}", file.display()))?;
                eprintln!(
                    "[corpus] {}: {} recorded ({denied} denied, {admitted} admitted; {skipped} updates skipped because their old object was denied) -> {}",
                    c.name,
                    lines.len(),
                    file.display()
                );
            }
            Ok(())
        }
    }
}
