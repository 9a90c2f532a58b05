{{/*
Egress every sandpool pod needs: the cluster's DNS, Redis and, unless postgres is false (the
nodes, which never open it), Postgres. ctx is the root.
*/}}
{{- define "sandpool.networkPolicy.baseEgress" -}}
{{- $np := .ctx.Values.networkPolicy -}}
# Names: the cluster's DNS.
- ports:
    {{- range $np.egress.dns.ports }}
    - port: {{ . }}
      protocol: UDP
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $np.egress.dns.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- $services := ternary (list "redis" "postgres") (list "redis") .postgres }}
{{- range $service := $services }}
{{- $rule := index $np.egress $service }}
# {{ $service | title }} ({{ if $rule.to }}the peers given{{ else }}any address{{ end }}, on its port{{ if gt (len $rule.ports) 1 }}s{{ end }}).
- ports:
    {{- range $rule.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $rule.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}
