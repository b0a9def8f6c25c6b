{{/* The chart's logic lives here; each template renders one kind of object. */}}

{{- define "bioalchemy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "bioalchemy.fullname" -}}
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

{{- define "bioalchemy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "bioalchemy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "bioalchemy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bioalchemy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* A role's objects: name and labels. Called with (dict "root" $ "role" $role). */}}
{{- define "bioalchemy.roleName" -}}
{{- printf "%s-%s" (include "bioalchemy.fullname" .root) .role | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "bioalchemy.roleSelectorLabels" -}}
{{ include "bioalchemy.selectorLabels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "bioalchemy.roleLabels" -}}
{{ include "bioalchemy.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "bioalchemy.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The config's app: the prefix of every topic and consumer group on Kafka. */}}
{{- define "bioalchemy.app" -}}
{{- default "bioalchemy" .Values.config.app }}
{{- end }}

{{/* Required values: rendering fails with what to set. */}}
{{- define "bioalchemy.validate" -}}
{{- if not .Values.kafka.bootstrapServers }}
{{- fail "kafka.bootstrapServers is required: your Kafka's host:port[,host:port]" }}
{{- end }}
{{- if not .Values.clickhouse.url }}
{{- fail "clickhouse.url is required: http(s)://user@host:port/database" }}
{{- end }}
{{- if le (int .Values.terminationGracePeriodSeconds) 9 }}
{{- fail "terminationGracePeriodSeconds must be above the process's own stop bound (9 s)" }}
{{- end }}
{{- with .Values.kafka.sasl }}
{{- if and .mechanism (or (not .username) (not .passwordSecret.name)) }}
{{- fail "kafka.sasl: a mechanism needs username and passwordSecret.name (an existing Secret)" }}
{{- end }}
{{- end }}
{{- with .Values.kafka.tls }}
{{- if and (not .enabled) .secretName }}
{{- fail "kafka.tls.secretName is set but kafka.tls.enabled is false" }}
{{- end }}
{{- if ne (empty .certKey) (empty .keyKey) }}
{{- fail "kafka.tls: a client certificate needs both certKey and keyKey" }}
{{- end }}
{{- if and .certKey (not .secretName) }}
{{- fail "kafka.tls.certKey: the client certificate comes from kafka.tls.secretName, which is empty" }}
{{- end }}
{{- end }}
{{- if and (or .Values.kafka.tls.enabled .Values.kafka.sasl.mechanism) (.Values.config.connection | default dict).kafka }}
{{- fail "config.connection.kafka: set the connection with kafka.tls and kafka.sasl, not both" }}
{{- end }}
{{- range $role, $w := .Values.workers }}
{{- if and $w.enabled $w.autoscaling.enabled $w.hpa.enabled }}
{{- fail (printf "workers.%s: autoscaling (KEDA) and hpa cannot both be enabled" $role) }}
{{- end }}
{{- if and $w.enabled $w.autoscaling.enabled (gt (int $w.autoscaling.maxReplicas) (int $.Values.kafka.partitions)) }}
{{- fail (printf "workers.%s.autoscaling.maxReplicas (%d) is above kafka.partitions (%d): members beyond the partitions idle" $role (int $w.autoscaling.maxReplicas) (int $.Values.kafka.partitions)) }}
{{- end }}
{{- range $w.processors }}
{{- if not (hasKey (include "bioalchemy.processorInputs" $ | fromYaml) .) }}
{{- fail (printf "workers.%s.processors: unknown processor %q" $role .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Each processor's input topics (processors/pipeline.ts; test/deploy/helm.test.ts checks them against pipelineTopology()). */}}
{{- define "bioalchemy.processorInputs" -}}
extract: [articles]
grade: [qa.candidates]
dedup-bands: [qa.bands]
dedup: [qa.band-verdicts]
classify: [qa.graded]
count-sink: [qa.classified, qa.withdrawn, mix.state]
sampler: [qa.classified, qa.withdrawn]
llm-calls: [llm.calls]
feeder: [mix.state, qa.classified, qa.withdrawn]
{{- end }}

{{/* The log URL: kafka://brokers?client=..&registry=..&compatibility=.. */}}
{{- define "bioalchemy.logUrl" -}}
{{- $q := list (printf "client=%s" .Values.kafka.client) }}
{{- if .Values.kafka.schemaRegistry }}
{{- $q = append $q (printf "registry=%s" .Values.kafka.schemaRegistry) }}
{{- $q = append $q (printf "compatibility=%s" .Values.kafka.compatibility) }}
{{- end }}
{{- printf "kafka://%s?%s" .Values.kafka.bootstrapServers (join "&" $q) }}
{{- end }}

{{/* Where the Kafka TLS Secret's files are mounted. */}}
{{- define "bioalchemy.kafkaTlsDir" -}}
/etc/kafka-tls
{{- end }}

{{/* The config's connection.kafka from kafka.tls and kafka.sasl: files mounted, the password by env. */}}
{{- define "bioalchemy.kafkaConnection" -}}
{{- $kafka := dict }}
{{- with .Values.kafka.tls }}
{{- if .enabled }}
{{- $tls := dict "verifyHostname" .verifyHostname }}
{{- $dir := include "bioalchemy.kafkaTlsDir" $ }}
{{- if and .secretName .caKey }}
{{- $_ := set $tls "caFile" (printf "%s/%s" $dir .caKey) }}
{{- end }}
{{- if .certKey }}
{{- $_ := set $tls "certFile" (printf "%s/%s" $dir .certKey) }}
{{- $_ = set $tls "keyFile" (printf "%s/%s" $dir .keyKey) }}
{{- end }}
{{- $_ := set $kafka "tls" $tls }}
{{- end }}
{{- end }}
{{- with .Values.kafka.sasl }}
{{- if .mechanism }}
{{- $_ := set $kafka "sasl" (dict "mechanism" .mechanism "username" .username "password" (dict "env" "KAFKA_SASL_PASSWORD")) }}
{{- end }}
{{- end }}
{{- toRawJson $kafka }}
{{- end }}

{{/* The config file: the user's config with log, clickhouse and connection.kafka from the values. */}}
{{- define "bioalchemy.configJson" -}}
{{- $config := deepCopy .Values.config }}
{{- $_ := set $config "log" (include "bioalchemy.logUrl" .) }}
{{- $_ = set $config "clickhouse" .Values.clickhouse.url }}
{{- if or .Values.kafka.tls.enabled .Values.kafka.sasl.mechanism }}
{{- $connection := deepCopy (.Values.config.connection | default dict) }}
{{- $_ = set $connection "kafka" (include "bioalchemy.kafkaConnection" . | fromJson) }}
{{- $_ = set $config "connection" $connection }}
{{- end }}
{{- toRawJson $config }}
{{- end }}

{{/* Environment variables from Secrets: the LLM key, the ClickHouse and Kafka passwords, secretEnv. */}}
{{- define "bioalchemy.secretEnv" -}}
{{- if .Values.llm.apiKeySecret.name }}
- name: {{ default "OPENAI_API_KEY" (.Values.config.llm | default dict).apiKeyEnv }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.llm.apiKeySecret.name }}
      key: {{ .Values.llm.apiKeySecret.key }}
{{- end }}
{{- if .Values.clickhouse.passwordSecret.name }}
- name: CLICKHOUSE_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.clickhouse.passwordSecret.name }}
      key: {{ .Values.clickhouse.passwordSecret.key }}
{{- end }}
{{- if .Values.kafka.sasl.mechanism }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.kafka.sasl.passwordSecret.name }}
      key: {{ .Values.kafka.sasl.passwordSecret.key }}
{{- end }}
{{- range $env, $ref := .Values.secretEnv }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.name }}
      key: {{ $ref.key }}
{{- end }}
{{- end }}

{{/* The probes: the app's paths on the metrics port, the values' settings merged over. */}}
{{- define "bioalchemy.livenessProbe" -}}
{{- $probe := dict "httpGet" (dict "path" "/livez" "port" "metrics") }}
{{- toYaml (mergeOverwrite $probe (deepCopy .Values.livenessProbe)) }}
{{- end }}

{{- define "bioalchemy.readinessProbe" -}}
{{- $probe := dict "httpGet" (dict "path" "/readyz" "port" "metrics") }}
{{- toYaml (mergeOverwrite $probe (deepCopy .Values.readinessProbe)) }}
{{- end }}

{{/* Replicas: left out when KEDA or an HPA owns them. Called with the role's values. */}}
{{- define "bioalchemy.ownsReplicas" -}}
{{- if not (or .autoscaling.enabled .hpa.enabled) }}true{{- end }}
{{- end }}

{{/* The command line of a role's worker. Called with (dict "root" $ "role" $role "w" $w). */}}
{{- define "bioalchemy.args" -}}
- run
- --config
- /etc/bioalchemy/config.json
- --processors
- {{ join "," .w.processors | quote }}
- --worker-id
- $(POD_NAME)
- --metrics-port
- {{ .root.Values.metrics.port | quote }}
- --metrics-host
- 0.0.0.0
{{- if has "feeder" .w.processors }}
- --host
- 0.0.0.0
- --port
- {{ .w.service.feederPort | quote }}
- --dashboard-host
- 0.0.0.0
- --dashboard-port
- {{ .w.service.dashboardPort | quote }}
{{- else }}
- --no-dashboard
{{- end }}
{{- end }}

{{/* The KEDA triggers of a role: one per input topic of each of its processors. */}}
{{- define "bioalchemy.kafkaTriggers" -}}
{{- $inputs := include "bioalchemy.processorInputs" .root | fromYaml }}
{{- $app := include "bioalchemy.app" .root }}
{{- range $p := .w.processors }}
{{- range $topic := get $inputs $p }}
- type: kafka
  metadata:
    bootstrapServers: {{ $.root.Values.kafka.bootstrapServers | quote }}
    consumerGroup: {{ printf "%s.%s" $app $p | quote }}
    topic: {{ printf "%s.%s" $app $topic | quote }}
    lagThreshold: {{ $.w.autoscaling.lagThreshold | quote }}
    offsetResetPolicy: {{ $.w.autoscaling.offsetResetPolicy }}
{{- end }}
{{- end }}
{{- end }}

{{/* What the helm test pod fetches: each role's /readyz, the feeder's /healthz. A JSON list. */}}
{{- define "bioalchemy.testUrls" -}}
{{- $urls := list }}
{{- range $role, $w := .Values.workers }}
{{- if $w.enabled }}
{{- $svc := include "bioalchemy.roleName" (dict "root" $ "role" $role) }}
{{- $urls = append $urls (printf "http://%s:%v/readyz" $svc $.Values.metrics.port) }}
{{- if has "feeder" $w.processors }}
{{- $urls = append $urls (printf "http://%s:%v/healthz" $svc $w.service.feederPort) }}
{{- end }}
{{- end }}
{{- end }}
{{- toJson $urls }}
{{- end }}

{{/* The Kafka TLS Secret as files: a container's volumeMount and the pod's volume. */}}
{{- define "bioalchemy.kafkaTlsMount" -}}
{{- if .Values.kafka.tls.secretName }}
- name: kafka-tls
  mountPath: {{ include "bioalchemy.kafkaTlsDir" . }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "bioalchemy.kafkaTlsVolume" -}}
{{- if .Values.kafka.tls.secretName }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.tls.secretName }}
    defaultMode: 0440
{{- end }}
{{- end }}
