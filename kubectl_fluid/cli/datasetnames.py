"""The one check of a dataset name as typed, for every verb that takes one (``inject --dataset``,
``config show DATASET``): the CRD's own rule in the plugin's words, before any request, so a name
that cannot exist is never answered "not found"."""

from __future__ import annotations

from kubectl_fluid.api import names
from kubectl_fluid.cli.errors import CliError

# The words for the Dataset kind, as kubectl takes them (plural, singular and full names): ``inspect
# dataset DS`` and its completion.
DATASET_WORDS = ("dataset", "datasets", "dataset.data.fluid.io", "datasets.data.fluid.io")


def checked_dataset(name: str) -> str:
    """``name`` when it can name a Dataset, else CliError saying what is wrong and what to pass."""
    if not name.strip():
        raise CliError('dataset "": a dataset name is needed; `kubectl fluid datasets` lists them')
    if "/" in name:
        raise CliError(
            f'dataset "{name}" names a namespace: datasets are read from one namespace; pass the bare '
            "name, and the namespace with -n"
        )
    problem = names.dataset_name_error(name)
    if problem:
        raise CliError(f'dataset "{name}": {problem}')
    return name
