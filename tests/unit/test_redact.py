"""The redaction every credential passes through on its way out (``kubectl_fluid/redact.py``): the
controller's Events (its own cases stay in test_controller_entries.py) and the plugin's bundle."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubectl_fluid.redact import MASK, names_credential, redact, redact_object

KEYS = [
    "password",
    "DB_PASSWORD",
    "secret",
    "s3.credentials.secret",
    "aws_secret_access_key",
    "access-key",
    "api_key",
    "token",
    "X-Auth-Token",
    "private-key",
    "fs.s3a.access.key",
    "authorization",
]
# A value no key or form around it contains, so finding it means it leaked.
values = st.from_regex(r"Zq[A-Za-z0-9+/_.\-]{6,30}", fullmatch=True)
FORMS = [
    "{k}={v}",
    "{k} = {v}",
    "{k}: {v}",
    '{k}: "{v}"',
    "{k}='{v}'",
    '{{"{k}":"{v}","next":"kept"}}',
    "--{k} {v}",
    "--{k}={v}",
    "export {k}='{v}'",
]


@given(st.sampled_from(KEYS), values, st.sampled_from(FORMS), st.sampled_from(["", "log line: ", "x "]))
def test_a_value_under_a_credential_key_never_survives(key: str, value: str, form: str, before: str) -> None:
    text = before + form.format(k=key, v=value) + " trailing"
    out = redact(text)
    assert value not in out
    assert MASK in out
    assert out.endswith(" trailing")
    assert redact(out) == out  # masking again changes nothing


@given(st.sampled_from(KEYS), values)
def test_json_inside_a_string_keeps_its_shape(key: str, value: str) -> None:
    """An annotation such as kubectl's last-applied-configuration: JSON that must still parse."""
    doc = json.dumps({"metadata": {"annotations": {key: value}}, "spec": {"a": 1, "s": "plain"}})
    out = redact(doc)
    assert value not in out
    assert json.loads(out) == {"metadata": {"annotations": {key: MASK}}, "spec": {"a": 1, "s": "plain"}}
    escaped = json.dumps({"annotation": doc})  # the same JSON as a string inside JSON
    assert value not in redact(escaped)
    assert json.loads(redact(escaped))


TOKENS = [
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzIn0.c2lnbmF0dXJlLXBhcnQ",
    "AKIAIOSFODNN7EXAMPLE",
    "ASIAY34FZKBOKMUTVV7A",
]


@pytest.mark.parametrize("token", TOKENS)
def test_tokens_are_masked_whatever_their_key(token: str) -> None:
    for text in (token, f"using {token} now", f"value={token}", f"[{token}]"):
        assert token not in redact(text), text


def test_bearer_and_basic_credentials_are_masked() -> None:
    out = redact(
        "GET / Authorization: Bearer abc.def-ghi_jkl= and curl -H 'authorization: Basic dXNlcjpwYXNz'"
    )
    assert "abc.def-ghi_jkl" not in out
    assert "dXNlcjpwYXNz" not in out
    assert "Bearer ******" in out
    assert "Basic ******" in out


def test_pem_private_keys_are_masked_and_certificates_kept() -> None:
    key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAbc\ndef==\n-----END EC PRIVATE KEY-----"
    cert = "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----"
    out = redact(f"before\n{key}\n{cert}\nafter")
    assert "MHcCAQEEIAbc" not in out
    assert "def==" not in out
    assert cert in out
    assert out.startswith("before\n")
    assert out.endswith("after")
    # A key cut off by a log's limit is masked to its end.
    assert "MHcC" not in redact("-----BEGIN PRIVATE KEY-----\nMHcCAQEE")


WORDS = st.sampled_from(
    [
        "mount",
        "s3://bucket/x",
        "ready",
        "10.1.0.1:9000",
        "master-0",
        "phase=Bound",
        "ufs",
        "{}",
        "1/1",
        "node-a",
    ]
)


@given(st.lists(WORDS, max_size=12))
def test_text_without_credentials_is_unchanged(words: list[str]) -> None:
    text = " ".join(words)
    assert redact(text) == text


def test_references_to_secrets_are_kept() -> None:
    """Where a credential is (a Secret's name, a token's file) is what a maintainer needs, not one."""
    for text in ("secretName: fluid-webhook-certs", "tokenFile=/var/run/secrets/token", "secretKeyRef: {"):
        assert redact(text) == text
    assert not names_credential("secretName")
    assert names_credential("SECRET_KEY")


@given(values)
def test_objects_lose_env_values_and_keys_that_name_credentials(value: str) -> None:
    pod: dict[str, Any] = {
        "metadata": {
            "annotations": {"last-applied": json.dumps({"token": value}), "example.com/api-token": value}
        },
        "spec": {
            "containers": [
                {
                    "env": [
                        {"name": "AWS_SECRET_ACCESS_KEY", "value": value},
                        {"name": "HOME", "value": "/root"},
                        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "password"}}},
                    ],
                    "args": [f"--password={value}"],
                }
            ]
        },
        "data": {"runtime.json": json.dumps({"options": {"access-key": value}})},
    }
    out = redact_object(pod)
    assert value not in json.dumps(out)
    env = out["spec"]["containers"][0]["env"]
    assert env[1] == {"name": "HOME", "value": "/root"}
    assert env[2] == pod["spec"]["containers"][0]["env"][2]  # a reference stays as it is


@given(st.sampled_from(KEYS), values, st.lists(WORDS, max_size=5), st.sampled_from(["", "İstanbul "]))
def test_a_credential_among_many_lines_is_masked_and_the_rest_kept(
    key: str, value: str, words: list[str], letter: str
) -> None:
    """Only the lines holding a credential's word are matched (a lower-case letter of another length,
    İ, takes the whole-text way): the others come back byte for byte."""
    plain = " ".join(words)
    text = f"{letter}{plain}\n{key}={value}\r\n{plain}\n"
    out = redact(text)
    assert value not in out
    assert out == f"{letter}{plain}\n{key}={MASK}\r\n{plain}\n"


def test_a_urls_password_is_masked_and_its_user_and_host_kept() -> None:
    assert (
        redact("mountPoint: s3://AKEY:sEcr3t%2Fx+y@minio:9000/bucket")
        == "mountPoint: s3://AKEY:******@minio:9000/bucket"
    )
    assert redact("GET https://user:pass@host/x") == "GET https://user:******@host/x"
    # A port is not a password: no user part, nothing masked.
    assert redact("http://host:9000/x s3://bucket/data") == "http://host:9000/x s3://bucket/data"
