{{/* The collector config: the mode's default config with .Values.config merged over it (mustMergeOverwrite, as
the OpenTelemetry Collector chart merges its config). The defaults are those of
distributions/otelcol-policy/kubernetes/{deployment,daemonset}/configmap.yaml, whose comments explain them; a
test compares the rendered config with them. */}}
{{- define "otelcol-policy.config" -}}
{{- $defaults := include (printf "otelcol-policy.%sConfig" .Values.mode) . | fromYaml }}
{{- $config := mustMergeOverwrite $defaults (deepCopy .Values.config) }}
{{- toYaml $config }}
{{- end }}

{{/* The report watcher: k8s_reports, its state on the persistence volume, the sending queue on the pod's own
emptyDir. With leader election only the leader watches. */}}
{{- define "otelcol-policy.deploymentConfig" -}}
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
  # The receiver's state, opened by the leader only.
  file_storage/shared:
    directory: /var/lib/otelcol-policy/shared
    create_directory: true
    timeout: 10s
  # The exporter's persistent sending queue: every replica opens its own at start.
  file_storage/local:
    directory: /var/lib/otelcol-policy/local
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
exporters:
  otlp_http:
    endpoint: ${env:OTLP_ENDPOINT}
    sending_queue:
      storage: file_storage/local
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
    - file_storage/local
  pipelines:
    logs:
      receivers: [k8s_reports]
      processors: [memory_limiter, k8s_metadata_strip]
      exporters: [otlp_http]
{{- end }}

{{/* The decision-stream receiver: OPA uploads with the bearer token of the Secret, NDJSON on the host socket,
the sending queue in a host path. */}}
{{- define "otelcol-policy.daemonsetConfig" -}}
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
      exporters: [otlp_http]
{{- end }}
