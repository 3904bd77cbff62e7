"""The plugin profile (SPEC §4): strict loading, the clientless default, what manifests ship."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.errors import ProfileError
from webhook.plugins import PLUGINS, Context
from webhook.profile import DEFAULT_PROFILE, load_profile


def test_default_profile_is_what_the_docs_say() -> None:
    profile, warnings = load_profile(DEFAULT_PROFILE)
    assert warnings == []
    assert profile.describe() == {
        "clientless": {
            "withDataset": ["RuntimeConfigInjector", "MountPropagationInjector"],
            "withoutDataset": [],
        },
        "serverless": {"withDataset": ["DatasetUsageInjector"], "withoutDataset": []},
        "serverful": {
            "withDataset": [
                "MountPropagationInjector",
                "RequireNodeWithFuse",
                "NodeAffinityWithCache",
                "DatasetUsageInjector",
            ],
            "withoutDataset": ["MountPropagationInjector"],
        },
    }
    assert [p.name for p in profile.plugins("serverful", with_dataset=True)] == [
        "MountPropagationInjector",
        "RequireNodeWithFuse",
        "NodeAffinityWithCache",
        "DatasetUsageInjector",
    ]
    assert profile.plugins("clientless", with_dataset=False) == ()


def test_registry_names_match_plugins() -> None:
    assert sorted(PLUGINS) == [
        "DatasetUsageInjector",
        "MountPropagationInjector",
        "NodeAffinityWithCache",
        "PreferNodesWithoutCache",
        "RequireNodeWithFuse",
        "RuntimeConfigInjector",
    ]
    assert all(factory().name == name for name, factory in PLUGINS.items())


def test_unknown_plugin_stops_start_up_naming_it_and_the_known_ones() -> None:
    text = "plugins:\n  serverful:\n    withDataset: [MountPropagationInjector, FuseSidecar]\n"
    with pytest.raises(ProfileError) as error:
        load_profile(text)
    message = str(error.value)
    assert '"FuseSidecar"' in message
    assert "plugins.serverful.withDataset" in message
    assert ", ".join(sorted(PLUGINS)) in message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plugins:\n",
        "plugins:\n  clientless:\n",
        "plugins:\n  serverful:\n    withDataset: [DatasetUsageInjector]\n",
    ],
)
def test_missing_clientless_section_gets_the_default_and_a_warning(text: str) -> None:
    profile, warnings = load_profile(text)
    assert [p.name for p in profile.plugins("clientless", with_dataset=True)] == [
        "RuntimeConfigInjector",
        "MountPropagationInjector",
    ]
    assert profile.plugins("clientless", with_dataset=False) == ()
    assert len(warnings) == 1
    assert '"clientless"' in warnings[0]
    assert "RuntimeConfigInjector" in warnings[0]


def test_missing_other_sections_mean_no_plugins() -> None:
    profile, warnings = load_profile("plugins:\n  clientless:\n    withDataset: [RuntimeConfigInjector]\n")
    assert warnings == []
    assert profile.plugins("serverful", with_dataset=True) == ()
    assert profile.plugins("serverless", with_dataset=False) == ()


def test_clientless_without_dataset_is_ignored_with_a_warning() -> None:
    text = (
        "plugins:\n  clientless:\n    withDataset: [RuntimeConfigInjector]\n"
        "    withoutDataset: [DatasetUsageInjector]\n"
    )
    profile, warnings = load_profile(text)
    assert profile.plugins("clientless", with_dataset=False) == ()
    assert len(warnings) == 1
    assert "clientless.withoutDataset is ignored" in warnings[0]


def test_an_explicitly_empty_clientless_list_is_kept() -> None:
    profile, warnings = load_profile("plugins:\n  clientless:\n    withDataset: []\n")
    assert warnings == []
    assert profile.plugins("clientless", with_dataset=True) == ()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("plugins: [a]", "plugins must be a mapping"),
        ("- a", "the document must be a mapping"),
        ("plugin:\n  clientless: {}\n", "unknown key 'plugin'"),
        ("plugins:\n  clientles: {}\n", "unknown key 'clientles' in plugins"),
        ("plugins:\n  serverful:\n    withDatasets: []\n", "unknown key 'withDatasets'"),
        ("plugins:\n  serverful:\n    withDataset: DatasetUsageInjector\n", "must be a list"),
        ("plugins:\n  serverful:\n    withDataset: [1]\n", "must be a list"),
        (
            "plugins:\n  serverful:\n    withDataset: [DatasetUsageInjector, DatasetUsageInjector]\n",
            "twice",
        ),
        ("plugins: {clientless: [", "not valid YAML"),
    ],
)
def test_malformed_profiles_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(ProfileError, match=fragment):
        load_profile(text)


def test_custom_registry_and_one_instance_per_plugin() -> None:
    made: list[str] = []

    class Marker:
        name = "Marker"

        def __init__(self) -> None:
            made.append(self.name)

        def mutate(self, pod: dict[str, Any], ctx: Context) -> None:
            pod["marked"] = True

    text = "plugins:\n  clientless: {withDataset: [Marker]}\n  serverful: {withoutDataset: [Marker]}\n"
    profile, _ = load_profile(text, {"Marker": Marker})
    assert made == ["Marker"]
    assert (
        profile.plugins("clientless", with_dataset=True)[0]
        is profile.plugins("serverful", with_dataset=False)[0]
    )
