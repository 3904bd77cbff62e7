"""DatasetUsageInjector (SPEC §4): record the datasets a pod uses in ``fluid.io/datasets-in-use``, so
tools (``kubectl fluid explain``, dataset deletion checks) can tell without resolving PVCs again."""

from __future__ import annotations

from typing import Any, Final

from kubectl_fluid.api import names
from webhook import podedit
from webhook.plugins.base import Context


class DatasetUsageInjector:
    name: Final = "DatasetUsageInjector"

    def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
        current = ((pod.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_DATASETS_IN_USE)
        in_use = {part.strip() for part in (current or "").split(",")}
        in_use.update(ctx.datasets)
        in_use.discard("")
        value = ",".join(sorted(in_use))
        # Never write an empty annotation; the same value written the same way writes nothing.
        if value and value != current:
            podedit.annotations_of(pod)[names.ANNOTATION_DATASETS_IN_USE] = value
