{{/* The collector container, the same in both modes except for its ports and volume mounts. */}}
{{- define "otelcol-policy.container" -}}
- name: otelcol-policy
  image: {{ include "otelcol-policy.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  # The image's ENTRYPOINT with its default config path, where the ConfigMap is mounted.
  args: ["--config=/etc/otelcol-policy/config.yaml"]
  envFrom:
    - configMapRef:
        name: {{ include "otelcol-policy.fullname" . }}-settings
    {{- with .Values.extraEnvsFrom }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  env:
    - name: GOMEMLIMIT
      value: {{ include "otelcol-policy.goMemLimit" . }}
    {{- if eq (include "otelcol-policy.k8sEvents" .) "true" }}
    # The Pod the k8s_events extension records Events on.
    - name: K8S_POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: K8S_POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    - name: K8S_POD_UID
      valueFrom:
        fieldRef:
          fieldPath: metadata.uid
    {{- end }}
    {{- if and (eq .Values.mode "daemonset") .Values.prometheusRemoteWrite.endpoint }}
    # The remote-written series' k8s_node_name label.
    - name: K8S_NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    {{- end }}
    {{- with .Values.extraEnvs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- if eq .Values.mode "daemonset" }}
    - name: opa
      containerPort: {{ .Values.ports.opa.containerPort }}
    {{- end }}
    - name: health
      containerPort: {{ .Values.ports.health.containerPort }}
    - name: metrics
      containerPort: {{ .Values.ports.metrics.containerPort }}
    {{- if eq (include "otelcol-policy.prometheusScrape" .) "true" }}
    - name: policy-metrics
      containerPort: {{ .Values.ports.policyMetrics.containerPort }}
    {{- end }}
  livenessProbe:
    httpGet:
      path: /
      port: health
    initialDelaySeconds: 5
    periodSeconds: 10
    failureThreshold: 6
  readinessProbe:
    httpGet:
      path: /
      port: health
    periodSeconds: 5
  resources:
    {{- include "otelcol-policy.resources" . | trim | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: config
      mountPath: /etc/otelcol-policy
      readOnly: true
    {{- if eq (include "otelcol-policy.reportWatcher" .) "true" }}
    - name: state
      mountPath: /var/lib/otelcol-policy/shared
    - name: queue
      mountPath: /var/lib/otelcol-policy/queue
    {{- else }}
    - name: socket-dir
      mountPath: /var/run/otelcol-policy
    - name: queue
      mountPath: /var/lib/otelcol-policy-node/queue
    - name: opa-token
      mountPath: /var/run/secrets/otelcol-policy/opa-token
      readOnly: true
    {{- end }}
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* The report watcher's volumes but the queue: the config and the state. */}}
{{- define "otelcol-policy.reportVolumes" -}}
- name: config
  configMap:
    name: {{ include "otelcol-policy.fullname" . }}-config
- name: state
  {{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ .Values.persistence.existingClaim | default (printf "%s-state" (include "otelcol-policy.fullname" .)) }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}

{{/* Pod spec fields common to both modes, after the mode's own. */}}
{{- define "otelcol-policy.podCommon" -}}
serviceAccountName: {{ include "otelcol-policy.serviceAccountName" . }}
automountServiceAccountToken: {{ include "otelcol-policy.automountToken" . }}
terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
securityContext:
  {{- include "otelcol-policy.podSecurityContext" . | trim | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with include "otelcol-policy.affinity" . | trim }}
affinity:
  {{- . | nindent 2 }}
{{- end }}
{{- with include "otelcol-policy.tolerations" . | trim }}
tolerations:
  {{- . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Pod template metadata: the selector labels and the config checksum, so that a config change rolls the pods. */}}
{{- define "otelcol-policy.podMetadata" -}}
metadata:
  labels:
    {{- include "otelcol-policy.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "otelcol-policy.config" . | sha256sum }}
    checksum/settings: {{ toJson .Values.settings | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
