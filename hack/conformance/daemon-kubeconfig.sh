# Sourced by hack/conformance/conformance.sh and hack/bench/daemon-footprint.sh (callers define
# `die`; kubectl talks to the testbed).
#
# daemon_kubeconfig BINDING OUT: ServiceAccount kruise-system/kruise-daemon bound by
# ClusterRoleBinding BINDING to ClusterRole kruise-daemon-role only (the daemon's identity in a
# cluster), and kubeconfig OUT authenticating with a 24-hour token of it. Returns once the API
# server authorizes with the binding (it does so from an informer of bindings).
daemon_kubeconfig() {
  local binding=$1 out=$2 token server ca
  kubectl get clusterrole kruise-daemon-role >/dev/null 2>&1 || die "ClusterRole kruise-daemon-role is missing"
  kubectl apply -f - >/dev/null <<YAML || die "binding ServiceAccount kruise-system/kruise-daemon failed"
apiVersion: v1
kind: ServiceAccount
metadata: {name: kruise-daemon, namespace: kruise-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kruise-daemon-role}
subjects: [{kind: ServiceAccount, name: kruise-daemon, namespace: kruise-system}]
YAML
  token=$(kubectl create token kruise-daemon -n kruise-system --duration 24h) || die "kubectl create token failed"
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')
  (umask 077; cat > "$out" <<KC
apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster: {server: "$server", certificate-authority: "$ca"}
users:
- name: kruise-daemon
  user: {token: "$token"}
contexts:
- name: kruise-daemon
  context: {cluster: testbed, user: kruise-daemon}
current-context: kruise-daemon
KC
  )
  local _
  for _ in $(seq 60); do
    [ "$(kubectl --kubeconfig "$out" auth can-i watch pods --all-namespaces 2>/dev/null)" = yes ] && return 0
    sleep 1
  done
  die "ServiceAccount kruise-system/kruise-daemon still cannot watch pods after 60 s"
}
