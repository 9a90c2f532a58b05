{{/* The chart's name, or nameOverride. */}}
{{- define "sandpool.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: fullnameOverride, else <release>-<name> (once if they overlap). */}}
{{- define "sandpool.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "sandpool.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sandpool.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* With roles: the selector labels of one role's pods; ctx is the root, role edge or node. */}}
{{- define "sandpool.roleSelectorLabels" -}}
{{ include "sandpool.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "sandpool.roleLabels" -}}
{{ include "sandpool.labels" .ctx }}
app.kubernetes.io/component: {{ .role }}
{{- end -}}

{{- define "sandpool.labels" -}}
helm.sh/chart: {{ include "sandpool.chart" . }}
{{ include "sandpool.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "sandpool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sandpool.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "sandpool.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret the gateway, the edges and the migration Job read their environment from. */}}
{{- define "sandpool.secretName" -}}
{{- default (include "sandpool.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* The nodes' own Secret (roles): Redis, the node secrets and the metrics token, nothing else. */}}
{{- define "sandpool.nodeSecretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{- .Values.secrets.existingNodeSecret -}}
{{- else -}}
{{- printf "%s-node" (include "sandpool.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* "true" when /metrics wants SANDPOOL_METRICS_TOKEN, so the ServiceMonitors send it. */}}
{{- define "sandpool.metricsTokenSet" -}}
{{- if or (and (not .Values.secrets.existingSecret) .Values.secrets.metricsToken) (and .Values.secrets.existingSecret .Values.serviceMonitor.bearerToken) -}}
true
{{- end -}}
{{- end -}}

{{/* DOCKER_HOST: the DinD sidecar's socket, the host's (mounted), else docker.host, then required. */}}
{{- define "sandpool.dockerHost" -}}
{{- if .Values.dind.enabled -}}
unix:///run/dind/docker.sock
{{- else if .Values.hostDocker.enabled -}}
unix:///var/run/docker.sock
{{- else -}}
{{- required "docker.host is required (the Docker engine that runs the sandboxes), or set dind.enabled=true or hostDocker.enabled=true" .Values.docker.host -}}
{{- end -}}
{{- end -}}

{{/*
Refuses values that cannot work, at install time rather than in a crash loop:
missing secrets, and a DinD sidecar per replica (replicas could not reach each other's
sandboxes, and each would take the others' sessions for lost).
*/}}
{{- define "sandpool.validate" -}}
{{- if .Values.roles.enabled -}}
{{- include "sandpool.validateRoles" . -}}
{{- else if and .Values.dind.enabled (gt (int .Values.replicaCount) 1) -}}
{{- fail "dind.enabled needs replicaCount: 1: each replica's sidecar engine holds sandboxes the other replicas cannot reach" -}}
{{- end -}}
{{- if .Values.hostDocker.enabled -}}
{{- if .Values.dind.enabled -}}
{{- fail "set one of dind.enabled and hostDocker.enabled: each gives the gateway its Docker engine" -}}
{{- end -}}
{{- if and (not .Values.roles.enabled) (gt (int .Values.replicaCount) 1) -}}
{{- fail "hostDocker.enabled needs replicaCount: 1: replicas on other nodes could not reach each other's sandboxes" -}}
{{- end -}}
{{- if kindIs "invalid" .Values.hostDocker.socketGroup -}}
{{- fail "hostDocker.socketGroup is required: the group id of the Docker socket on the sandbox nodes (stat -c %g /var/run/docker.sock)" -}}
{{- end -}}
{{- end -}}
{{- if .Values.memoryCheckpoints.enabled -}}
{{- if not (or .Values.dind.enabled .Values.hostDocker.enabled) -}}
{{- fail "memoryCheckpoints.enabled needs the chart's engine (dind.enabled or hostDocker.enabled): a memory restore writes into the engine's data root, which a remote engine's is not" -}}
{{- end -}}
{{- if and .Values.hostDocker.enabled (include "sandpool.checkpointsClaimed" .) -}}
{{- fail "memoryCheckpoints.enabled with hostDocker.enabled and roles.node.checkpoints: the node's engine writes a memory checkpoint on its host's file system, where the pods' claim is not. Mount the shared file system on every sandbox node's host at config.hibernate.checkpointDir and set roles.node.checkpoints.onHost: true" -}}
{{- end -}}
{{- end -}}
{{- if and .Values.ingress.enabled (not .Values.ingress.hosts) -}}
{{- fail "ingress.enabled needs ingress.hosts: the host names the Ingress routes to the gateway" -}}
{{- end -}}
{{- if not .Values.secrets.existingSecret -}}
{{- $_ := required "secrets.databaseUrl is required (or secrets.existingSecret)" .Values.secrets.databaseUrl -}}
{{- $redis := .Values.config.redis | default dict -}}
{{- if not (or $redis.sentinels $redis.cluster) -}}
{{- $_ := required "secrets.redisUrl is required (or config.redis.sentinels / config.redis.cluster, or secrets.existingSecret)" .Values.secrets.redisUrl -}}
{{- end -}}
{{- $sources := 0 -}}
{{- range (list .Values.secrets.jwtSecret .Values.secrets.jwtPublicKey .Values.secrets.jwksUrl) -}}
{{- if . -}}{{- $sources = add1 $sources -}}{{- end -}}
{{- end -}}
{{- if ne (int $sources) 1 -}}
{{- fail "set exactly one of secrets.jwtSecret, secrets.jwtPublicKey, secrets.jwksUrl (or secrets.existingSecret)" -}}
{{- end -}}
{{- if and .Values.secrets.metricsToken (lt (len .Values.secrets.metricsToken) 32) -}}
{{- fail "secrets.metricsToken needs 32 bytes or more (e.g. openssl rand -hex 32)" -}}
{{- end -}}
{{- if .Values.secrets.existingNodeSecret -}}
{{- fail "secrets.existingNodeSecret goes with secrets.existingSecret: without it the chart makes the nodes' Secret from secrets.*" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pools' images, each once, as a JSON list (the DinD sidecar pulls them). */}}
{{- define "sandpool.poolImages" -}}
{{- $images := list -}}
{{- range .Values.config.pools -}}
{{- $images = append $images .image -}}
{{- end -}}
{{- $images | uniq | toJson -}}
{{- end -}}

{{/*
With roles: the nodes need exactly one engine source (a remote docker.host cannot share
/run/sandpool), the autoscaler's bounds must hold, and edges and nodes need their secret.
*/}}
{{- define "sandpool.validateRoles" -}}
{{- if not (or .Values.dind.enabled .Values.hostDocker.enabled) -}}
{{- fail "roles.enabled needs dind.enabled or hostDocker.enabled: the Docker engine of each node pod" -}}
{{- end -}}
{{- $scale := .Values.roles.edge.autoscaling -}}
{{- if and $scale.enabled (lt (int $scale.maxReplicas) (int $scale.minReplicas)) -}}
{{- fail "roles.edge.autoscaling.maxReplicas must be at least minReplicas" -}}
{{- end -}}
{{- if and .Values.secrets.existingSecret (not .Values.secrets.existingNodeSecret) -}}
{{- fail "roles.enabled with secrets.existingSecret needs secrets.existingNodeSecret: the nodes' own Secret (REDIS_URL, SANDPOOL_NODE_SECRETS), so they never hold the token keys or DATABASE_URL" -}}
{{- end -}}
{{- if not .Values.secrets.existingSecret -}}
{{- if not .Values.secrets.nodeSecrets -}}
{{- fail "roles.enabled needs secrets.nodeSecrets (or SANDPOOL_NODE_SECRETS in secrets.existingSecret): the shared secret edges and nodes authenticate each other with" -}}
{{- end -}}
{{- range .Values.secrets.nodeSecrets -}}
{{- if or (lt (len .) 32) (contains "," .) -}}
{{- fail "every secrets.nodeSecrets entry needs 32 bytes or more, and no comma" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Hibernated sessions' checkpoints shared by every node (roles.node.checkpoints): where the node
pods mount the volume (config.hibernate.checkpointDir, else the gateway's default) and the
claim they mount (an existing one, or the chart's).
*/}}
{{- define "sandpool.checkpointsShared" -}}
{{- if and .Values.roles.enabled .Values.roles.node.checkpoints.enabled }}true{{ end }}
{{- end }}

{{/* Shared through a claim the pods mount (not a file system every node's host mounts itself: onHost). */}}
{{- define "sandpool.checkpointsClaimed" -}}
{{- if and (include "sandpool.checkpointsShared" .) (not .Values.roles.node.checkpoints.onHost) }}true{{ end }}
{{- end }}

{{/*
The checkpoints volume of a pod that runs sandboxes (each node, or the single gateway with its
engine), and its mount: the shared claim, else the host's directory at checkpointDir, the
same path in the pod as on the host. A host engine (hostDocker) writes a memory checkpoint
there itself, on the host: sandpool must find it at the path it gave the engine.
*/}}
{{- define "sandpool.checkpointsVolume" -}}
- name: checkpoints
  {{- if include "sandpool.checkpointsClaimed" . }}
  persistentVolumeClaim:
    claimName: {{ include "sandpool.checkpointsClaim" . }}
  {{- else }}
  # Node-local checkpoints (or a shared file system the host mounts there: onHost) outlive
  # the pod (a node's id is its host's, so its sessions resume there after a restart), and
  # the root file system is read-only.
  hostPath:
    path: {{ include "sandpool.checkpointDir" . }}
    type: DirectoryOrCreate
  {{- end }}
{{- end }}

{{- define "sandpool.checkpointsMount" -}}
- name: checkpoints
  mountPath: {{ include "sandpool.checkpointDir" . }}
{{- end }}

{{- define "sandpool.checkpointDir" -}}
{{- .Values.config.hibernate.checkpointDir | default "/var/lib/sandpool/checkpoints" }}
{{- end }}

{{- define "sandpool.checkpointsClaim" -}}
{{- .Values.roles.node.checkpoints.existingClaim | default (printf "%s-checkpoints" (include "sandpool.fullname" .)) }}
{{- end }}

{{/* The egress CA's Secret (egressCa.existingSecret), as the files the gateway reads. */}}
{{- define "sandpool.egressCaEnv" -}}
{{- if .Values.egressCa.existingSecret }}
- name: SANDPOOL_EGRESS_CA_CERT_FILE
  value: /etc/sandpool-egress-ca/tls.crt
- name: SANDPOOL_EGRESS_CA_KEY_FILE
  value: /etc/sandpool-egress-ca/tls.key
{{- end }}
{{- end }}

{{- define "sandpool.egressCaMount" -}}
{{- if .Values.egressCa.existingSecret }}
- name: egress-ca
  mountPath: /etc/sandpool-egress-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "sandpool.egressCaVolume" -}}
{{- if .Values.egressCa.existingSecret }}
- name: egress-ca
  secret:
    secretName: {{ .Values.egressCa.existingSecret }}
    defaultMode: 0400
{{- end }}
{{- end }}
