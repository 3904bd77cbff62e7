{{/*
The namespace every namespaced object goes to. The product's code names fluid-system (the CSI node
service creates its FUSE pods there, the plugin reads its components there), so another release
namespace is refused here rather than installed half-working.
*/}}
{{- define "fluid.namespace" -}}
{{- if ne .Release.Namespace "fluid-system" -}}
{{- fail (printf "kubectl-fluid installs into namespace fluid-system, not %q (its CSI node service creates its FUSE pods there): use --namespace fluid-system --create-namespace" .Release.Namespace) -}}
{{- end -}}
{{- .Release.Namespace -}}
{{- end -}}

{{/*
Labels of a component's objects: the manifests' own three, then Helm's. Pod templates and selectors
carry only the manifests' (fluid.podLabels), so an upgrade of the chart alone never rolls the pods.
Call with (dict "ctx" $ "name" "fluid-controller" "component" "controller").
*/}}
{{- define "fluid.labels" -}}
{{ include "fluid.podLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
{{- end -}}

{{- define "fluid.podLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: fluid
{{- end -}}

{{/*
A component's image: its own repository/tag/pullPolicy over the chart's `image`.
Call with (dict "ctx" $ "image" .Values.controller.image); prints `image:` and `imagePullPolicy:`.
*/}}
{{- define "fluid.image" -}}
{{- $image := merge (deepCopy (.image | default dict)) .ctx.Values.image -}}
image: {{ printf "%s:%s" $image.repository (toString $image.tag) | quote }}
imagePullPolicy: {{ $image.pullPolicy }}
{{- end -}}

{{/* nodeSelector, tolerations and imagePullSecrets of a pod, each left out when empty. */}}
{{- define "fluid.placement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .ctx.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* `resources:` of a container, left out when empty. */}}
{{- define "fluid.resources" -}}
{{- with . }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The webhook's plugin profile, as the ConfigMap webhook-plugins holds it. Each group is the values'
group, or the default when the values have none: values files written before a group existed, and
`helm upgrade --reuse-values` from a release whose chart had no such group, both leave it out.
Plugin names are checked here, since an unknown one stops the webhook at start-up (after the
upgrade has replaced the working pods).
*/}}
{{- define "fluid.pluginsProfile" -}}
{{- $defaults := dict
      "clientless" (dict "withDataset" (list "RuntimeConfigInjector" "MountPropagationInjector") "withoutDataset" list)
      "serverful" (dict "withDataset" (list "MountPropagationInjector" "RequireNodeWithFuse" "NodeAffinityWithCache" "DatasetUsageInjector") "withoutDataset" (list "MountPropagationInjector"))
      "serverless" (dict "withDataset" (list "DatasetUsageInjector") "withoutDataset" list) -}}
{{- $known := list "RuntimeConfigInjector" "MountPropagationInjector" "DatasetUsageInjector" "NodeAffinityWithCache" "PreferNodesWithoutCache" "RequireNodeWithFuse" -}}
{{- $given := dig "pluginsProfile" "plugins" dict (.Values.webhook | default dict) | default dict -}}
{{- $config := list (dict "name" "NodeAffinityWithCache" "args" "preferred:\n  - name: fluid.io/node\n    weight: 100\nrequired:\n  - fluid.io/node\n") -}}
{{- $pp := dig "pluginsProfile" dict (.Values.webhook | default dict) | default dict -}}
{{- if hasKey $pp "pluginConfig" }}{{ $config = $pp.pluginConfig | default list }}{{ end -}}
{{- range $group, $_ := $given -}}
{{- if not (hasKey $defaults $group) -}}
{{- fail (printf "webhook.pluginsProfile.plugins.%s: unknown handler group; known: clientless, serverful, serverless" $group) -}}
{{- end -}}
{{- end -}}
{{- $profile := dict -}}
{{- range $group := list "clientless" "serverful" "serverless" -}}
{{- $section := get $given $group | default (get $defaults $group) -}}
{{- $lists := dict -}}
{{- range $key := list "withDataset" "withoutDataset" -}}
{{- $names := get $section $key | default list -}}
{{- if not (kindIs "slice" $names) -}}
{{- fail (printf "webhook.pluginsProfile.plugins.%s.%s must be a list of plugin names" $group $key) -}}
{{- end -}}
{{- range $name := $names -}}
{{- if not (has $name $known) -}}
{{- fail (printf "webhook.pluginsProfile.plugins.%s.%s: unknown plugin %q; known: %s" $group $key $name (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $lists $key $names -}}
{{- end -}}
{{- if and (eq $group "clientless") (not $lists.withDataset) -}}
{{- fail "webhook.pluginsProfile.plugins.clientless.withDataset is empty: pods labelled fluid.io/inject: \"true\" would be admitted without their runtime config; list RuntimeConfigInjector, or leave clientless out for the default" -}}
{{- end -}}
{{- $_ := set $profile $group $lists -}}
{{- end -}}
{{- $about := dict
      "clientless" "Pods labelled fluid.io/inject: \"true\": the runtime config only, no dataset volume, no FUSE."
      "serverful" "Pods mounting a Fluid PVC through the CSI driver."
      "serverless" "Pods labelled serverless.fluid.io/inject: \"true\" (a FUSE sidecar may come later)." -}}
plugins:
{{- range $group := list "clientless" "serverful" "serverless" }}
  # {{ get $about $group }}
  {{ $group }}:
    withDataset: [{{ join ", " (get (get $profile $group) "withDataset") }}]
    withoutDataset: [{{ join ", " (get (get $profile $group) "withoutDataset") }}]
{{- end }}
# Args of the plugins that take some (NodeAffinityWithCache: upstream's TieredLocality).
pluginConfig:
{{- toYaml $config | nindent 2 }}
{{- end -}}
