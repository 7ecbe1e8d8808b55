{{- /*
kiln.deployment: applies the values of one process (v) and the image values to its Deployment
(obj, changed in place). A null value keeps what the manifest says.
*/ -}}
{{- define "kiln.deployment" -}}
{{- $obj := .obj }}{{ $v := .v }}{{ $img := .image }}
{{- if not (kindIs "invalid" $v.replicas) }}
{{- $_ := set $obj.spec "replicas" $v.replicas }}
{{- end }}
{{- $pod := $obj.spec.template.spec }}
{{- range $key := list "nodeSelector" "tolerations" "affinity" }}
{{- if index $v $key }}
{{- $_ := set $pod $key (index $v $key) }}
{{- end }}
{{- end }}
{{- $c := index $pod.containers 0 }}
{{- if or $img.repository $img.tag }}
{{- $cur := splitList ":" $c.image }}
{{- $repo := $img.repository | default (initial $cur | join ":") }}
{{- $tag := $img.tag | default (last $cur) }}
{{- $_ := set $c "image" (printf "%s:%s" $repo $tag) }}
{{- end }}
{{- if $img.pullPolicy }}
{{- $_ := set $c "imagePullPolicy" $img.pullPolicy }}
{{- end }}
{{- if $v.resources }}
{{- $_ := set $c "resources" $v.resources }}
{{- end }}
{{- $flags := dict "--kube-api-qps" $v.kubeApiQps "--kube-api-burst" $v.kubeApiBurst "--leader-elect" $v.leaderElect "-v" $v.logLevel }}
{{- $out := list }}{{ $seen := dict }}
{{- range $a := $c.args }}
{{- range $f, $val := $flags }}
{{- if and (not (kindIs "invalid" $val)) (hasPrefix (printf "%s=" $f) $a) }}
{{- $a = printf "%s=%v" $f $val }}
{{- $_ := set $seen $f true }}
{{- end }}
{{- end }}
{{- $out = append $out $a }}
{{- end }}
{{- range $f, $val := $flags }}
{{- if and (not (kindIs "invalid" $val)) (not (hasKey $seen $f)) }}
{{- $out = append $out (printf "%s=%v" $f $val) }}
{{- end }}
{{- end }}
{{- range $v.extraArgs }}
{{- $out = append $out . }}
{{- end }}
{{- $_ := set $c "args" $out }}
{{- end }}

{{- /*
kiln.networkpolicy: applies the networkPolicy values (v) to kiln-ingress (obj, changed in
place). metricsFrom replaces who may reach the metrics port; probesFrom adds a rule that admits
those peers to the health port, for a network plugin that does not admit a pod's own node.
*/ -}}
{{- define "kiln.networkpolicy" -}}
{{- $obj := .obj }}{{ $v := .v }}
{{- if $v.metricsFrom }}
{{- $_ := set (index $obj.spec.ingress 0) "from" $v.metricsFrom }}
{{- end }}
{{- if $v.probesFrom }}
{{- $rule := dict "ports" (list (dict "port" "healthz" "protocol" "TCP")) "from" $v.probesFrom }}
{{- $_ := set $obj.spec "ingress" (append $obj.spec.ingress $rule) }}
{{- end }}
{{- end }}
