{{/* The app's name: its Deployment, Service and PodDisruptionBudget. */}}
{{- define "electd.appName" -}}
{{- default .Release.Name .Values.app.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.zkName" -}}
{{- default (printf "%s-zookeeper" .Release.Name) .Values.zookeeper.name | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.secretName" -}}
{{- default (printf "%s-electd-admin" .Release.Name) .Values.electd.adminToken.secretName | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.peerKeySecretName" -}}
{{- default (printf "%s-electd-proxy-peer-key" .Release.Name) .Values.proxy.peerKey.secretName | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.zkAuthSecretName" -}}
{{- default (printf "%s-electd-zookeeper-auth" .Release.Name) .Values.electd.zookeeperAuth.secretName | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* routing: label: electd's ServiceAccount, Role and RoleBinding, and its Lease. */}}
{{- define "electd.serviceAccountName" -}}
{{- printf "%s-electd" (include "electd.appName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.leaseName" -}}
{{- default (printf "%s-leader" (include "electd.appName" .)) .Values.label.lease.name | trunc 253 | trimSuffix "-" -}}
{{- end -}}

{{- define "electd.labelRouting" -}}
{{- if eq .Values.routing "label" -}}true{{- end -}}
{{- end -}}

{{/* electd talks to the API server: routing: label, or electd.participantGate. */}}
{{- define "electd.kubeAPI" -}}
{{- if or (include "electd.labelRouting" .) .Values.electd.participantGate -}}true{{- end -}}
{{- end -}}

{{/* routing: proxy: the Service targets electd's forwarding proxy. */}}
{{- define "electd.proxyRouting" -}}
{{- if eq .Values.routing "proxy" -}}true{{- end -}}
{{- end -}}

{{/* Every joined pod is Ready (label, proxy), not the leader alone. */}}
{{- define "electd.allReady" -}}
{{- if or (include "electd.labelRouting" .) (include "electd.proxyRouting" .) -}}true{{- end -}}
{{- end -}}

{{/* electd's shutdown_grace: electd.shutdownGrace, else 5s with routing: proxy, else 0s. */}}
{{- define "electd.shutdownGrace" -}}
{{- if .Values.electd.shutdownGrace -}}
{{- .Values.electd.shutdownGrace -}}
{{- else if include "electd.proxyRouting" . -}}
5s
{{- else -}}
0s
{{- end -}}
{{- end -}}

{{/*
electd's resources: electd.resources, whose requests.cpu left empty is
100m with routing: proxy (every request goes through electd there, and its
peers give it up when it cannot answer a ping within a second: it asks for
as much CPU as a ZooKeeper server), else 10m; and whose limits.memory left
empty is 128Mi with routing: proxy (slow clients make a proxy hold about
60 KiB each), else 64Mi.
*/}}
{{/*
electd.proxyMemLimit is GOMEMLIMIT with routing: proxy and the default
memory limit (128Mi): 100MiB, leaving room for what the runtime does not
count; empty otherwise, and GOMEMLIMIT is then the limit itself.
*/}}
{{- define "electd.proxyMemLimit" -}}
{{- if and (eq .Values.routing "proxy") (not (.Values.electd.resources.limits).memory) -}}
100MiB
{{- end -}}
{{- end -}}

{{- define "electd.resources" -}}
{{- $r := deepCopy .Values.electd.resources -}}
{{- $req := default dict $r.requests -}}
{{- if not $req.cpu -}}
{{- $_ := set $req "cpu" (ternary "100m" "10m" (eq .Values.routing "proxy")) -}}
{{- end -}}
{{- $_ := set $r "requests" $req -}}
{{- $lim := default dict $r.limits -}}
{{- if not $lim.memory -}}
{{- $_ := set $lim "memory" (ternary "128Mi" "64Mi" (eq .Values.routing "proxy")) -}}
{{- end -}}
{{- $_ := set $r "limits" $lim -}}
{{- toYaml $r -}}
{{- end -}}

{{/*
Labels. The selector labels are the name and the release; the others
say who manages the object.
*/}}
{{- define "electd.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "electd.labels" -}}
{{ include "electd.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "electd.image" -}}
{{- $img := .Values.electd.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* The ZooKeeper servers electd connects to, comma-separated. */}}
{{- define "electd.servers" -}}
{{- if .Values.electd.servers -}}
{{- join "," .Values.electd.servers -}}
{{- else if .Values.zookeeper.enabled -}}
{{- $zk := include "electd.zkName" . -}}
{{- $servers := list -}}
{{- range $i := until (int .Values.zookeeper.replicas) -}}
{{- $servers = append $servers (printf "%s-%d.%s-headless:2181" $zk $i $zk) -}}
{{- end -}}
{{- join "," $servers -}}
{{- else -}}
{{- fail "electd.servers: list the ZooKeeper servers (host:port) when zookeeper.enabled is false" -}}
{{- end -}}
{{- end -}}

{{/*
The admin token: the existing Secret's, read back on upgrade so that it
stays the same, else a new random one.
*/}}
{{- define "electd.adminToken" -}}
{{- $key := .Values.electd.adminToken.key -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "electd.secretName" .) -}}
{{- if and $existing $existing.data (hasKey $existing.data $key) -}}
{{- index $existing.data $key | b64dec -}}
{{- else -}}
{{- randAlphaNum 48 -}}
{{- end -}}
{{- end -}}

{{/*
The proxies' peer key (proxy.peerKey.create): the existing Secret's, read
back on upgrade so that every pod keeps the same one, else a new random one.
*/}}
{{- define "electd.peerKey" -}}
{{- $key := .Values.proxy.peerKey.key -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "electd.peerKeySecretName" .) -}}
{{- if and $existing $existing.data (hasKey $existing.data $key) -}}
{{- index $existing.data $key | b64dec -}}
{{- else -}}
{{- randAlphaNum 48 -}}
{{- end -}}
{{- end -}}
