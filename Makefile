# kruise-rs developer entry points. Every target shows progress and fails with a reason.
.PHONY: protoc help demo test conformance image testbed-up testbed-down testbed-status testbed-build crds crds-check chart-check chart-golden golden golden-check fmt lint

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\t/' | column -t -s "$$(printf '\t')"

demo: ## README command 1: testbed + CRDs + kruise-manager + a CloneSet in-place rollout with live progress
	hack/demo/demo.sh

test: ## run all tests: fmt, CRD staleness, clippy, unit + e2e on the local testbed (started and stopped if not running)
	hack/test.sh

conformance: ## OpenKruise v1.9.0's own e2e specs of AREA (CloneSet, StatefulSet, DaemonSet, SidecarSet, SidecarResourcesPolicy) against kruise-manager on the testbed (not part of make test)
	@[ -n "$(AREA)" ] || { echo "usage: make conformance AREA=<CloneSet|StatefulSet|DaemonSet|SidecarSet|SidecarResourcesPolicy|label filter>" >&2; exit 2; }
	hack/conformance/conformance.sh "$(AREA)"

image: ## container images of kruise-manager and kruise-daemon (static binaries, built offline with umoci), pushed to the testbed's registry
	hack/image/build.sh

testbed-up: ## start the local control plane + kwok nodes (NODES=3) + real nodes (REAL_NODES=1); builds binaries on first use
	hack/testbed/testbed.sh up --nodes $(or $(NODES),3) --real-nodes $(or $(REAL_NODES),1)

testbed-down: ## stop the testbed (WIPE=1 also deletes its data)
	hack/testbed/testbed.sh down $(if $(WIPE),--wipe,)

testbed-status: ## show testbed processes, memory and nodes
	hack/testbed/testbed.sh status

testbed-build: ## build (or reuse cached) etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, kubelet, crictl, pause
	hack/testbed/build.sh

protoc: ## make sure protoc is installed (kruise-daemon's CRI client is generated at build time; installs Debian's protobuf-compiler as root)
	hack/tools/ensure-protoc.sh

crds: protoc ## regenerate config/crd/bases, config/webhook, config/rbac and the chart's generated templates from the Rust code
	cargo run -q -p kruise-api --bin kruise-crdgen -- config/crd/bases
	cargo run -q -p kruise-manager --bin kruise-webhookgen -- config/webhook
	cargo run -q -p kruise-manager --bin kruise-rbacgen -- config/rbac
	cargo run -q -p kruise-daemon --bin kruise-daemon-rbacgen -- config/rbac
	cargo run -q -p kruise-manager --bin kruise-chartgen -- charts/kruise-rs

crds-check: protoc ## fail if config/crd/bases, config/webhook, config/rbac or the chart's generated templates are stale
	cargo run -q -p kruise-api --bin kruise-crdgen -- --check
	cargo run -q -p kruise-manager --bin kruise-webhookgen -- --check
	cargo run -q -p kruise-manager --bin kruise-rbacgen -- --check
	cargo run -q -p kruise-daemon --bin kruise-daemon-rbacgen -- --check
	cargo run -q -p kruise-manager --bin kruise-chartgen -- --check

chart-check: ## helm lint charts/kruise-rs and compare its helm template output with charts/kruise-rs/ci/golden (Helm built from Go modules into the testbed cache on first use)
	hack/chart/check.sh

chart-golden: ## rewrite charts/kruise-rs/ci/golden from the chart (review the diff)
	hack/chart/check.sh --update

golden: ## regenerate kruise-engines' Go-derived test vectors with Go (OpenKruise v1.9.0, k8s.io/api v0.32.10; see hack/golden/README.md)
	cd hack/golden && GOTOOLCHAIN=local go run . -out ../..

golden-check: ## fail if those vectors differ from a fresh regeneration in a temp dir (needs the Go module proxy; not part of 'make test')
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	(cd hack/golden && GOTOOLCHAIN=local go run . -out "$$tmp") && \
	status=0 && for f in $$(cd "$$tmp" && find . -type f | sort); do \
		if diff -u "$$f" "$$tmp/$$f" >/dev/null; then echo "up to date: $$f"; \
		else echo "STALE: $$f (run 'make golden')"; diff -u "$$f" "$$tmp/$$f" | head -20; status=1; fi; \
	done && exit $$status

fmt: ## format the Rust code
	cargo fmt --all

lint: protoc ## clippy with warnings as errors
	cargo clippy --workspace --all-targets -- -D warnings
