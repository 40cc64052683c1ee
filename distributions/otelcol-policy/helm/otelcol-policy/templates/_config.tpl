{{/* The collector config: the mode's default config with .Values.config merged over it (mustMergeOverwrite, as
the OpenTelemetry Collector chart merges its config). The defaults are those of
distributions/otelcol-policy/kubernetes/{deployment,daemonset}/configmap.yaml, whose comments explain them; a
test compares the rendered config with them. */}}
{{- define "otelcol-policy.config" -}}
{{- $workload := ternary "reports" "decisions" (eq (include "otelcol-policy.reportWatcher" .) "true") }}
{{- $defaults := include (printf "otelcol-policy.%sConfig" $workload) . | fromYaml }}
{{- $defaults = mustMergeOverwrite $defaults (include "otelcol-policy.commonConfig" . | fromYaml) }}
{{- $config := mustMergeOverwrite $defaults (deepCopy .Values.config) }}
{{- toYaml $config }}
{{- end }}

{{/* What both workloads have: the self-metrics on all interfaces, for the PodMonitor; the policy_metrics
connector's metrics pipeline (the logs pipelines add policy_metrics to their exporters) for the report watcher
always, for the decision receiver with the scrape endpoint or prometheusRemoteWrite.endpoint. The report
watcher's metrics go to the remote write endpoint when it is set, else to the OTLP endpoint; with the scrape
endpoint (otelcol-policy.prometheusScrape), every workload's are on the policy-metrics port too. No persistent queue for the remote
write: the exporter has no sending_queue, only its in-memory remote_write_queue (at v0.165.1 a sending_queue
block is refused: "has invalid keys"); none is needed, as every emission carries each series' current value
(gauges, and cumulative decision sums), so the next one supersedes what a restart lost. */}}
{{- define "otelcol-policy.commonConfig" -}}
{{- $reports := eq (include "otelcol-policy.reportWatcher" .) "true" }}
{{- $exporters := compact (list
  (ternary "prometheus_remote_write" (ternary "otlp_http" "" $reports) (ne .Values.prometheusRemoteWrite.endpoint ""))
  (ternary "prometheus" "" (eq (include "otelcol-policy.prometheusScrape" .) "true"))) }}
{{- if eq (include "otelcol-policy.policyMetrics" .) "true" }}
connectors:
  policy_metrics:
    # Next to the state of what feeds it, so that after a restart the gauges agree with a receiver that sends
    # only what changed.
    storage: {{ include "otelcol-policy.stateStorage" . }}
    {{- if and $reports .Values.leaderElection.enabled }}
    k8s_leader_elector: k8s_leader_elector
    {{- end }}
    # What the shipped dashboards filter on (docs/prometheus.md#dashboards-and-alerts).
    results:
      labels: [k8s.cluster.name, policy.source, policy.name, policy.resource.namespace, policy.severity]
    {{- if not $reports }}
    decisions:
      labels: [k8s.cluster.name, policy.source, policy.name, policy.result, policy.decision.action]
    {{- end }}
{{- end }}
{{- if or .Values.prometheusRemoteWrite.endpoint (eq (include "otelcol-policy.prometheusScrape" .) "true") }}
exporters:
{{- end }}
{{- if eq (include "otelcol-policy.prometheusScrape" .) "true" }}
  # The names and labels prometheus_remote_write writes: the cluster, a resource attribute, as the label
  # k8s_cluster_name; suffixes as today (policy_decisions_total). Prometheus adds job and instance.
  prometheus:
    endpoint: 0.0.0.0:{{ .Values.ports.policyMetrics.containerPort }}
    resource_constant_labels:
      included: [k8s.cluster.name]
    translation_strategy: UnderscoreEscapingWithSuffixes
    # A series policy_metrics no longer sends leaves /metrics after three emissions (interval 30s), not the
    # exporter's default 5 minutes: a replica that lost the lease while running stops serving the series the
    # new leader serves now (Prometheus sums both meanwhile).
    metric_expiration: 90s
{{- end }}
{{- if .Values.prometheusRemoteWrite.endpoint }}
  prometheus_remote_write:
    http:
      endpoint: {{ .Values.prometheusRemoteWrite.endpoint | quote }}
    resource_constant_labels:
      included: [k8s.cluster.name]
    translation_strategy: UnderscoreEscapingWithSuffixes
    {{- if eq .Values.mode "daemonset" }}
    # Every node's collector writes its own decision counters: without a label of its own they would be one
    # series written by many.
    external_labels:
      k8s_node_name: ${env:K8S_NODE_NAME}
    {{- end }}
{{- end }}
service:
  {{- if eq (include "otelcol-policy.policyMetrics" .) "true" }}
  pipelines:
    metrics:
      receivers: [policy_metrics]
      exporters: [{{ join ", " $exporters }}]
  {{- end }}
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 0.0.0.0
                port: {{ .Values.ports.metrics.containerPort }}
{{- end }}

{{/* The report watcher: k8s_reports, policy_aggregate and policy_metrics, their state on the persistence volume,
the sending queue on the pod's own volume (emptyDir, or a claim per replica in mode statefulset). With leader
election only the leader watches, aggregates and counts, each from the state the previous leader left. */}}
{{- define "otelcol-policy.reportsConfig" -}}
extensions:
  health_check:
    endpoint: 0.0.0.0:{{ .Values.ports.health.containerPort }}
  {{- if .Values.leaderElection.enabled }}
  k8s_leader_elector:
    auth_type: serviceAccount
    lease_name: {{ include "otelcol-policy.leaseName" . }}
    lease_namespace: {{ .Release.Namespace }}
  {{- end }}
  {{- if eq (include "otelcol-policy.k8sEvents" .) "true" }}
  k8s_events:
    auth_type: serviceAccount
  {{- end }}
  # The state of k8s_reports, policy_aggregate and policy_metrics, opened by the leader only.
  file_storage/shared:
    directory: /var/lib/otelcol-policy/shared
    create_directory: true
    timeout: 10s
  # The exporter's persistent sending queue: every replica opens its own at start.
  file_storage/queue:
    directory: /var/lib/otelcol-policy/queue
    create_directory: true
receivers:
  k8s_reports:
    auth_type: serviceAccount
    cluster_name: ${env:CLUSTER_NAME}
    storage: file_storage/shared
    {{- if .Values.leaderElection.enabled }}
    k8s_leader_elector: k8s_leader_elector
    {{- end }}
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  k8s_metadata_strip:
  policy_aggregate:
    storage: file_storage/shared
    {{- if .Values.leaderElection.enabled }}
    k8s_leader_elector: k8s_leader_elector
    {{- end }}
exporters:
  otlp_http:
    endpoint: ${env:OTLP_ENDPOINT}
    sending_queue:
      storage: file_storage/queue
      batch:
        flush_timeout: 1s
        min_size: 1000
service:
  extensions:
    - health_check
    {{- if .Values.leaderElection.enabled }}
    - k8s_leader_elector
    {{- end }}
    {{- if eq (include "otelcol-policy.k8sEvents" .) "true" }}
    - k8s_events
    {{- end }}
    - file_storage/shared
    - file_storage/queue
  pipelines:
    logs:
      receivers: [k8s_reports]
      processors: [memory_limiter, k8s_metadata_strip, policy_aggregate]
      exporters: [otlp_http, policy_metrics]
{{- end }}

{{/* The decision-stream receiver: OPA uploads with the bearer token of the Secret, NDJSON on the host socket,
the sending queue in a host path. */}}
{{- define "otelcol-policy.decisionsConfig" -}}
extensions:
  health_check:
    endpoint: 0.0.0.0:{{ .Values.ports.health.containerPort }}
  file_storage:
    directory: /var/lib/otelcol-policy-node/queue
    create_directory: true
  bearertokenauth/opa:
    filename: /var/run/secrets/otelcol-policy/opa-token/token
    retry_on_failure:
      enabled: true
      interval: 1s
      max_retries: 30
    wait_for_token_file: true
  {{- if eq (include "otelcol-policy.k8sEvents" .) "true" }}
  k8s_events:
    auth_type: serviceAccount
  {{- end }}
receivers:
  decision_logs:
    cluster_name: ${env:CLUSTER_NAME}
    opa:
      endpoint: 0.0.0.0:{{ .Values.ports.opa.containerPort }}
      auth:
        authenticator: bearertokenauth/opa
    ndjson:
      - transport: unix
        endpoint: /var/run/otelcol-policy/decisions.sock
        socket_mode: "0660"
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  k8s_metadata_strip:
exporters:
  otlp_http:
    endpoint: ${env:OTLP_ENDPOINT}
    sending_queue:
      storage: file_storage
      batch:
        flush_timeout: 1s
        min_size: 1000
service:
  extensions:
    - health_check
    - file_storage
    - bearertokenauth/opa
    {{- if eq (include "otelcol-policy.k8sEvents" .) "true" }}
    - k8s_events
    {{- end }}
  pipelines:
    logs:
      receivers: [decision_logs]
      processors: [memory_limiter, k8s_metadata_strip]
      exporters: [otlp_http{{ if eq (include "otelcol-policy.policyMetrics" .) "true" }}, policy_metrics{{ end }}]
{{- end }}
