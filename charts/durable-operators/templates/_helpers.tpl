{{/* The image of every role. */}}
{{- define "durable-operators.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels of a role's objects (as deploy/ has them, plus Helm's). */}}
{{- define "durable-operators.labels" -}}
{{ include "durable-operators.stableLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{/* The labels that do not change with the chart's version. */}}
{{- define "durable-operators.stableLabels" -}}
app.kubernetes.io/name: durable-operators
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: durable-operators
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/*
A role's Pod template metadata: podLabels and podAnnotations (global, then the role's), and the
stable labels — never helm.sh/chart, or a chart bump alone would roll every Pod.
*/}}
{{- define "durable-operators.podMetadata" -}}
{{- $labels := dict }}
{{- range $k, $v := mergeOverwrite (dict) (deepCopy (.root.Values.podLabels | default dict)) (deepCopy (.role.podLabels | default dict)) (include "durable-operators.stableLabels" . | fromYaml) }}
{{- $_ := set $labels $k (toString $v) }}
{{- end }}
labels: {{- toYaml $labels | nindent 2 }}
{{- $annotations := dict }}
{{- range $k, $v := mergeOverwrite (dict) (deepCopy (.root.Values.podAnnotations | default dict)) (deepCopy (.role.podAnnotations | default dict)) }}
{{- $_ := set $annotations $k (toString $v) }}
{{- end }}
{{- with $annotations }}
annotations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Where and how a role's Pods are scheduled: nodeSelector (global merged with the role's),
tolerations (both), affinity and priorityClassName (the role's, else the global), and the role's
topologySpreadConstraints, each selecting the role's Pods unless it says otherwise.
*/}}
{{- define "durable-operators.podScheduling" -}}
{{- $v := .root.Values }}
{{- with mergeOverwrite (dict) (deepCopy ($v.nodeSelector | default dict)) (deepCopy (.role.nodeSelector | default dict)) }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with concat ($v.tolerations | default list) (.role.tolerations | default list) }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .role.affinity | default $v.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .role.priorityClassName | default $v.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- $selector := include "durable-operators.selector" . | fromYaml }}
{{- $constraints := list }}
{{- range .role.topologySpreadConstraints }}
{{- $constraints = append $constraints (merge (deepCopy .) (dict "labelSelector" (dict "matchLabels" $selector))) }}
{{- end }}
{{- with $constraints }}
topologySpreadConstraints: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* extraEnv of every role, then the role's (EnvVar entries: name and value or valueFrom). */}}
{{- define "durable-operators.extraEnv" -}}
{{- with concat (.root.Values.extraEnv | default list) (.role.extraEnv | default list) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "durable-operators.extraEnvFrom" -}}
{{- with concat (.root.Values.extraEnvFrom | default list) (.role.extraEnvFrom | default list) }}
envFrom: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "durable-operators.extraVolumeMounts" -}}
{{- with concat (.root.Values.extraVolumeMounts | default list) (.role.extraVolumeMounts | default list) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "durable-operators.extraVolumes" -}}
{{- with concat (.root.Values.extraVolumes | default list) (.role.extraVolumes | default list) }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
A role's PodDisruptionBudget, while it runs two replicas or more (with one, a budget either blocks
every drain or allows everything). Unready Pods may always be evicted: a budget must not keep a
broken Pod on a node being drained.
*/}}
{{- define "durable-operators.podDisruptionBudget" -}}
{{- $pdb := .role.podDisruptionBudget | default dict }}
{{- if and $pdb.enabled (gt (int .role.replicas) 1) }}
{{- if and (not (kindIs "invalid" $pdb.minAvailable)) (not (kindIs "invalid" $pdb.maxUnavailable)) }}
{{- fail (printf "%s.podDisruptionBudget: set minAvailable or maxUnavailable, not both (unset the other with null)" .component) }}
{{- end }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: durable-operators-{{ .component }}
  labels: {{- include "durable-operators.labels" . | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $pdb.minAvailable) }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ required (printf "%s.podDisruptionBudget.minAvailable or .maxUnavailable" .component) $pdb.maxUnavailable }}
  {{- end }}
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels: {{- include "durable-operators.selector" . | nindent 6 }}
{{- end }}
{{- end }}

{{- define "durable-operators.selector" -}}
app.kubernetes.io/name: durable-operators
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
A file of the kustomize base (deploy/, linked as files/deploy), its namespace the release's: the
RBAC, the webhook configuration and the NetworkPolicies have one source.
*/}}
{{- define "durable-operators.fromDeploy" -}}
{{- $text := .root.Files.Get (printf "files/deploy/%s" .file) -}}
{{- if not $text }}{{ fail (printf "files/deploy/%s is missing from the chart" .file) }}{{ end -}}
{{- $ns := .root.Release.Namespace -}}
{{- $text | replace "namespace: durable-operators\n" (printf "namespace: %s\n" $ns) | replace "inject-ca-from: durable-operators/" (printf "inject-ca-from: %s/" $ns) | replace ".durable-operators.svc" (printf ".%s.svc" $ns) -}}
{{- end }}

{{/* The Temporal connection (envconfig variables), the payload keys' directory, the identity and tracing. */}}
{{- define "durable-operators.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- /* Credentials as files of optional Secrets, re-read while the role runs (docs/temporal-connection.md, Rotation). */}}
{{- if or .Values.temporal.apiKey.secretName .Values.temporal.tls.clientSecretName .Values.temporal.tls.serverCA.secretName }}
- name: DO_TEMPORAL_CREDENTIAL_FILES_OPTIONAL
  value: 'true'
{{- end }}
{{- if .Values.temporal.apiKey.secretName }}
- name: DO_TEMPORAL_API_KEY_FILE
  value: /etc/durable-operators/temporal-api-key/api-key
{{- end }}
{{- if .Values.temporal.tls.clientSecretName }}
- name: TEMPORAL_TLS_CLIENT_CERT_PATH
  value: /etc/durable-operators/temporal-tls/tls.crt
- name: TEMPORAL_TLS_CLIENT_KEY_PATH
  value: /etc/durable-operators/temporal-tls/tls.key
{{- end }}
{{- if .Values.temporal.tls.serverCA.secretName }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_PATH
  value: /etc/durable-operators/temporal-ca/ca.crt
{{- end }}
{{- with .Values.temporal.tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- range $k, $v := .Values.temporal.extraEnv }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- if .Values.payloadKeys.secretName }}
- name: DO_PAYLOAD_KEYS_DIR
  value: /etc/durable-operators/payload-keys
{{- with .Values.payloadKeys.encryptKeyId }}
- name: DO_PAYLOAD_KEY_ID
  value: {{ . | quote }}
{{- end }}
{{- end }}
- name: DO_IDENTITY
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- with .Values.tracing.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- range $k, $v := $.Values.tracing.extraEnv }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Worker Deployment Versioning of the roles that run Workers: the build ID is the image's tag. */}}
{{- define "durable-operators.versioningEnv" -}}
{{- if ne .Values.versioning.mode "off" }}
- name: DO_WORKER_VERSIONING
  value: {{ .Values.versioning.mode | quote }}
- name: DO_BUILD_ID
  value: {{ .Values.versioning.buildId | default (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- end }}
{{- end }}

{{- define "durable-operators.env" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end }}

{{/* The Temporal credentials' optional Secrets (durable-operators.temporalEnv names their files). */}}
{{- define "durable-operators.temporalCredentialsMounts" -}}
{{- if .Values.temporal.apiKey.secretName }}
- name: temporal-api-key
  mountPath: /etc/durable-operators/temporal-api-key
  readOnly: true
{{- end }}
{{- if .Values.temporal.tls.clientSecretName }}
- name: temporal-tls
  mountPath: /etc/durable-operators/temporal-tls
  readOnly: true
{{- end }}
{{- if .Values.temporal.tls.serverCA.secretName }}
- name: temporal-ca
  mountPath: /etc/durable-operators/temporal-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "durable-operators.temporalCredentialsVolumes" -}}
{{- with .Values.temporal.apiKey.secretName }}
- name: temporal-api-key
  secret:
    secretName: {{ . }}
    optional: true
    items:
      - key: {{ $.Values.temporal.apiKey.key }}
        path: api-key
    defaultMode: 288 # 0440
{{- end }}
{{- with .Values.temporal.tls.clientSecretName }}
- name: temporal-tls
  secret:
    secretName: {{ . }}
    optional: true
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
    defaultMode: 288 # 0440
{{- end }}
{{- with .Values.temporal.tls.serverCA.secretName }}
- name: temporal-ca
  secret:
    secretName: {{ . }}
    optional: true
    items:
      - key: {{ $.Values.temporal.tls.serverCA.key }}
        path: ca.crt
{{- end }}
{{- end }}

{{- define "durable-operators.payloadKeysMount" -}}
{{- if .Values.payloadKeys.secretName }}
- name: payload-keys
  mountPath: /etc/durable-operators/payload-keys
  readOnly: true
{{- end }}
{{- end }}

{{- define "durable-operators.payloadKeysVolume" -}}
{{- if .Values.payloadKeys.secretName }}
- name: payload-keys
  secret:
    secretName: {{ .Values.payloadKeys.secretName }}
    optional: true
    defaultMode: 288 # 0440
{{- end }}
{{- end }}

{{- define "durable-operators.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The roles that read the payload keys or Temporal credentials: their files are readable by this group only (0440). */}}
{{- define "durable-operators.podSecurityContextReadingKeys" -}}
{{ include "durable-operators.podSecurityContext" . }}
{{- if or .Values.payloadKeys.secretName .Values.temporal.apiKey.secretName .Values.temporal.tls.clientSecretName }}
fsGroup: 1000
{{- end }}
{{- end }}

{{- define "durable-operators.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ['ALL']
seccompProfile:
  type: RuntimeDefault
{{- end }}
