{{/* The image of every role. */}}
{{- define "do.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* Labels of a role's objects (as deploy/ has them, plus Helm's). */}}
{{- define "do.labels" -}}
app.kubernetes.io/name: durable-operators
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: durable-operators
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{- define "do.selector" -}}
app.kubernetes.io/name: durable-operators
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
A file of the kustomize base (deploy/, linked as files/deploy), its namespace the release's: the
RBAC, the webhook configuration and the NetworkPolicies have one source.
*/}}
{{- define "do.fromDeploy" -}}
{{- $text := .root.Files.Get (printf "files/deploy/%s" .file) -}}
{{- if not $text }}{{ fail (printf "files/deploy/%s is missing from the chart" .file) }}{{ end -}}
{{- $ns := .root.Release.Namespace -}}
{{- $text | replace "namespace: durable-operators\n" (printf "namespace: %s\n" $ns) | replace "inject-ca-from: durable-operators/" (printf "inject-ca-from: %s/" $ns) | replace ".durable-operators.svc" (printf ".%s.svc" $ns) -}}
{{- end }}

{{/* The Temporal connection (envconfig variables), the payload keys' directory, the identity and tracing. */}}
{{- define "do.temporalEnv" -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
{{- with .Values.temporal.apiKey.secretName }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.temporal.apiKey.key }}
      optional: true
{{- end }}
{{- with .Values.temporal.tls.clientSecretName }}
- name: TEMPORAL_TLS_CLIENT_CERT_DATA
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: tls.crt
      optional: true
- name: TEMPORAL_TLS_CLIENT_KEY_DATA
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: tls.key
      optional: true
{{- end }}
{{- with .Values.temporal.tls.serverCA.secretName }}
- name: TEMPORAL_TLS_SERVER_CA_CERT_DATA
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.temporal.tls.serverCA.key }}
      optional: true
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

{{- define "do.env" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end }}

{{- define "do.payloadKeysMount" -}}
{{- if .Values.payloadKeys.secretName }}
- name: payload-keys
  mountPath: /etc/durable-operators/payload-keys
  readOnly: true
{{- end }}
{{- end }}

{{- define "do.payloadKeysVolume" -}}
{{- if .Values.payloadKeys.secretName }}
- name: payload-keys
  secret:
    secretName: {{ .Values.payloadKeys.secretName }}
    optional: true
    defaultMode: 288 # 0440
{{- end }}
{{- end }}

{{- define "do.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The roles that read the payload keys: their files are readable by this group only (0440). */}}
{{- define "do.podSecurityContextReadingKeys" -}}
{{ include "do.podSecurityContext" . }}
{{- if .Values.payloadKeys.secretName }}
fsGroup: 1000
{{- end }}
{{- end }}

{{- define "do.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ['ALL']
seccompProfile:
  type: RuntimeDefault
{{- end }}
