{{/*
Chart name.
*/}}
{{- define "cronshard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: <release>-<name>, or <release> when it already contains the name; 63 characters at
most (DNS label).
*/}}
{{- define "cronshard.fullname" -}}
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

{{/*
Chart label value.
*/}}
{{- define "cronshard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "cronshard.labels" -}}
helm.sh/chart: {{ include "cronshard.chart" . }}
{{ include "cronshard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: cronshard
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Selector labels (immutable on the Deployment: never add to them).
*/}}
{{- define "cronshard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cronshard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The ServiceAccount the pods run as. Without create, an explicit name is required: the RBAC
bindings and the FlowSchema must never grant anything to the namespace's "default" account.
*/}}
{{- define "cronshard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cronshard.fullname" .) .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else }}
{{- fail "serviceAccount.name is required when serviceAccount.create is false" }}
{{- end }}
{{- end }}

{{/*
The image reference: repository@digest, else repository:tag (tag default: appVersion).
*/}}
{{- define "cronshard.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
A Go duration ("1m30s", "500ms", "0") in milliseconds, as a string; fails on anything else.
Called with (list "<value name>" <value>).
*/}}
{{- define "cronshard.durationMs" -}}
{{- $name := index . 0 }}
{{- $d := index . 1 | toString }}
{{- if eq $d "0" }}
{{- print "0" }}
{{- else }}
{{- $num := "[0-9]+(\\.[0-9]+)?" }}
{{- $unit := "(ns|us|µs|ms|s|m|h)" }}
{{- if not (regexMatch (printf "^(%s%s)+$" $num $unit) $d) }}
{{- fail (printf "%s: %q is not a Go duration (e.g. 2s, 500ms, 1m30s)" $name $d) }}
{{- end }}
{{- $scale := dict "ns" 0.000001 "us" 0.001 "µs" 0.001 "ms" 1.0 "s" 1000.0 "m" 60000.0 "h" 3600000.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll (printf "%s%s" $num $unit) $d -1 }}
{{- $n := regexFind (printf "^%s" $num) . }}
{{- $total = addf $total (mulf (float64 $n) (get $scale (trimPrefix $n .))) }}
{{- end }}
{{- print $total }}
{{- end }}
{{- end }}

{{/*
Render-time checks of values the schema cannot relate to each other.
*/}}
{{- define "cronshard.validate" -}}
{{- $period := include "cronshard.durationMs" (list "renewPeriod" .Values.renewPeriod) | float64 }}
{{- $deadline := include "cronshard.durationMs" (list "renewDeadline" .Values.renewDeadline) | float64 }}
{{- $duration := include "cronshard.durationMs" (list "leaseDuration" .Values.leaseDuration) | float64 }}
{{- $_ := include "cronshard.durationMs" (list "joinGrace" .Values.joinGrace) }}
{{- if not (and (lt $period $deadline) (lt $deadline $duration)) }}
{{- fail (printf "renewPeriod (%v) < renewDeadline (%v) < leaseDuration (%v) is required" .Values.renewPeriod .Values.renewDeadline .Values.leaseDuration) }}
{{- end }}
{{- /* The bucket count and function of a running deployment must never change (the bucket
labels on CronJobs and Jobs would be wrong). lookup finds nothing under `helm template`, lint and
--dry-run=client, so this only guards real upgrades. */}}
{{- $existing := lookup "apps/v1" "Deployment" .Release.Namespace (include "cronshard.fullname" .) }}
{{- /* Scaled to zero, nothing runs: the documented fresh start changes count or function there. */}}
{{- if and $existing (gt (int (default 0 $existing.spec.replicas)) 0) }}
{{- range $existing.spec.template.spec.containers }}
{{- if eq .name "cronshard" }}
{{- $function := "name" }}
{{- range .args }}
{{- if hasPrefix "--bucket-function=" (trimAll "\"" .) }}
{{- $function = trimPrefix "--bucket-function=" (trimAll "\"" .) }}
{{- end }}
{{- end }}
{{- if ne $function $.Values.bucketFunction }}
{{- fail (printf "bucketFunction: the running Deployment maps CronJobs to buckets by %s and this upgrade asks for %s; replicas with another function than the deployment's refuse to act. Keep bucketFunction=%s, or move the deployment as docs/operations.md says" $function $.Values.bucketFunction $function) }}
{{- end }}
{{- range .args }}
{{- if hasPrefix "--buckets=" . }}
{{- $running := trimPrefix "--buckets=" . }}
{{- if ne $running (toString (int $.Values.buckets)) }}
{{- fail (printf "buckets: the running Deployment uses %s buckets and this upgrade asks for %d; changing the bucket count of a deployment is not supported (CronJobs and Jobs carry their bucket as a label)" $running (int $.Values.buckets)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
