"""The protobuf reader against answers written here in the wire format (the real API server's are
compared with its JSON in tests/e2e/test_kube_protobuf.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.kube import protobuf
from kubectl_fluid.kube.protobuf import ProtobufError
from tests.unit.protobuf_writer import CONTENT_TYPE, envelope, field, pod_list_bytes, varint

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=63)
volumes = st.one_of(
    st.builds(lambda n, c: {"name": n, "configMap": {"name": c}}, names, names),
    st.builds(lambda n, c: {"name": n, "persistentVolumeClaim": {"claimName": c}}, names, names),
    st.builds(lambda n: {"name": n}, names),
)
pods = st.builds(
    lambda name, ns, vols: {"metadata": {"name": name, "namespace": ns}, "spec": {"volumes": vols}},
    names,
    names,
    st.lists(volumes, max_size=6),
)


@given(st.lists(pods, max_size=8), st.one_of(st.none(), names))
def test_a_pod_list_reads_back_names_volumes_and_the_token(
    listed: list[dict[str, Any]], token: str | None
) -> None:
    data = pod_list_bytes(listed, token)
    assert protobuf.is_protobuf(data)
    assert protobuf.pod_list(data) == (listed, token)
    assert protobuf.list_continue(data) == token


def test_long_fields_need_multi_byte_lengths() -> None:
    many = [{"name": f"v{i}", "configMap": {"name": f"fluid-runtime-config-ds{i}"}} for i in range(64)]
    big: dict[str, Any] = {"metadata": {"name": "p" * 63, "namespace": "n"}, "spec": {"volumes": many}}
    data = pod_list_bytes([big] * 3, "t" * 300)
    assert protobuf.pod_list(data) == ([big] * 3, "t" * 300)


@given(st.lists(pods, min_size=1, max_size=3), st.data())
def test_an_answer_cut_short_is_an_error_not_a_shorter_list(
    listed: list[dict[str, Any]], data: st.DataObject
) -> None:
    whole = pod_list_bytes(listed, "next")
    # Cut anywhere before the object ends (HTTP's length says whether the rest came: a message cut
    # between two of its fields is a valid shorter message, by protobuf's design).
    end_of_object = len(whole) - len(CONTENT_TYPE)
    cut = data.draw(st.integers(min_value=len(protobuf.MAGIC), max_value=end_of_object - 1))
    with pytest.raises(ProtobufError):
        protobuf.pod_list(whole[:cut])


def test_json_and_foreign_bytes_are_not_protobuf() -> None:
    assert not protobuf.is_protobuf(b'{"kind":"PodList"}')
    with pytest.raises(ProtobufError, match="no k8s magic"):
        protobuf.pod_list(b'{"kind":"PodList"}')
    with pytest.raises(ProtobufError, match="wire type 3"):
        protobuf.pod_list(protobuf.MAGIC + varint(2 << 3 | 3))
    with pytest.raises(ProtobufError, match="without an object"):
        protobuf.pod_list(protobuf.MAGIC + field(1, b""))


def test_a_status_reads_as_its_json_fields() -> None:
    details = field(1, "x") + field(2, "") + field(3, "pods")
    raw = field(2, "Failure") + field(3, 'pods "x" is forbidden') + field(4, "Forbidden") + field(5, details)
    data = envelope(raw + field(6, 403))
    assert protobuf.status(data) == {
        "message": 'pods "x" is forbidden',
        "reason": "Forbidden",
        "details": {"name": "x", "group": "", "kind": "pods"},
        "code": 403,
    }
