"""Inputs whose runtime config upstream Fluid has published or was run on (the digest of upstream,
/work notes "upstream-api"): the curvine e2e manifests of test/gha-e2e/curvine/ (comments left out,
the DataLoad script shortened), the Dataset of the integration guide's runtime.json example, the
mooncake e2e manifests of test/gha-e2e/mooncake/, and a fixture of edge cases upstream's own code was
run on. Fields as upstream wrote them; the expected outputs are in the tests that use them."""

from __future__ import annotations

from typing import Any

import yaml

from kubectl_fluid.api.cacheruntime import CacheRuntime
from kubectl_fluid.api.cacheruntimeclass import CacheRuntimeClass
from kubectl_fluid.api.dataset import Dataset
from kubectl_fluid.runtimeconfig import RuntimeConfig, build_runtime_config

CURVINE_DATASET = """
apiVersion: data.fluid.io/v1alpha1
kind: Dataset
metadata:
  name: curvine-demo
spec:
  accessModes: ["ReadWriteMany"]
  mounts:
    - mountPoint: "s3://test"
      name: minio
      options:
        endpoint_url: "http://minio:9000"
        region_name: "us-east-1"
        path_style: "true"
      encryptOptions:
        - name: access
          valueFrom:
            secretKeyRef:
              name: curvine-secret
              key: access-key
        - name: secret
          valueFrom:
            secretKeyRef:
              name: curvine-secret
              key: secret-key
"""

# The integration guide's runtime.json example comes from this Dataset: other options, and other
# encrypt option names under another Secret, than the e2e's.
GUIDE_DATASET = """
apiVersion: data.fluid.io/v1alpha1
kind: Dataset
metadata:
  name: curvine-demo
spec:
  accessModes: ["ReadWriteMany"]
  mounts:
    - mountPoint: "s3://test"
      name: minio
      options:
        access: minioadmin
        secret: minioadmin
        endpoint_url: "http://minio:9000"
        region_name: "us-east-1"
        path_style: "true"
      encryptOptions:
        - name: access-key
          valueFrom:
            secretKeyRef:
              name: minio-secret
              key: access-key
        - name: secret-key
          valueFrom:
            secretKeyRef:
              name: minio-secret
              key: secret-key
"""

CURVINE_RUNTIME = """
apiVersion: data.fluid.io/v1alpha1
kind: CacheRuntime
metadata:
  name: curvine-demo
spec:
  runtimeClassName: curvine-demo
  master:
    options:
      key1: master-value1
    replicas: 1
  worker:
    options:
      key1: worker-value1
    replicas: 1
    tieredStore:
      levels:
        - low: "0.5"
          high: "0.8"
          emptyDir:
            quota: 1Gi
  client:
    options:
      key1: value1
"""

_CURVINE_INIT = """
        initContainers:
          - name: init-curvine
            image: hairyhenderson/gomplate:alpine
            volumeMounts:
              - name: shared-config-volume
                mountPath: /etc/curvine
            command: [ "gomplate" ]
            args: [ "-d", "config=$(FLUID_RUNTIME_CONFIG_PATH)", "-f", "/templates/cluster.toml", "-o", "/etc/curvine/curvine.toml" ]
"""  # noqa: E501 (as upstream wrote it)
_CURVINE_TEMPLATES = """
      extraResources:
        configMaps:
          - name: curvine-config
            mountPath: "/templates"
"""
_CURVINE_CLASS = """
apiVersion: data.fluid.io/v1alpha1
kind: CacheRuntimeClass
metadata:
  name: curvine-demo
fileSystemType: curvinefs
extraResources:
  configMaps:
    - name: curvine-config
      data:
        cluster.toml: |
          [master]
          meta_dir = "testing/meta"
          [journal]
          journal_addrs = [
            {{ range $index := seq 0 (sub (ds "config").master.replicas 1) }}
            {{- if $index }},{{ end }}
            {id = {{ add $index 1 }}, hostname = "{{(ds "config").master.name}}-{{$index}}.{{(ds "config").master.service.name}}", port = 8996}
            {{- end }}
          ]
          journal_dir = "testing/journal"
          [worker]
          dir_reserved = "0"
          data_dir = [
          {{- range $index, $level := (ds "config").worker.tieredStoreLevels }}
          {{- range $pathIndex, $mountPath := $level.mountPaths }}
          {{- if or $index $pathIndex }},{{ end }}
          "[{{$level.mediumType}}:{{ index $level.quotas $pathIndex | strings.ReplaceAll "i" "B"}}]{{ $mountPath }}"
          {{- end }}
          {{- end }}
          ]
dataOperationSpecs:
  - name: DataLoad
    command: ["/bin/bash", "-c"]
    args: ['/app/curvine/bin/cv load "$FLUID_DATALOAD_DATA_PATH" --watch --conf /etc/curvine.toml']
topology:
  master:
    service:
      headless: { }
    dependencies:<TEMPLATES>
    executionEntries:
      mountUFS:
        command: [bash, "-c", "/etc/curvine/mount/mountUfs.sh"]
        timeout: 30
    template:
      spec:
        restartPolicy: Always<INIT>
        containers:
          - name: master
            image: "curvine/curvine:latest"
            command: [/entrypoint.sh]
            args: [master, start]
            env:
              - name: CURVINE_CONF_FILE
                value: "/etc/curvine/curvine.toml"
              - name: POD_NAME
                valueFrom:
                  fieldRef:
                    fieldPath: metadata.name
              - name: CURVINE_MASTER_HOSTNAME
                value: "$(POD_NAME).$(FLUID_RUNTIME_COMPONENT_SVC_NAME)"
            volumeMounts:
              - name: shared-config-volume
                mountPath: /etc/curvine
              - name: curvine-mount-volume
                mountPath: /etc/curvine/mount
            imagePullPolicy: IfNotPresent
        volumes:
        - name: shared-config-volume
          emptyDir: { }
        - name: curvine-mount-volume
          configMap:
            name: curvine-mount
            defaultMode: 0755
  worker:
    service:
      headless: { }
    dependencies:<TEMPLATES>
    template:
      spec:
        restartPolicy: Always<INIT>
        containers:
          - name: worker
            image: "curvine/curvine:latest"
            command: [/entrypoint.sh]
            args: [worker, start]
            env:
              - name: CURVINE_CONF_FILE
                value: "/etc/curvine/curvine.toml"
              - name: POD_NAME
                valueFrom:
                  fieldRef:
                    fieldPath: metadata.name
              - name: CURVINE_WORKER_HOSTNAME
                value: "$(POD_NAME).$(FLUID_RUNTIME_COMPONENT_SVC_NAME)"
            volumeMounts:
              - name: shared-config-volume
                mountPath: /etc/curvine
            imagePullPolicy: IfNotPresent
        volumes:
          - name: shared-config-volume
            emptyDir: { }
  client:
    dependencies:<TEMPLATES>
    template:
      spec:
        restartPolicy: Always<INIT>
        containers:
          - name: client
            image: "curvine/curvine:latest"
            securityContext:
              privileged: true
              runAsUser: 0
            command: [/app/curvine/lib/curvine-fuse]
            args: ["--mnt-path", "$(FLUID_RUNTIME_MOUNT_PATH)", "--conf", "/etc/curvine/curvine.toml"]
            volumeMounts:
              - name: shared-config-volume
                mountPath: /etc/curvine
            imagePullPolicy: IfNotPresent
        volumes:
          - name: shared-config-volume
            emptyDir: { }
"""  # noqa: E501 (as upstream wrote it)
CURVINE_CLASS = _CURVINE_CLASS.replace("<INIT>", _CURVINE_INIT).replace("<TEMPLATES>", _CURVINE_TEMPLATES)

MOONCAKE_DATASET = """
apiVersion: data.fluid.io/v1alpha1
kind: Dataset
metadata:
  name: mooncake-demo
  namespace: default
spec:
  placement: Shared
  accessModes:
    - ReadWriteMany
  mounts:
    - name: mc
      mountPoint: "mooncakefs:///"
"""

MOONCAKE_RUNTIME = """
apiVersion: data.fluid.io/v1alpha1
kind: CacheRuntime
metadata:
  name: mooncake-demo
  namespace: default
spec:
  runtimeClassName: mooncake-demo
  master:
    replicas: 1
  worker:
    replicas: 1
    tieredStore:
      levels:
        - emptyDir:
            quota: 1Gi
          high: "0.8"
          low: "0.5"
"""


def _mooncake_container(role: str, port: int, ports: dict[str, int]) -> str:
    listed = "".join(
        f"\n              - containerPort: {p}\n                name: {n}" for n, p in ports.items()
    )
    return f"""
        containers:
          - name: {role}
            image: fluidcloudnative/mooncake:e2e
            command: [/custom-entrypoint.sh]
            args: [{role}, start]
            imagePullPolicy: IfNotPresent
            readinessProbe:
              tcpSocket:
                port: {port}
              initialDelaySeconds: 5
              periodSeconds: 5
              failureThreshold: 12
            env:
              - name: POD_NAME
                valueFrom:
                  fieldRef:
                    fieldPath: metadata.name
            ports:{listed}"""


_MOONCAKE_MASTER = _mooncake_container("master", 50051, {"rpc": 50051, "metadata": 8080, "metrics": 9003})
_MOONCAKE_WORKER = _mooncake_container("worker", 50052, {"data": 50052, "http": 9300})
# Master and worker, each with a headless Service, and no client.
MOONCAKE_CLASS = f"""
apiVersion: data.fluid.io/v1alpha1
kind: CacheRuntimeClass
metadata:
  name: mooncake-demo
fileSystemType: mooncakefs
topology:
  master:
    service:
      headless: {{}}
    executionEntries:
      reportSummary:
        command: [bash, -c, /reportSummary.sh]
        timeout: 30
    template:
      spec:
        restartPolicy: Always{_MOONCAKE_MASTER}
  worker:
    service:
      headless: {{}}
    template:
      spec:
        restartPolicy: Always{_MOONCAKE_WORKER}
"""


# The digest's edge-case fixture (3.16.4), which upstream's own generateRuntimeConfigData was run on.
_LONG_SECRET = "a-very-long-secret-name-that-goes-beyond-the-dns-label-limit-xyz"


def _ref(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


EDGE_DATASET: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "Dataset",
    "metadata": {"name": "edge", "namespace": "ns1"},
    "spec": {
        "sharedOptions": {"shared": "s", "k": "shared-k"},
        "sharedEncryptOptions": [_ref("token", _LONG_SECRET, "tok")],
        "mounts": [
            {
                "name": "m1",
                "mountPoint": "s3://b1",
                "path": "relative/path",
                "readOnly": True,
                "shared": True,
                "options": {"k": "mount-k", "amp": "a&b<c>"},
                "encryptOptions": [_ref("token", "s2", "t2")],
            },
            {
                "name": "local",
                "mountPoint": "local:///host/data",
                "path": "/abs",
                "encryptOptions": [_ref("x", "s3", "k3")],
            },
        ],
    },
}
EDGE_RUNTIME: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntime",
    "metadata": {"name": "edge", "namespace": "ns1"},
    "spec": {
        "runtimeClassName": "edge",
        "options": {"o": "runtime", "p": "runtime"},
        "master": {
            "replicas": 3,
            "options": {"p": "master"},
            "runtimeVersion": {"image": "img", "imageTag": "v2", "imagePullPolicy": "Always"},
            "args": ["x"],
            "resources": {"limits": {"memory": "1Gi"}},
            "env": [{"name": "USER_ENV", "value": "u"}],
        },
        "worker": {
            "replicas": 2,
            "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "4Gi"}},
            "volumeMounts": [{"name": "extra", "mountPath": "/extra"}],
            "tieredStore": {
                "levels": [
                    {"processMemory": {"quota": "1024Mi"}, "high": "0.9"},
                    {
                        "hostPath": {
                            "paths": ["/d1", "/d2"],
                            "quotas": ["0.5Gi", 2000000000],
                            "type": "DirectoryOrCreate",
                        }
                    },
                    {"emptyDir": {"quota": "1500Mi", "medium": "Memory"}, "low": "0.1"},
                ]
            },
        },
        "client": {"tolerations": [{"key": "t", "operator": "Exists"}]},
        "volumes": [{"name": "extra", "emptyDir": {}}, {"name": "unused", "emptyDir": {}}],
    },
}
_CONTAINER = {"containers": [{"name": "main", "image": "cache:1"}]}
EDGE_CLASS: dict[str, Any] = {
    "apiVersion": "data.fluid.io/v1alpha1",
    "kind": "CacheRuntimeClass",
    "metadata": {"name": "edge"},
    "fileSystemType": "edgefs",
    "topology": {
        "master": {
            "options": {"o": "class", "c": "class"},
            "template": {
                "spec": {
                    "containers": [{"name": "main", "image": "cache:1", "env": [{"name": "TEMPLATE_ENV"}]}]
                }
            },
        },
        "worker": {
            "service": {"headless": {}},
            "dependencies": {"secretMount": {"enabled": False}},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "main", "image": "cache:1", "resources": {"limits": {"memory": "8Gi"}}}
                    ]
                }
            },
        },
        "client": {"dependencies": {"secretMount": {"enabled": True}}, "template": {"spec": _CONTAINER}},
    },
}


def load(text_or_object: str | dict[str, Any]) -> dict[str, Any]:
    loaded = yaml.safe_load(text_or_object) if isinstance(text_or_object, str) else text_or_object
    assert isinstance(loaded, dict)
    return loaded


def config_of(
    dataset: str | dict[str, Any],
    runtime: str | dict[str, Any],
    runtime_class: str | dict[str, Any],
    namespace: str = "default",
) -> RuntimeConfig:
    return build_runtime_config(
        Dataset.model_validate(load(dataset)),
        CacheRuntime.model_validate(load(runtime)),
        CacheRuntimeClass.model_validate(load(runtime_class)),
        namespace,
    )
