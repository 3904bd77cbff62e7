"""runtime.json against Go itself: hack/go-oracle decodes what render_json writes into upstream's
CacheRuntimeConfig types and encodes it again with encoding/json; for any config, hostile strings
included, the bytes must come back unchanged (field order, omitempty, map order, escaping).
runtime.sh's maps are that same JSON."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from kubectl_fluid.runtimeconfig import RuntimeConfig, flatten, render_json, render_sh
from tests.unit.go_oracle import GoOracle
from tests.unit.hostile import runtime_configs
from tests.unit.samples import spec_config
from tests.unit.shells import SHELLS, source_and_dump
from tests.unit.upstream_samples import EDGE_CLASS, EDGE_DATASET, EDGE_RUNTIME, config_of

# What the product wrote before it followed upstream (keys sorted, empty fields kept): the check
# below must tell it apart from what Go writes.
OLD_SPEC_JSON = (
    '{"accessModes":["ReadOnlyMany"],'
    '"master":{"enabled":true,"name":"ds1-master","options":{},"replicas":1,'
    '"service":{"name":"svc-ds1-master"},"tieredStoreLevels":[]},'
    '"mounts":[{"encryptOptions":{},"mountPoint":"hdfs://nn:8020/data","name":"default","options":{},'
    '"path":"/default","readOnly":false,"shared":false}],'
    '"targetPath":"/runtime-mnt/cache/default/ds1/cache-fuse",'
    '"worker":{"enabled":true,"name":"ds1-worker","options":{},"replicas":1,'
    '"service":{"name":"svc-ds1-worker"},"tieredStoreLevels":[]}}'
)


def test_go_tells_the_old_shape_from_its_own(oracle: GoOracle) -> None:
    assert oracle.runtime_json(OLD_SPEC_JSON) != OLD_SPEC_JSON
    assert oracle.runtime_json(OLD_SPEC_JSON) == render_json(spec_config())


def test_the_edge_fixture_is_what_go_writes(oracle: GoOracle) -> None:
    doc = render_json(config_of(EDGE_DATASET, EDGE_RUNTIME, EDGE_CLASS, "ns1"))
    assert oracle.runtime_json(doc) == doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runtime_configs)
def test_any_config_is_what_go_writes(oracle: GoOracle, config: RuntimeConfig) -> None:
    doc = render_json(config)
    assert oracle.runtime_json(doc) == doc


def _with_options(options: dict[str, str]) -> RuntimeConfig:
    config = spec_config()
    mount = config.mounts[0].model_copy(update={"options": options})
    return config.model_copy(update={"mounts": [mount]})


def test_html_characters_are_escaped_as_go_does_in_both_files(tmp_path: Path) -> None:
    config = _with_options({"amp": "a&b<c>", "sep": "x\u2028y\u2029z", "quote": "'\"\\"})
    escaped = '{"amp":"a\\u0026b\\u003cc\\u003e","quote":"\'\\"\\\\","sep":"x\\u2028y\\u2029z"}'
    assert f'"options":{escaped}' in render_json(config)
    # runtime.sh holds the map as that same JSON; a JSON parser reads the characters back.
    assert dict(flatten(config))["MOUNT_0_OPTIONS"] == escaped
    for shell in SHELLS:
        value = source_and_dump(shell, render_sh(config), tmp_path)["MOUNT_0_OPTIONS"]
        assert value == escaped, shell
        assert json.loads(value) == {"amp": "a&b<c>", "sep": "x\u2028y\u2029z", "quote": "'\"\\"}
