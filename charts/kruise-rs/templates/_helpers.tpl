{{- /*
Helpers of the kruise-rs chart. The data they read (per controller CRDs, webhooks and RBAC rules,
the webhooks, the feature gates) is in _generated.tpl, written by `make crds` (kruise-chartgen).
Helpers answering a yes/no question return "true" or "".
*/ -}}

{{- /* Labels of every object the chart renders (the CRDs excepted). */ -}}
{{- define "kruise-rs.labels" -}}
app.kubernetes.io/name: kruise-rs
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- /* The words of kruiseRs.controllers (a list, or one comma-separated string), as JSON; none: "*". */ -}}
{{- define "kruise-rs.controllerWords" -}}
{{- $spec := .Values.kruiseRs.controllers | default (list "*") -}}
{{- if kindIs "string" $spec }}{{ $spec = list $spec }}{{ end -}}
{{- $words := list -}}
{{- range $spec -}}
  {{- range splitList "," (toString .) -}}
    {{- $w := trim . -}}
    {{- if $w }}{{ $words = append $words $w }}{{ end -}}
  {{- end -}}
{{- end -}}
{{- if not $words }}{{ $words = list "*" }}{{ end -}}
{{- toJson $words -}}
{{- end -}}

{{- /* (list $ NAME): whether controller NAME runs (kube-controller-manager semantics, as
kruise-manager's --controllers: "-NAME" disables, else "NAME" or "*" enables). */ -}}
{{- define "kruise-rs.controllerEnabled" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $words := include "kruise-rs.controllerWords" $ctx | fromJsonArray -}}
{{- if not (has (printf "-%s" $name) $words) -}}
  {{- if or (has $name $words) (has "*" $words) }}true{{ end -}}
{{- end -}}
{{- end -}}

{{- /* (list $ CRD): whether CRD (<plural>.<group>) is rendered: crds.managed, and an enabled
controller needs it or - for a CRD no controller needs - kruiseRs.controllers contains "*". */ -}}
{{- define "kruise-rs.crdEnabled" -}}
{{- $ctx := index . 0 -}}
{{- $crd := index . 1 -}}
{{- if $ctx.Values.crds.managed -}}
  {{- $claimed := false -}}
  {{- $needed := false -}}
  {{- range $name, $c := include "kruise-rs.gen.controllers" $ctx | fromYaml -}}
    {{- if has $crd $c.crds -}}
      {{- $claimed = true -}}
      {{- if include "kruise-rs.controllerEnabled" (list $ctx $name) }}{{ $needed = true }}{{ end -}}
    {{- end -}}
  {{- end -}}
  {{- $all := has "*" (include "kruise-rs.controllerWords" $ctx | fromJsonArray) -}}
  {{- if or $needed (and (not $claimed) $all) }}true{{ end -}}
{{- end -}}
{{- end -}}

{{- /* featureGates ("A=true,B=false") as a JSON object of booleans. */ -}}
{{- define "kruise-rs.featureGates" -}}
{{- $gates := dict -}}
{{- range splitList "," (toString (.Values.featureGates | default "")) -}}
  {{- $item := trim . -}}
  {{- if $item -}}
    {{- $kv := splitList "=" $item -}}
    {{- if ne (len $kv) 2 }}{{ fail (printf "featureGates: %q is not Name=true|false" $item) }}{{ end -}}
    {{- $v := lower (trim (index $kv 1)) -}}
    {{- if not (has $v (list "1" "t" "true" "0" "f" "false")) }}{{ fail (printf "featureGates: %q is not a boolean" $item) }}{{ end -}}
    {{- $_ := set $gates (trim (index $kv 0)) (has $v (list "1" "t" "true")) -}}
  {{- end -}}
{{- end -}}
{{- toJson $gates -}}
{{- end -}}

{{- /* (list $ GATE): whether feature gate GATE is on: its value in featureGates, else
AllAlpha/AllBeta for its maturity, else its default. */ -}}
{{- define "kruise-rs.gateEnabled" -}}
{{- $ctx := index . 0 -}}
{{- $gate := index . 1 -}}
{{- $info := get (include "kruise-rs.gen.gates" $ctx | fromYaml) $gate -}}
{{- $set := include "kruise-rs.featureGates" $ctx | fromJson -}}
{{- $on := $info.default -}}
{{- $all := printf "All%s" $info.preRelease -}}
{{- if hasKey $set $all }}{{ $on = get $set $all }}{{ end -}}
{{- if hasKey $set $gate }}{{ $on = get $set $gate }}{{ end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{- /* (list $ WEBHOOK): whether an admission webhook is registered: an enabled controller needs
it and the feature gate serving it (if any) is on. */ -}}
{{- define "kruise-rs.webhookEnabled" -}}
{{- $ctx := index . 0 -}}
{{- $hook := index . 1 -}}
{{- $needed := has $hook (include "kruise-rs.gen.alwaysServed" $ctx | fromYaml).webhooks -}}
{{- range $name, $c := include "kruise-rs.gen.controllers" $ctx | fromYaml -}}
  {{- if and (has $hook $c.webhooks) (include "kruise-rs.controllerEnabled" (list $ctx $name)) }}{{ $needed = true }}{{ end -}}
{{- end -}}
{{- $gate := get (include "kruise-rs.gen.webhookGates" $ctx | fromYaml) $hook -}}
{{- if and $needed (or (not $gate) (include "kruise-rs.gateEnabled" (list $ctx $gate))) }}true{{ end -}}
{{- end -}}

{{- /* A list of PolicyRules merged as kruise-rs' generators merge them (one rule per API group
and verb set, resources and verbs sorted), as YAML. */ -}}
{{- define "kruise-rs.mergeRules" -}}
{{- $verbsOf := dict -}}
{{- range $r := . -}}
  {{- range $g := $r.apiGroups -}}
    {{- range $res := $r.resources -}}
      {{- $k := printf "%s %s" $g $res -}}
      {{- $_ := set $verbsOf $k (concat (get $verbsOf $k | default (list)) $r.verbs) -}}
    {{- end -}}
  {{- end -}}
{{- end -}}
{{- $byVerbs := dict -}}
{{- range $k, $verbs := $verbsOf -}}
  {{- $parts := splitList " " $k -}}
  {{- $vs := $verbs | uniq | sortAlpha -}}
  {{- $key := printf "%s %s" (index $parts 0) (join " " $vs) -}}
  {{- $rule := get $byVerbs $key | default (dict "apiGroups" (list (index $parts 0)) "resources" (list) "verbs" $vs) -}}
  {{- $_ := set $rule "resources" (append $rule.resources (index $parts 1)) -}}
  {{- $_ := set $byVerbs $key $rule -}}
{{- end -}}
{{- $rules := list -}}
{{- range $key, $rule := $byVerbs }}{{ $rules = append $rules $rule }}{{ end -}}
{{- toYaml $rules -}}
{{- end -}}

{{- /* The manager's rules: platform and webhook server, plus those of every enabled controller. */ -}}
{{- define "kruise-rs.managerRules" -}}
{{- $ctx := . -}}
{{- $rules := (include "kruise-rs.gen.managerRules" . | fromYaml).rules -}}
{{- range $name, $c := include "kruise-rs.gen.controllers" . | fromYaml -}}
  {{- if include "kruise-rs.controllerEnabled" (list $ctx $name) }}{{ $rules = concat $rules $c.rules }}{{ end -}}
{{- end -}}
{{- include "kruise-rs.mergeRules" $rules -}}
{{- end -}}

{{- /* Fails on values kruise-manager or kruise-daemon would refuse at start-up. */ -}}
{{- define "kruise-rs.validate" -}}
{{- $known := keys (include "kruise-rs.gen.controllers" . | fromYaml) | sortAlpha -}}
{{- range include "kruise-rs.controllerWords" . | fromJsonArray -}}
  {{- $name := trimPrefix "-" . -}}
  {{- if not (or (eq $name "*") (has $name $known)) -}}
    {{- fail (printf "kruiseRs.controllers: %q is not a controller (known: %s)" $name (join ", " $known)) -}}
  {{- end -}}
{{- end -}}
{{- $gates := include "kruise-rs.gen.gates" . | fromYaml -}}
{{- range $g, $_ := include "kruise-rs.featureGates" . | fromJson -}}
  {{- if not (or (hasKey $gates $g) (has $g (list "AllAlpha" "AllBeta"))) -}}
    {{- fail (printf "featureGates: unknown feature gate %q" $g) -}}
  {{- end -}}
{{- end -}}
{{- if not (has .Values.kruiseRs.podWebhookScope (list "needed" "all")) -}}
  {{- fail (printf "kruiseRs.podWebhookScope: %q is not needed or all" .Values.kruiseRs.podWebhookScope) -}}
{{- end -}}
{{- $hooks := list -}}
{{- range $kind, $list := include "kruise-rs.gen.webhooks" . | fromYaml }}{{ range $list }}{{ $hooks = append $hooks .name }}{{ end }}{{ end -}}
{{- range $name, $policy := .Values.kruiseRs.webhookFailurePolicy -}}
  {{- if not (has $name $hooks) }}{{ fail (printf "kruiseRs.webhookFailurePolicy: %q is not a webhook (known: %s)" $name (join ", " $hooks)) }}{{ end -}}
  {{- if not (has $policy (list "Fail" "Ignore")) }}{{ fail (printf "kruiseRs.webhookFailurePolicy.%s: %q is not Fail or Ignore" $name $policy) }}{{ end -}}
{{- end -}}
{{- $timeout := .Values.webhookConfiguration.timeoutSeconds | int -}}
{{- if or (lt $timeout 1) (gt $timeout 30) -}}
  {{- fail (printf "webhookConfiguration.timeoutSeconds: %v is not within 1-30" .Values.webhookConfiguration.timeoutSeconds) -}}
{{- end -}}
{{- if not (has (.Values.manager.loggingFormat | default "" | toString) (list "" "text" "json")) -}}
  {{- fail (printf "manager.loggingFormat: %q is not text or json" .Values.manager.loggingFormat) -}}
{{- end -}}
{{- end -}}

{{- /* kruise-manager's arguments, one per line as a YAML list. */ -}}
{{- define "kruise-rs.managerArgs" -}}
{{- $v := .Values -}}
{{- $args := list
  "--enable-leader-election=true"
  (printf "--leader-election-namespace=%s" $v.installation.namespace)
  (printf "--metrics-addr=:%d" ($v.manager.metrics.port | int))
  (printf "--health-probe-addr=:%d" ($v.manager.healthProbe.port | int))
  (printf "--webhook-port=%d" ($v.manager.webhook.port | int))
  (printf "--webhook-timeout-seconds=%d" ($v.webhookConfiguration.timeoutSeconds | int))
  (printf "--v=%d" ($v.manager.log.level | int))
-}}
{{- with $v.featureGates }}{{ $args = append $args (printf "--feature-gates=%s" .) }}{{ end -}}
{{- if ne (toString $v.manager.resyncPeriod) "" }}{{ $args = append $args (printf "--sync-period=%v" $v.manager.resyncPeriod) }}{{ end -}}
{{- with $v.manager.loggingFormat }}{{ $args = append $args (printf "--log-format=%s" .) }}{{ end -}}
{{- if $v.externalCerts.annotations }}{{ $args = append $args "--webhook-external-certs=true" }}{{ end -}}
{{- $args = append $args (printf "--controllers=%s" (join "," (include "kruise-rs.controllerWords" . | fromJsonArray))) -}}
{{- $args = append $args (printf "--pod-webhook-scope=%s" $v.kruiseRs.podWebhookScope) -}}
{{- $policies := list -}}
{{- range $name, $policy := $v.kruiseRs.webhookFailurePolicy }}{{ $policies = append $policies (printf "%s=%s" $name $policy) }}{{ end -}}
{{- with $policies }}{{ $args = append $args (printf "--webhook-failure-policy=%s" (join "," .)) }}{{ end -}}
{{- if not (kindIs "invalid" $v.kruiseRs.controllerNice) }}{{ $args = append $args (printf "--controller-nice=%d" ($v.kruiseRs.controllerNice | int)) }}{{ end -}}
{{- if not (kindIs "invalid" $v.kruiseRs.restConfigQps) }}{{ $args = append $args (printf "--rest-config-qps=%d" ($v.kruiseRs.restConfigQps | int)) }}{{ end -}}
{{- if not (kindIs "invalid" $v.kruiseRs.restConfigBurst) }}{{ $args = append $args (printf "--rest-config-burst=%d" ($v.kruiseRs.restConfigBurst | int)) }}{{ end -}}
{{- range $v.manager.extraArgs }}{{ $args = append $args (toString .) }}{{ end -}}
{{- range $args }}
- {{ . | quote }}
{{- end -}}
{{- end -}}

{{- /* kruise-daemon's arguments, one per line as a YAML list. */ -}}
{{- define "kruise-rs.daemonArgs" -}}
{{- $v := .Values -}}
{{- $args := list
  (printf "--addr=:%d" ($v.daemon.port | int))
  "--var-run-path=/hostvarrun"
  (printf "--v=%d" ($v.daemon.log.level | int))
-}}
{{- with $v.daemon.socketFile }}{{ $args = append $args (printf "--socket-file=%s" .) }}{{ end -}}
{{- with $v.featureGates }}{{ $args = append $args (printf "--feature-gates=%s" .) }}{{ end -}}
{{- range $v.daemon.extraArgs }}{{ $args = append $args (toString .) }}{{ end -}}
{{- range $args }}
- {{ . | quote }}
{{- end -}}
{{- end -}}

{{- define "kruise-rs.managerImage" -}}
{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kruise-rs.daemonImage" -}}
{{ .Values.daemon.image.repository }}:{{ .Values.daemon.image.tag | default .Chart.AppVersion }}
{{- end -}}
