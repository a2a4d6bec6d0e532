//! `kruise-footprint`: what a cached pod costs in the manager's memory and decode time, beside
//! the baseline of k8s-openapi's `Pod` — the benchmark behind the "Slim objects" figures of
//! docs/architecture.md. No cluster needed.
//!
//! ```sh
//! cargo run --release -p kruise-bench --bin kruise-footprint [-- <pod.json> [copies]]
//! ```
//!
//! The pod (default `hack/bench/testdata/cloneset-pod.json`: a kwok CloneSet pod as the API
//! server sends it, `managedFields` included) is copied `copies` times (default 2,000) with
//! distinct names and UIDs, serialized, then decoded by each way below while a counting global
//! allocator tracks every allocation. Per object it prints the decode time (µs), the allocations
//! the decode made (count and bytes, including what it frees again) and what stays held
//! afterwards (requested bytes, and `malloc_usable_size` + 8 bytes of chunk header, what glibc
//! really sets aside). Exits non-zero with a reason if the file cannot be read or decoded.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kruise_api::pod::CachedPod;

struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);
static HELD_CHUNKS: AtomicIsize = AtomicIsize::new(0);
static HELD_COUNT: AtomicIsize = AtomicIsize::new(0);
static MADE: AtomicIsize = AtomicIsize::new(0);
static MADE_BYTES: AtomicIsize = AtomicIsize::new(0);

fn chunk(p: *mut u8) -> isize {
    // SAFETY: `p` is a live allocation of the system allocator (glibc malloc).
    (unsafe { libc::malloc_usable_size(p.cast()) }) as isize + 8
}

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            HELD.fetch_add(l.size() as isize, Relaxed);
            HELD_CHUNKS.fetch_add(chunk(p), Relaxed);
            HELD_COUNT.fetch_add(1, Relaxed);
            MADE.fetch_add(1, Relaxed);
            MADE_BYTES.fetch_add(l.size() as isize, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        HELD.fetch_sub(l.size() as isize, Relaxed);
        HELD_CHUNKS.fetch_sub(chunk(p), Relaxed);
        HELD_COUNT.fetch_sub(1, Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

type Counters = [isize; 5];

fn counters() -> Counters {
    [&HELD, &HELD_CHUNKS, &HELD_COUNT, &MADE, &MADE_BYTES].map(|c| c.load(Relaxed))
}

/// Decodes every text with `decode`, keeps the results, prints the per-object figures.
fn measure<T>(
    what: &str,
    texts: &[Vec<u8>],
    decode: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<(), String> {
    let mut kept: Vec<Arc<T>> = Vec::with_capacity(texts.len());
    let before = counters();
    let start = Instant::now();
    for t in texts {
        kept.push(Arc::new(decode(t)?));
    }
    let elapsed = start.elapsed();
    let after = counters();
    let n = texts.len() as f64;
    let per = |i: usize| (after[i] - before[i]) as f64 / n;
    println!(
        "{what:58} {:6.1} µs  made {:5.0} allocations ({:6.0} B)  holds {:6.0} B requested, {:6.0} B in malloc chunks, {:4.0} allocations",
        elapsed.as_secs_f64() * 1e6 / n,
        per(3),
        per(4),
        per(0),
        per(1),
        per(2),
    );
    drop(kept);
    Ok(())
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "hack/bench/testdata/cloneset-pod.json".to_owned());
    let copies: usize = match args.next() {
        Some(n) => n.parse().map_err(|e| format!("copies {n:?}: {e}"))?,
        None => 2000,
    };
    let text = std::fs::read(&path).map_err(|e| format!("reading {path}: {e}"))?;
    let pod: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| format!("{path} is not JSON: {e}"))?;
    let name = pod["metadata"]["name"].as_str().unwrap_or("pod").to_owned();
    let texts = (0..copies)
        .map(|i| {
            let mut p = pod.clone();
            p["metadata"]["name"] = format!("{name}-{i:05}").into();
            p["metadata"]["uid"] = format!("00000000-0000-0000-0000-{i:012x}").into();
            serde_json::to_vec(&p).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "{copies} copies of {path} ({} bytes of JSON each); per object:",
        texts[0].len()
    );
    let err = |e: serde_json::Error| format!("decoding {path}: {e}");
    measure("baseline: k8s-openapi Pod, decoded", &texts, |t| {
        serde_json::from_slice::<Pod>(t).map_err(err)
    })?;
    measure(
        "CachedPod, decoded (what a watch event holds)",
        &texts,
        |t| serde_json::from_slice::<CachedPod>(t).map_err(err),
    )?;
    measure(
        "CachedPod as stored: claims kept, cloned by kube's Writer",
        &texts,
        |t| {
            let mut p = serde_json::from_slice::<CachedPod>(t).map_err(err)?;
            if let Some(spec) = p.spec.as_mut() {
                kruise_api::pod::keep_claim_volumes(&mut spec.volumes);
            }
            Ok(p.clone())
        },
    )?;
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kruise-footprint: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
