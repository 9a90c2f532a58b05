{{- /*
  The Docker engine a pod that runs sandboxes gets: the DinD sidecar (dind.enabled) or the
  node's engine (hostDocker.enabled). Shared by the single gateway (deployment.yaml, role all)
  and the node DaemonSet (node-daemonset.yaml, roles.enabled), so both shapes stay one.
*/ -}}

{{/* The pod's securityContext: podSecurityContext, plus the host socket's group. */}}
{{- define "sandpool.enginePodSecurityContext" -}}
{{- $podSecurity := deepCopy .Values.podSecurityContext -}}
{{- if .Values.hostDocker.enabled -}}
{{- /* The host socket's group, as compose's group_add: the gateway (uid 10000) needs no more. */ -}}
{{- $groups := append ($podSecurity.supplementalGroups | default list) (int .Values.hostDocker.socketGroup) -}}
{{- $_ := set $podSecurity "supplementalGroups" $groups -}}
{{- end -}}
{{- toYaml $podSecurity -}}
{{- end -}}

{{/*
The engine's data root, as the engine sees it (docker info's DockerRootDir): the node's
(hostDocker.dataRoot), or the sidecar's storage.
*/}}
{{- define "sandpool.engineDataRoot" -}}
{{- if .Values.hostDocker.enabled }}{{ .Values.hostDocker.dataRoot }}{{ else }}/var/lib/docker{{ end }}
{{- end -}}

{{/*
The securityContext of the container that runs sandpool beside its engine. With
memoryCheckpoints: root with CAP_DAC_OVERRIDE alone (still no privilege, a read-only root
file system), since the engine writes a memory checkpoint as root, mode 0700, and restores it
only from its own data root (0710, root's): sandpool reads the one, measures and moves it,
and copies it into the other. Whoever holds the engine's socket is root on its host already.
*/}}
{{- define "sandpool.engineSecurityContext" -}}
{{- $security := deepCopy .Values.securityContext -}}
{{- if .Values.memoryCheckpoints.enabled -}}
{{- $_ := set $security "runAsUser" 0 -}}
{{- $_ := set $security "runAsNonRoot" false -}}
{{- $_ := set $security "capabilities" (dict "drop" (list "ALL") "add" (list "DAC_OVERRIDE")) -}}
{{- end -}}
{{- toYaml $security -}}
{{- end -}}

{{/* With hostDocker: the init container that gives the node's /run/sandpool to the gateway's user. */}}
{{- define "sandpool.engineInitContainers" -}}
{{- if .Values.hostDocker.enabled }}
# The host engine mounts each sandbox's socket directory from the node's /run/sandpool,
# which the gateway shares at the same path: it must belong to the gateway's user and be
# closed to everyone else (the sandboxes' user included), as compose's socket-dir does.
# Root with CHOWN and FOWNER only: not privileged.
- name: socket-dir
  image: {{ include "sandpool.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  command: ["sh", "-c", "chown 10000:10000 /run/sandpool && chmod 0700 /run/sandpool"]
  securityContext:
    runAsUser: 0
    runAsGroup: 0
    runAsNonRoot: false
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop: [ALL]
      add: [CHOWN, FOWNER]
    seccompProfile:
      type: RuntimeDefault
  resources:
    {{- toYaml .Values.resources | nindent 4 }}
  volumeMounts:
    - name: sandbox-sockets
      mountPath: /run/sandpool
{{- end }}
{{- end -}}

{{/* With dind: the sidecar engine, a container of the pod. */}}
{{- define "sandpool.dindContainer" -}}
{{- if .Values.dind.enabled }}
# Docker-in-Docker: the pod's own engine. Its sandboxes have no network; the gateway
# reaches them through their sockets below /run/sandpool, an emptyDir mounted at that
# same path in both containers. Privileged: an engine needs it. It listens on a unix socket only (never TCP: that would hand the
# engine to anyone who reaches the pod), owned by the gateway's group. It comes first:
# the kubelet starts the gateway once its postStart (the image pulls) has finished.
- name: dind
  image: "{{ .Values.dind.image.repository }}:{{ .Values.dind.image.tag }}"
  imagePullPolicy: {{ .Values.dind.image.pullPolicy }}
  command: ["dind", "dockerd"]
  args:
    - --host=unix:///run/dind/docker.sock
    - --group=10000
  securityContext:
    privileged: true
  {{- if .Values.dind.pullPoolImages }}
  lifecycle:
    postStart:
      exec:
        command:
          - sh
          - -c
          - |
            set -e
            n=0
            until docker -H unix:///run/dind/docker.sock info >/dev/null 2>&1; do
              n=$((n + 1)); [ "$n" -lt 120 ] || exit 1; sleep 1
            done
            {{- range $image := (include "sandpool.poolImages" . | fromJsonArray) }}
            docker -H unix:///run/dind/docker.sock pull {{ $image | quote }}
            {{- end }}
  {{- end }}
  resources:
    {{- toYaml .Values.dind.resources | nindent 4 }}
  volumeMounts:
    - name: dind-socket
      mountPath: /run/dind
    - name: dind-storage
      mountPath: /var/lib/docker
    - name: sandbox-sockets
      mountPath: /run/sandpool
    {{- if .Values.memoryCheckpoints.enabled }}
    # The engine writes a memory checkpoint where sandpool tells it: the same volume, at the
    # same path as in sandpool's container.
    {{- include "sandpool.checkpointsMount" . | nindent 4 }}
    {{- end }}
{{- end }}
{{- end -}}

{{/* The gateway container's mounts of its engine: the socket and the sandboxes' sockets. */}}
{{- define "sandpool.engineMounts" -}}
{{- if .Values.dind.enabled }}
- name: dind-socket
  mountPath: /run/dind
{{- end }}
{{- if .Values.hostDocker.enabled }}
# Whoever holds the host's engine socket is root on the node: this pod only runs
# on the nodes nodeSelector and tolerations pick for it.
- name: docker-socket
  mountPath: /var/run/docker.sock
{{- end }}
{{- if or .Values.dind.enabled .Values.hostDocker.enabled }}
- name: sandbox-sockets
  mountPath: /run/sandpool
{{- end }}
{{- if .Values.memoryCheckpoints.enabled }}
# The engine's data root at the engine's own path: a memory restore copies the checkpoint
# into <data root>/containers/<id>/checkpoints/, the only place the engine restores from.
{{- if .Values.dind.enabled }}
- name: dind-storage
  mountPath: /var/lib/docker
{{- else }}
- name: engine-data-root
  mountPath: {{ include "sandpool.engineDataRoot" . }}
  # The engine mounts and unmounts its containers' file systems below it: seen here as
  # they come and go, never held open by this pod.
  mountPropagation: HostToContainer
{{- end }}
{{- end }}
{{- end -}}

{{/* The pod's volumes for its engine. */}}
{{- define "sandpool.engineVolumes" -}}
{{- if .Values.dind.enabled }}
- name: dind-socket
  emptyDir: {}
- name: dind-storage
  emptyDir:
    sizeLimit: {{ .Values.dind.storageSizeLimit }}
# The sandboxes' socket directories: tiny, but a sandbox must never fill the node's disk.
- name: sandbox-sockets
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- end }}
{{- if .Values.hostDocker.enabled }}
- name: docker-socket
  hostPath:
    path: {{ .Values.hostDocker.socketPath }}
    type: Socket
# The node's own /run/sandpool, where the host engine finds the sandboxes' sockets.
- name: sandbox-sockets
  hostPath:
    path: /run/sandpool
    type: DirectoryOrCreate
{{- if .Values.memoryCheckpoints.enabled }}
- name: engine-data-root
  hostPath:
    path: {{ .Values.hostDocker.dataRoot }}
    type: Directory
{{- end }}
{{- end }}
{{- end -}}
