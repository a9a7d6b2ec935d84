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

{{/* The Temporal connection (envconfig variables), the identity and the codec keys' file. */}}
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
- name: DO_IDENTITY
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- if .Values.codec.keysSecretName }}
- name: DO_CODEC_KEYS_FILE
  value: /etc/durable-operators/codec/{{ .Values.codec.key }}
{{- end }}
{{- end }}

{{- define "do.env" -}}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end }}

{{- define "do.codecMount" -}}
{{- if .Values.codec.keysSecretName }}
- name: codec-keys
  mountPath: /etc/durable-operators/codec
  readOnly: true
{{- end }}
{{- end }}

{{- define "do.codecVolume" -}}
{{- if .Values.codec.keysSecretName }}
- name: codec-keys
  secret:
    secretName: {{ .Values.codec.keysSecretName }}
    items:
      - key: {{ .Values.codec.key }}
        path: {{ .Values.codec.key }}
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

{{- define "do.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ['ALL']
seccompProfile:
  type: RuntimeDefault
{{- end }}
