//! End-to-end tests of the manager platform against the testbed: Lease leader election, the
//! controller runner (metrics, retries, graceful drain), events, and the `kruise-manager`
//! binary itself (endpoints, SIGTERM shutdown releasing the Lease, exit on lost leadership).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kruise_e2e::{TestEnv, testbed_kubeconfig, wait_for, wait_for_object};
use kruise_runtime::events::{self, EventRecorder};
use kruise_runtime::features::FeatureGates;
use kruise_runtime::leader::{LeaderElectionConfig, LeaderElector};
use kruise_runtime::runner::{self as runtime, Context, ControllerConfig};
use kube::api::{ListParams, PostParams};
use kube::runtime::controller::Action;

use kube::{Api, ResourceExt};

async fn env() -> TestEnv {
    TestEnv::connect().await.expect("testbed")
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("configmap")
}

fn fast_config(ns: &str, name: &str) -> LeaderElectionConfig {
    let mut c = LeaderElectionConfig::new(ns, name);
    c.lease_duration = Duration::from_secs(15);
    c.renew_deadline = Duration::from_secs(5);
    c.retry_period = Duration::from_secs(1);
    c
}

fn holder(lease: &Lease) -> Option<String> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_electors_exactly_one_leads_and_release_hands_over() {
    let env = env().await;
    let ns = env.namespace("leader").await.expect("namespace");
    let leases: Api<Lease> = ns.api();

    let a = LeaderElector::new(env.client.clone(), fast_config(ns.name(), "kruise-manager"))
        .expect("elector a");
    let b = LeaderElector::new(env.client.clone(), fast_config(ns.name(), "kruise-manager"))
        .expect("elector b");
    let ids = [a.config().identity.clone(), b.config().identity.clone()];
    assert_ne!(ids[0], ids[1]);
    let rx = [a.subscribe(), b.subscribe()];
    let release = [
        tokio_util::sync::CancellationToken::new(),
        tokio_util::sync::CancellationToken::new(),
    ];
    let mut tasks = [
        Some(tokio::spawn(a.run(release[0].clone()))),
        Some(tokio::spawn(b.run(release[1].clone()))),
    ];

    let leaders = || rx.iter().filter(|r| *r.borrow()).count();
    wait_for("a leader", Duration::from_secs(20), || async {
        (leaders() == 1).then_some(())
    })
    .await
    .expect("one elector leads");
    // Stays exactly one for a few renewals.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        assert_eq!(leaders(), 1, "exactly one leader at any time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = usize::from(!*rx[0].borrow());
    let second = 1 - first;
    let lease = leases.get("kruise-manager").await.expect("lease");
    assert_eq!(holder(&lease).as_deref(), Some(ids[first].as_str()));
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(15)
    );

    // Releasing hands over well before the 15s lease would expire.
    let released_at = Instant::now();
    release[first].cancel();
    tasks[first]
        .take()
        .expect("task")
        .await
        .expect("join")
        .expect("clean release");
    assert!(!*rx[first].borrow());
    wait_for("handover", Duration::from_secs(8), || async {
        (*rx[second].borrow()).then_some(())
    })
    .await
    .expect("the standby takes over after release");
    let handover = released_at.elapsed();
    assert!(
        handover < Duration::from_secs(6),
        "handover took {handover:?}"
    );
    let lease = leases.get("kruise-manager").await.expect("lease");
    assert_eq!(holder(&lease).as_deref(), Some(ids[second].as_str()));
    assert!(
        lease
            .spec
            .as_ref()
            .and_then(|s| s.lease_transitions)
            .unwrap_or(0)
            >= 2
    );

    release[second].cancel();
    tasks[second]
        .take()
        .expect("task")
        .await
        .expect("join")
        .expect("clean release");
    let lease = leases.get("kruise-manager").await.expect("lease");
    assert_eq!(holder(&lease), None);
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(1)
    );
}

#[derive(Debug, thiserror::Error)]
#[error("injected failure")]
struct Injected;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_controller_records_metrics_retries_and_drains() {
    let env = env().await;
    let ns = env.namespace("runtime").await.expect("namespace");
    let cms: Api<ConfigMap> = ns.api();
    for name in ["ok", "fail", "later", "ratelimited"] {
        cms.create(&PostParams::default(), &cm(name))
            .await
            .expect("create");
    }

    let ctx = Arc::new(Context::new(
        env.client.clone(),
        FeatureGates::default(),
        ControllerConfig::default(),
    ));
    ctx.readiness.set_ready(true);
    let calls: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let slow_started = Arc::new(AtomicBool::new(false));
    let slow_done = Arc::new(AtomicBool::new(false));

    let reconcile = {
        let calls = calls.clone();
        let slow_started = slow_started.clone();
        let slow_done = slow_done.clone();
        move |obj: Arc<ConfigMap>, _ctx: Arc<Context>| {
            let calls = calls.clone();
            let slow_started = slow_started.clone();
            let slow_done = slow_done.clone();
            async move {
                let name = obj.name_any();
                let n = {
                    let mut m = calls.lock().expect("lock");
                    let n = m.entry(name.clone()).or_insert(0);
                    *n += 1;
                    *n
                };
                match name.as_str() {
                    "fail" if n <= 2 => Err(Injected),
                    "later" => Ok(Action::requeue(Duration::from_secs(3600))),
                    "ratelimited" if n == 1 => Ok(runtime::requeue_rate_limited()),
                    "slow" => {
                        slow_started.store(true, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_secs(2)).await;
                        slow_done.store(true, Ordering::SeqCst);
                        Ok(Action::await_change())
                    }
                    _ => Ok(Action::await_change()),
                }
            }
        }
    };
    let informer = ctx.cache.informer::<ConfigMap>();
    let caches = vec![informer.synced()];
    let handle = tokio::spawn(runtime::run_controller(
        ctx.clone(),
        "cm-test",
        2,
        runtime::Triggers::from_informer(&informer),
        caches,
        reconcile,
    ));

    let count = |name: &str| calls.lock().expect("lock").get(name).copied().unwrap_or(0);
    wait_for("reconciles", Duration::from_secs(20), || async {
        (count("ok") >= 1 && count("fail") >= 3 && count("later") >= 1 && count("ratelimited") >= 2)
            .then_some(())
    })
    .await
    .expect("every object reconciled, failures retried");
    wait_for("cache readiness", Duration::from_secs(5), || async {
        ctx.readiness.is_ready().then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: failing {:?}", ctx.readiness.failing()));

    let text = ctx.metrics.encode().expect("encode");
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("series {series} missing in\n{text}"))
    };
    assert_eq!(
        value(r#"controller_runtime_reconcile_total{controller="cm-test",result="error"}"#),
        2.0
    );
    assert_eq!(
        value(r#"controller_runtime_reconcile_errors_total{controller="cm-test"}"#),
        2.0
    );
    assert_eq!(
        value(r#"controller_runtime_reconcile_total{controller="cm-test",result="requeue"}"#),
        1.0
    );
    assert!(
        value(r#"controller_runtime_reconcile_total{controller="cm-test",result="requeue_after"}"#)
            >= 1.0
    );
    assert!(
        value(r#"controller_runtime_reconcile_total{controller="cm-test",result="success"}"#)
            >= 3.0
    );
    assert_eq!(
        value(r#"controller_runtime_max_concurrent_reconciles{controller="cm-test"}"#),
        2.0
    );
    assert!(value(r#"workqueue_retries_total{name="cm-test"}"#) >= 3.0);
    // client-go semantics: 4 objects added, 2 retries of "fail" and 1 of "ratelimited" added
    // when their backoff fires; nothing waits once they are done ("later" is scheduled, as
    // client-go's AddAfter, not queued).
    assert!(value(r#"workqueue_adds_total{name="cm-test"}"#) >= 7.0);
    assert_eq!(value(r#"workqueue_depth{name="cm-test"}"#), 0.0);
    assert!(value(r#"workqueue_queue_duration_seconds_count{name="cm-test"}"#) >= 7.0);
    assert!(
        value(r#"controller_runtime_reconcile_time_seconds_count{controller="cm-test"}"#) >= 6.0
    );

    // Graceful drain: shutdown during a reconcile waits for it.
    cms.create(&PostParams::default(), &cm("slow"))
        .await
        .expect("create slow");
    wait_for(
        "slow reconcile to start",
        Duration::from_secs(10),
        || async { slow_started.load(Ordering::SeqCst).then_some(()) },
    )
    .await
    .expect("slow started");
    ctx.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("controller stops")
        .expect("join")
        .expect("run_controller ok");
    assert!(
        slow_done.load(Ordering::SeqCst),
        "in-flight reconcile finished before run_controller returned"
    );
    assert_eq!(
        value(r#"controller_runtime_active_workers{controller="cm-test"}"#),
        0.0
    );
}

#[tokio::test]
async fn events_are_published_as_kruise_manager() {
    let env = env().await;
    let ns = env.namespace("events").await.expect("namespace");
    let cms: Api<ConfigMap> = ns.api();
    let obj = cms
        .create(&PostParams::default(), &cm("target"))
        .await
        .expect("create");
    let recorder = EventRecorder::new(env.client.clone());
    let r = events::object_ref(&obj);
    recorder
        .normal(&r, events::SUCCESSFUL_CREATE, "succeed to create pod x")
        .await;
    recorder
        .warning(&r, events::FAILED_CREATE, &"y".repeat(5000))
        .await;
    let evs: Api<K8sEvent> = ns.api();
    let list = wait_for("two events", Duration::from_secs(10), || async {
        let l = evs.list(&ListParams::default()).await.ok()?.items;
        (l.len() >= 2).then_some(l)
    })
    .await
    .expect("events");
    for e in &list {
        assert_eq!(e.reporting_controller.as_deref(), Some("kruise-manager"));
        assert_eq!(
            e.regarding.as_ref().and_then(|r| r.name.as_deref()),
            Some("target")
        );
    }
    let warning = list
        .iter()
        .find(|e| e.reason.as_deref() == Some("FailedCreate"))
        .expect("warning event");
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(warning.note.as_deref().unwrap_or_default().len() <= 1024);
    assert!(
        list.iter()
            .any(|e| e.reason.as_deref() == Some("SuccessfulCreate")
                && e.type_.as_deref() == Some("Normal"))
    );
}

// ---- the binary ----

use kruise_e2e::manager::{free_port, http_get};

struct Manager {
    child: tokio::process::Child,
    log: PathBuf,
    metrics: SocketAddr,
    health: SocketAddr,
}

impl Manager {
    fn start(ns: &str, lease: &str, extra: &[&str]) -> Manager {
        let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let health: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let log = std::env::temp_dir().join(format!("kruise-manager-{ns}-{lease}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let kubeconfig = testbed_kubeconfig();
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--leader-election-namespace={ns}"))
            .arg(format!("--leader-election-id={lease}"))
            .arg(format!("--metrics-addr={metrics}"))
            .arg(format!("--health-probe-addr={health}"))
            // Controllers stay off: other suites drive their own controllers on the shared
            // testbed, and these tests are about the platform (leader election, endpoints,
            // signals). The webhook server stays off for the same reason: its configurations
            // are cluster-wide and these managers run cluster-wide side by side.
            .arg("--controllers=-cloneset,-podreadiness")
            .arg("--webhook-server=false")
            .args(extra)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn kruise-manager");
        Manager {
            child,
            log,
            metrics,
            health,
        }
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.id().expect("running");
        let status = std::process::Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        assert!(status.success());
    }

    async fn wait_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(status) => status.expect("wait"),
            Err(_) => panic!(
                "kruise-manager did not exit within {timeout:?}; logs:\n{}",
                self.logs()
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_serves_endpoints_and_releases_lease_on_sigterm() {
    let env = env().await;
    let ns = env.namespace("binary").await.expect("namespace");
    let leases: Api<Lease> = ns.api();
    let mut m = Manager::start(ns.name(), "kruise-manager", &[]);

    let health = m.health;
    let healthz = wait_for("/healthz", Duration::from_secs(30), || async {
        http_get(health, "/healthz")
            .await
            .filter(|(s, _)| *s == 200)
    })
    .await;
    assert!(healthz.is_ok(), "healthz never ok; logs:\n{}", m.logs());
    assert_eq!(healthz.expect("ok").1, "ok");
    let readyz = wait_for("/readyz", Duration::from_secs(30), || async {
        http_get(health, "/readyz").await.filter(|(s, _)| *s == 200)
    })
    .await;
    assert!(readyz.is_ok(), "readyz never ok; logs:\n{}", m.logs());

    let lease = wait_for_object(
        &leases,
        "kruise-manager",
        "lease held",
        Duration::from_secs(30),
        |l| holder(l).is_some(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}; logs:\n{}", m.logs()));
    let identity = holder(&lease).expect("holder");
    assert!(
        identity.contains('_'),
        "identity {identity} is hostname_uuid"
    );

    let metrics = m.metrics;
    let body = wait_for("leader metric", Duration::from_secs(10), || async {
        http_get(metrics, "/metrics")
            .await
            .filter(|(s, b)| *s == 200 && b.contains("kruise_manager_is_leader 1"))
            .map(|(_, b)| b)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}; logs:\n{}", m.logs()));
    assert!(body.contains("# TYPE kruise_manager_is_leader gauge"));
    assert!(body.trim_end().ends_with("# EOF"));

    m.signal("TERM");
    let status = m.wait_exit(Duration::from_secs(40)).await;
    assert!(
        status.success(),
        "exit status {status:?}; logs:\n{}",
        m.logs()
    );
    let lease = leases.get("kruise-manager").await.expect("lease");
    assert_eq!(holder(&lease), None, "lease released; logs:\n{}", m.logs());
    assert_eq!(
        lease.spec.as_ref().and_then(|s| s.lease_duration_seconds),
        Some(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_exits_nonzero_when_leadership_is_lost() {
    let env = env().await;
    let ns = env.namespace("lostlease").await.expect("namespace");
    let leases: Api<Lease> = ns.api();
    let mut m = Manager::start(
        ns.name(),
        "kruise-manager",
        &[
            "--leader-election-lease-duration=4s",
            "--leader-election-renew-deadline=3s",
            "--leader-election-retry-period=1s",
        ],
    );
    wait_for_object(
        &leases,
        "kruise-manager",
        "lease held",
        Duration::from_secs(30),
        |l| holder(l).is_some(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}; logs:\n{}", m.logs()));

    // Another candidate takes the Lease over.
    wait_for("steal the lease", Duration::from_secs(10), || async {
        let mut lease = leases.get("kruise-manager").await.ok()?;
        lease.spec = Some(LeaseSpec {
            holder_identity: Some("thief".into()),
            lease_duration_seconds: Some(60),
            acquire_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            lease_transitions: Some(99),
            ..LeaseSpec::default()
        });
        leases
            .replace("kruise-manager", &PostParams::default(), &lease)
            .await
            .ok()
    })
    .await
    .expect("stolen");

    let status = m.wait_exit(Duration::from_secs(20)).await;
    assert!(!status.success(), "must exit non-zero; logs:\n{}", m.logs());
    assert!(
        m.logs().contains("leader election lost"),
        "logs:\n{}",
        m.logs()
    );
    let lease = leases.get("kruise-manager").await.expect("lease");
    assert_eq!(holder(&lease).as_deref(), Some("thief"));
}

#[tokio::test]
async fn binary_rejects_unknown_feature_gate_and_controller() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .arg("--feature-gates=NoSuchGate=true")
        .arg(format!("--kubeconfig={}", testbed_kubeconfig().display()))
        .output()
        .await
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NoSuchGate"), "{stderr}");

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kruise-manager"))
        .arg("--controllers=nosuchcontroller")
        .arg(format!("--kubeconfig={}", testbed_kubeconfig().display()))
        .output()
        .await
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nosuchcontroller"), "{stderr}");
}

/// The shared cache streams its initial list where the API server can (the testbed's can:
/// Kubernetes' WatchList), and a streamed cache holds what a listed one holds, then follows
/// changes the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_cache_streams_its_initial_list_where_the_api_server_can() {
    use kruise_runtime::cache::{InitialList, SharedCache, wait_for_cache_sync};
    use kruise_runtime::server::Readiness;
    use tokio_util::sync::CancellationToken;

    let env = env().await;
    let ns = env.namespace("streamed").await.expect("namespace");
    let cms: Api<ConfigMap> = ns.api();
    for i in 0..3 {
        cms.create(&PostParams::default(), &cm(&format!("cm-{i}")))
            .await
            .expect("create");
    }
    let stop = CancellationToken::new();
    let cache = |strategy| {
        SharedCache::with_initial_list(
            env.client.clone(),
            Some(ns.name().to_owned()),
            Readiness::new(),
            stop.clone(),
            strategy,
        )
    };
    let names = |inf: &kruise_runtime::cache::Informer<ConfigMap>| {
        let mut n: Vec<String> = inf
            .in_namespace(ns.name())
            .iter()
            .map(|c| c.name_any())
            .filter(|n| n.starts_with("cm-"))
            .collect();
        n.sort();
        n
    };
    let auto = cache(InitialList::Auto);
    let listed = cache(InitialList::List);
    assert_eq!(auto.initial_lists_streamed(), None);
    let (a, l) = (auto.informer::<ConfigMap>(), listed.informer::<ConfigMap>());
    wait_for_cache_sync(&[a.synced(), l.synced()], Duration::from_secs(30))
        .await
        .expect("both caches synced");
    assert_eq!(
        auto.initial_lists_streamed(),
        Some(true),
        "the testbed's API server streams lists (WatchList); the probe said no"
    );
    assert_eq!(listed.initial_lists_streamed(), Some(false));
    assert_eq!(names(&a), ["cm-0", "cm-1", "cm-2"]);
    assert_eq!(names(&a), names(&l));

    cms.create(&PostParams::default(), &cm("cm-3"))
        .await
        .expect("create");
    cms.delete("cm-0", &Default::default())
        .await
        .expect("delete");
    wait_for("both caches to follow", Duration::from_secs(20), || async {
        (names(&a) == ["cm-1", "cm-2", "cm-3"] && names(&l) == names(&a)).then_some(())
    })
    .await
    .expect("changes after the streamed list");
    stop.cancel();
}
