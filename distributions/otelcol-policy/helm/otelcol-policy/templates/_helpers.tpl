{{/* Names and labels. fullname is the release name when it contains the chart name (release "otelcol-policy"
gives the object names of distributions/otelcol-policy/kubernetes). */}}
{{- define "otelcol-policy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "otelcol-policy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether the release runs the report watcher (k8s_reports): as a Deployment, or as a StatefulSet whose
replicas each have their own sending queue volume (values-ha.yaml). */}}
{{- define "otelcol-policy.reportWatcher" -}}
{{- has .Values.mode (list "deployment" "statefulset") }}
{{- end }}

{{/* The component label of the workload: what the release runs. */}}
{{- define "otelcol-policy.component" -}}
{{- if eq (include "otelcol-policy.reportWatcher" .) "true" }}reports{{ else }}decisions{{ end }}
{{- end }}

{{- define "otelcol-policy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "otelcol-policy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "otelcol-policy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "otelcol-policy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ include "otelcol-policy.component" . }}
{{- end }}

{{- define "otelcol-policy.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "otelcol-policy.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Whether the pods get a service account token: k8s_reports and k8s_events call the API server. */}}
{{- define "otelcol-policy.automountToken" -}}
{{- if kindIs "bool" .Values.serviceAccount.automountServiceAccountToken }}
{{- .Values.serviceAccount.automountServiceAccountToken }}
{{- else }}
{{- or (eq (include "otelcol-policy.reportWatcher" .) "true") (eq (include "otelcol-policy.k8sEvents" .) "true") }}
{{- end }}
{{- end }}

{{/* Whether the k8s_events extension runs: k8sEvents.enabled, or when null, for the report watcher (the daemonset
has no API access by default). */}}
{{- define "otelcol-policy.k8sEvents" -}}
{{- if kindIs "bool" .Values.k8sEvents.enabled }}
{{- .Values.k8sEvents.enabled }}
{{- else }}
{{- include "otelcol-policy.reportWatcher" . }}
{{- end }}
{{- end }}

{{/* Whether the pods serve policy_metrics' series on the policy-metrics port: prometheusScrape.enabled, or when
null, unless they are remote-written (a Prometheus fed both ways would hold every series twice). */}}
{{- define "otelcol-policy.prometheusScrape" -}}
{{- if kindIs "bool" .Values.prometheusScrape.enabled }}
{{- .Values.prometheusScrape.enabled }}
{{- else }}
{{- eq .Values.prometheusRemoteWrite.endpoint "" }}
{{- end }}
{{- end }}

{{/* Whether the release runs the policy_metrics connector: the report watcher always; the daemonset when its
series go somewhere Prometheus reads them (the scrape endpoint, prometheusRemoteWrite.endpoint). */}}
{{- define "otelcol-policy.policyMetrics" -}}
{{- or (eq (include "otelcol-policy.reportWatcher" .) "true") (eq (include "otelcol-policy.prometheusScrape" .) "true") (ne .Values.prometheusRemoteWrite.endpoint "") }}
{{- end }}

{{/* The file_storage that keeps state across restarts: the persistence volume (report watcher), the host path
(daemonset). */}}
{{- define "otelcol-policy.stateStorage" -}}
{{- if eq (include "otelcol-policy.reportWatcher" .) "true" }}file_storage/shared{{ else }}file_storage{{ end }}
{{- end }}

{{- define "otelcol-policy.leaseName" -}}
{{- default (printf "%s-reports" (include "otelcol-policy.fullname" .)) .Values.leaderElection.leaseName }}
{{- end }}

{{- define "otelcol-policy.tokenSecret" -}}
{{- default (printf "%s-opa-token" (include "otelcol-policy.fullname" .)) .Values.decisionLogs.tokenSecret }}
{{- end }}

{{- define "otelcol-policy.image" -}}
{{- include "otelcol-policy.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion) }}
{{- end }}

{{/* An image reference of {repository, tag, digest}: repository@digest when the digest is set (the schema
allows only sha256:<64 hex>), else repository:tag (defaultTag when tag is empty). */}}
{{- define "otelcol-policy.imageRef" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (.image.tag | default .defaultTag) }}
{{- end }}
{{- end }}

{{- define "otelcol-policy.validateValues" -}}
{{- if not (has .Values.mode (list "deployment" "statefulset" "daemonset")) }}
{{- fail (printf "mode must be deployment, statefulset or daemonset, not %q" .Values.mode) }}
{{- end }}
{{- if and (eq (include "otelcol-policy.reportWatcher" .) "true") (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: every replica would send every record (values-ha.yaml)" }}
{{- end }}
{{- if and .Values.podMonitor.enabled .Values.serviceMonitor.enabled }}
{{- fail "podMonitor.enabled and serviceMonitor.enabled: pick one, or Prometheus scrapes every pod twice" }}
{{- end }}
{{- $monitor := ternary "podMonitor.enabled" "serviceMonitor.enabled" .Values.podMonitor.enabled }}
{{- if and (or .Values.podMonitor.enabled .Values.serviceMonitor.enabled) .Values.networkPolicy.enabled (not .Values.networkPolicy.metricsFrom) }}
{{- fail (printf "%s needs networkPolicy.metricsFrom: the NetworkPolicy admits nobody to the metrics ports until it names your Prometheus' pods (or set networkPolicy.enabled=false)" $monitor) }}
{{- end }}
{{- end }}

{{/* The mode's defaults for values documented as "null: the mode's default". */}}
{{- define "otelcol-policy.resources" -}}
{{- if not (kindIs "invalid" .Values.resources) }}
{{- toYaml .Values.resources }}
{{- else if eq (include "otelcol-policy.reportWatcher" .) "true" }}
requests:
  cpu: 100m
  memory: 256Mi
limits:
  cpu: "1"
  memory: 512Mi
{{- else }}
requests:
  cpu: 50m
  memory: 128Mi
limits:
  cpu: "1"
  memory: 256Mi
{{- end }}
{{- end }}

{{/* GOMEMLIMIT: the value, or 25/32 of the memory limit (400MiB for 512Mi): the heap stays under it instead of
growing to twice the live heap. */}}
{{- define "otelcol-policy.goMemLimit" -}}
{{- if .Values.goMemLimit }}
{{- .Values.goMemLimit }}
{{- else }}
{{- $limit := dig "limits" "memory" "" (include "otelcol-policy.resources" . | fromYaml) | toString }}
{{- if regexMatch "^[0-9]+Mi$" $limit }}
{{- printf "%dMiB" (div (mul (trimSuffix "Mi" $limit | atoi) 25) 32) }}
{{- else if regexMatch "^[0-9]+Gi$" $limit }}
{{- printf "%dMiB" (div (mul (trimSuffix "Gi" $limit | atoi) 1024 25) 32) }}
{{- else }}
{{- fail (printf "goMemLimit: set it, or resources.limits.memory in Mi or Gi (it is %q)" $limit) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "otelcol-policy.podSecurityContext" -}}
{{- if not (kindIs "invalid" .Values.podSecurityContext) }}
{{- toYaml .Values.podSecurityContext }}
{{- else if eq (include "otelcol-policy.reportWatcher" .) "true" }}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
# Makes the volumes writable by the collector's group.
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- else }}
seccompProfile:
  type: RuntimeDefault
# The token file of the Secret volume is group 10001, mode 0440: readable by the collector only.
fsGroup: 10001
{{- end }}
{{- end }}

{{- define "otelcol-policy.affinity" -}}
{{- if not (kindIs "invalid" .Values.affinity) }}
{{- toYaml .Values.affinity }}
{{- else if eq (include "otelcol-policy.reportWatcher" .) "true" }}
# Replicas on different nodes when possible, so that losing a node leaves a replica to take over.
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "otelcol-policy.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end }}

{{/* The endpoints of the PodMonitor or ServiceMonitor (.monitor: its values): the self-metrics, and with
the scrape endpoint (otelcol-policy.prometheusScrape) the policy_metrics series. */}}
{{- define "otelcol-policy.scrapeEndpoints" -}}
{{- $monitor := .monitor }}
{{- range $port := compact (list "metrics" (ternary "policy-metrics" "" (eq (include "otelcol-policy.prometheusScrape" .root) "true"))) }}
- port: {{ $port }}
  path: /metrics
  {{- with $monitor.interval }}
  interval: {{ . }}
  {{- end }}
  {{- with $monitor.scrapeTimeout }}
  scrapeTimeout: {{ . }}
  {{- end }}
  {{- with $monitor.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $monitor.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "otelcol-policy.tolerations" -}}
{{- if not (kindIs "invalid" .Values.tolerations) }}
{{- toYaml .Values.tolerations }}
{{- else if eq .Values.mode "daemonset" }}
# Decisions are made on every node, control plane included.
- operator: Exists
  effect: NoSchedule
{{- end }}
{{- end }}
