{{/* The chart's name, overridable. */}}
{{- define "nodesmith.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name alone when it already says nodesmith. */}}
{{- define "nodesmith.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "nodesmith.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "nodesmith.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "nodesmith.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "nodesmith.labels" -}}
helm.sh/chart: {{ include "nodesmith.chart" . }}
{{ include "nodesmith.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nodesmith
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the controller's pods; never change them on upgrade. */}}
{{- define "nodesmith.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodesmith.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "nodesmith.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodesmith.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* clusterName, refused when missing: nothing works without it. */}}
{{- define "nodesmith.clusterName" -}}
{{- required "clusterName is required: set it to your EKS cluster's name (--set clusterName=my-cluster); Nodesmith tags instances with it and discovers subnets and security groups tagged nodesmith.sh/discovery=<clusterName>" .Values.clusterName }}
{{- end }}

{{- define "nodesmith.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* --feature-gates value: Name=true,Other=false, sorted by name. */}}
{{- define "nodesmith.featureGates" -}}
{{- $gates := list }}
{{- range $name, $on := .Values.featureGates }}
{{- $gates = append $gates (printf "%s=%t" $name $on) }}
{{- end }}
{{- join "," $gates }}
{{- end }}
