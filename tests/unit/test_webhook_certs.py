"""The webhook's PKI (SPEC §4, TLS): what it issues, when a stored pair must be replaced, the files it
writes, the caBundle patch it computes, and serving rotated files from a live TLS server without a
restart (real sockets on loopback)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import logging
import os
import ssl
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID

from kubectl_fluid.api import names
from webhook import certs
from webhook.cabundle import ca_bundle_ops
from webhook.certs import CertBundle
from webhook.certsecret import bundle_of
from webhook.tlsreload import CertReloader

DNS = certs.service_dns_names(names.WEBHOOK_SERVICE, names.FLUID_NAMESPACE)
IPS = ["127.0.0.1"]
# Every certificate a test checks against NOW is issued at NOW: a module collected long before it runs
# (the e2e suite runs first) would otherwise check certificates issued later than NOW + their backdate.
NOW = datetime.now(UTC)


@pytest.fixture(scope="module")
def bundle() -> CertBundle:
    return certs.generate(names.WEBHOOK_CA_NAME, DNS, IPS, now=NOW)


def load(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


# --------------------------------------------------------------------------- names and issuing


def test_service_dns_names() -> None:
    assert certs.service_dns_names("fluid-webhook", "fluid-system") == [
        "fluid-webhook",
        "fluid-webhook.fluid-system",
        "fluid-webhook.fluid-system.svc",
        "fluid-webhook.fluid-system.svc.cluster.local",
    ]
    assert certs.service_dns_names("w", "ns", "example.org")[-1] == "w.ns.svc.example.org"


def test_generated_pair_passes_a_strict_rfc5280_verifier_for_every_name(bundle: CertBundle) -> None:
    store = verification.Store([load(bundle.ca_cert)])
    targets: list[x509.DNSName | x509.IPAddress] = [x509.DNSName(d) for d in DNS]
    targets.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    for target in targets:
        verifier = verification.PolicyBuilder().store(store).time(NOW).build_server_verifier(target)
        chain = verifier.verify(load(bundle.cert), [])
        assert chain[-1] == load(bundle.ca_cert)
    with pytest.raises(verification.VerificationError):
        verification.PolicyBuilder().store(store).time(NOW).build_server_verifier(
            x509.DNSName("elsewhere.example")
        ).verify(load(bundle.cert), [])


def test_generated_certificates_carry_what_verifiers_look_for(bundle: CertBundle) -> None:
    ca, cert = load(bundle.ca_cert), load(bundle.cert)
    ca_constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert ca_constraints.critical
    assert ca_constraints.value.ca
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ca_ski.digest
    cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    for c in (ca, cert):
        key = c.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert key.curve.name == "secp256r1"
    # A year from issue, backdated an hour for peers whose clock runs behind; the CA ten years.
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == timedelta(days=365, hours=1)
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == timedelta(days=3650, hours=1)
    assert cert.not_valid_before_utc < datetime.now(UTC) - timedelta(minutes=59)
    assert certs.sans(bundle.cert) == (set(DNS), {ipaddress.ip_address("127.0.0.1")})
    assert certs.problem(bundle, DNS, IPS, NOW) is None


def test_a_certificate_needs_at_least_one_name() -> None:
    with pytest.raises(ValueError, match="at least one"):
        certs.generate("ca", [], [])
    only_ip = certs.generate("ca", [], ["::1"], now=NOW)
    assert certs.sans(only_ip.cert) == (set(), {ipaddress.ip_address("::1")})
    assert certs.problem(only_ip, [], ["0:0:0:0:0:0:0:1"], NOW) is None  # an address, however spelt


def test_long_names_fit_the_common_name_limit() -> None:
    long_ns = "n" * 63
    issued = certs.generate("c" * 80, certs.service_dns_names("fluid-webhook", long_ns), [], now=NOW)
    assert certs.problem(issued, certs.service_dns_names("fluid-webhook", long_ns), [], NOW) is None


# --------------------------------------------------------------------------- renewal


def test_needs_renewal_inside_the_margin_only(bundle: CertBundle) -> None:
    assert not certs.needs_renewal(bundle.cert, NOW)
    assert not certs.needs_renewal(bundle.cert, NOW + timedelta(days=330))
    assert certs.needs_renewal(bundle.cert, NOW + timedelta(days=336))
    assert certs.needs_renewal(bundle.cert, NOW + timedelta(days=400))
    assert not certs.needs_renewal(bundle.cert, NOW + timedelta(days=300), margin_days=60)
    assert certs.needs_renewal(bundle.cert, NOW + timedelta(days=306), margin_days=60)
    assert certs.needs_renewal(b"not a certificate", NOW)


def test_a_short_lived_cert_is_not_due_the_moment_it_is_made() -> None:
    # Lifetime (3 days + the backdate) below the 30-day margin: renew in the last third instead.
    short = certs.generate("ca", ["a"], [], days=3, now=NOW)
    assert not certs.needs_renewal(short.cert, NOW)
    assert not certs.needs_renewal(short.cert, NOW + timedelta(days=1.9))
    assert certs.needs_renewal(short.cert, NOW + timedelta(days=2.1))


def test_problem_names_what_is_wrong(bundle: CertBundle) -> None:
    other = certs.generate("other", DNS, IPS, now=NOW)
    cases: dict[str, CertBundle] = {
        "CA unreadable": CertBundle(b"junk", bundle.ca_key, bundle.cert, bundle.key),
        "CA key is not the EC key of the CA certificate": CertBundle(
            bundle.ca_cert, other.ca_key, bundle.cert, bundle.key
        ),
        "serving certificate or key unreadable": CertBundle(bundle.ca_cert, bundle.ca_key, b"", bundle.key),
        "serving key does not match": CertBundle(bundle.ca_cert, bundle.ca_key, bundle.cert, other.key),
        "not signed by the CA": CertBundle(bundle.ca_cert, bundle.ca_key, other.cert, other.key),
    }
    for expected, broken in cases.items():
        found = certs.problem(broken, DNS, IPS, NOW)
        assert found is not None
        assert expected in found
    missing = certs.problem(bundle, [*DNS, "fluid-webhook.other"], [*IPS, "10.0.0.7"], NOW)
    assert missing == "serving certificate does not name fluid-webhook.other, 10.0.0.7"
    assert certs.problem(bundle, ["FLUID-WEBHOOK"], [], NOW) is None  # DNS names ignore case
    due = certs.problem(bundle, DNS, IPS, NOW + timedelta(days=340))
    assert due is not None
    assert due.startswith("serving certificate expires")
    ca_due = certs.problem(bundle, DNS, IPS, NOW + timedelta(days=3630))
    assert ca_due is not None
    assert ca_due.startswith("CA expires")


def test_renew_keeps_a_sound_ca_and_every_name_already_served(bundle: CertBundle) -> None:
    renewed = certs.renew(bundle, "ignored", ["fluid-webhook.extra"], [], now=NOW + timedelta(days=340))
    assert renewed.ca_cert == bundle.ca_cert
    assert renewed.ca_key == bundle.ca_key
    assert certs.serial(renewed.cert) != certs.serial(bundle.cert)
    dns, ips = certs.sans(renewed.cert)
    assert dns == {*DNS, "fluid-webhook.extra"}
    assert ips == {ipaddress.ip_address("127.0.0.1")}
    assert certs.problem(renewed, DNS, IPS, NOW + timedelta(days=340)) is None


def test_renew_replaces_a_ca_that_is_due_or_broken(bundle: CertBundle) -> None:
    late = certs.renew(bundle, "fresh-ca", DNS, IPS, now=NOW + timedelta(days=3630))
    assert late.ca_cert != bundle.ca_cert
    assert load(late.ca_cert).subject.rfc4514_string() == "CN=fresh-ca"
    broken = CertBundle(b"junk", bundle.ca_key, bundle.cert, bundle.key)
    assert certs.renew(broken, "x", DNS, IPS).ca_cert != bundle.ca_cert
    assert certs.problem(certs.renew(None, "x", DNS, IPS, now=NOW), DNS, IPS, NOW) is None


# --------------------------------------------------------------------------- Secret and files


def test_bundle_round_trips_through_secret_data(bundle: CertBundle) -> None:
    data = {k: base64.b64encode(v).decode() for k, v in bundle.as_files().items()}
    assert sorted(data) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert bundle_of({"data": data}) == bundle
    assert bundle_of({"data": {**data, "tls.key": "not base64!"}}) is None
    assert bundle_of({"data": {k: v for k, v in data.items() if k != "ca.key"}}) is None
    assert bundle_of({}) is None


def test_write_files_atomically_and_only_when_changed(bundle: CertBundle, tmp_path: Path) -> None:
    cert_dir = tmp_path / "certs"
    assert certs.write_files(bundle, cert_dir)
    assert sorted(p.name for p in cert_dir.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert (cert_dir / "tls.crt").read_bytes() == bundle.cert
    assert (cert_dir / "tls.key").read_bytes() == bundle.key
    assert (cert_dir / "ca.crt").read_bytes() == bundle.ca_cert
    assert stat.S_IMODE((cert_dir / "tls.key").stat().st_mode) == 0o600
    before = (cert_dir / "tls.crt").stat()
    assert not certs.write_files(bundle, cert_dir)
    assert (cert_dir / "tls.crt").stat().st_ino == before.st_ino
    renewed = certs.renew(bundle, "x", DNS, IPS)
    assert certs.write_files(renewed, cert_dir)
    # Replaced by rename (a new inode), never rewritten in place; no temp files left behind.
    assert (cert_dir / "tls.crt").stat().st_ino != before.st_ino
    assert sorted(p.name for p in cert_dir.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


# --------------------------------------------------------------------------- caBundle patch


def webhook_config(*bundles: str | None) -> dict[str, Any]:
    hooks: list[dict[str, Any]] = []
    for i, ca in enumerate(bundles):
        client_config: dict[str, Any] = {"url": f"https://127.0.0.1:1/{i}"}
        if ca is not None:
            client_config["caBundle"] = ca
        hooks.append({"name": f"w{i}.fluid.io", "clientConfig": client_config})
    return {"metadata": {"name": "cfg", "resourceVersion": "42"}, "webhooks": hooks}


def test_ca_bundle_ops_touch_only_the_webhooks_that_differ() -> None:
    ca = b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
    ours = base64.b64encode(ca).decode()
    assert ca_bundle_ops(webhook_config(ours, ours), ca) == []
    assert ca_bundle_ops({"metadata": {"resourceVersion": "1"}}, ca) == []
    ops = ca_bundle_ops(webhook_config(ours, None, "b3RoZXI=", "%%"), ca)
    assert ops == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": ours},
        {"op": "add", "path": "/webhooks/2/clientConfig/caBundle", "value": ours},
        {"op": "add", "path": "/webhooks/3/clientConfig/caBundle", "value": ours},
    ]
    no_client_config = {"metadata": {"resourceVersion": "7"}, "webhooks": [{"name": "w"}]}
    assert ca_bundle_ops(no_client_config, ca)[1] == {
        "op": "add",
        "path": "/webhooks/0/clientConfig",
        "value": {"caBundle": ours},
    }


# --------------------------------------------------------------------------- reload without restart


@asynccontextmanager
async def tls_server(context: ssl.SSLContext) -> AsyncIterator[int]:
    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"ok")
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.drain()
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def served_serial(port: int, *cas: bytes) -> int:
    """Connect as a strict client trusting ``cas`` and naming 127.0.0.1; the serial it was served."""
    client = ssl.create_default_context(cadata="".join(ca.decode() for ca in cas))
    client.verify_flags |= ssl.VERIFY_X509_STRICT
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="127.0.0.1")
    try:
        assert await reader.read() == b"ok"  # the server still completes requests
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


def serving(cert_dir: Path, body: Callable[[CertReloader, int], Awaitable[None]]) -> None:
    async def main() -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        reloader = CertReloader(context, cert_dir / "tls.crt", cert_dir / "tls.key")
        async with tls_server(context) as port:
            await body(reloader, port)

    asyncio.run(main())


def test_rotated_files_are_served_without_a_restart(bundle: CertBundle, tmp_path: Path) -> None:
    certs.write_files(bundle, tmp_path)
    renewed = certs.renew(bundle, "x", DNS, IPS)  # same CA, new serial
    other_ca = certs.generate("another-ca", DNS, IPS)

    async def body(reloader: CertReloader, port: int) -> None:
        assert await served_serial(port, bundle.ca_cert) == certs.serial(bundle.cert)
        assert not reloader.maybe_reload()  # nothing changed

        certs.write_files(renewed, tmp_path)
        assert reloader.maybe_reload()
        assert await served_serial(port, bundle.ca_cert) == certs.serial(renewed.cert)
        assert not reloader.maybe_reload()

        certs.write_files(other_ca, tmp_path)
        assert reloader.maybe_reload()
        assert await served_serial(port, other_ca.ca_cert) == certs.serial(other_ca.cert)
        assert reloader.reloads == 2

    serving(tmp_path, body)


def test_a_half_rotated_or_broken_pair_keeps_the_old_one_serving(
    bundle: CertBundle, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    certs.write_files(bundle, tmp_path)
    renewed = certs.renew(bundle, "x", DNS, IPS)
    old_serial, new_serial = certs.serial(bundle.cert), certs.serial(renewed.cert)
    crt, key = tmp_path / "tls.crt", tmp_path / "tls.key"

    async def body(reloader: CertReloader, port: int) -> None:
        # The new cert has landed, its key not yet: the pair does not match.
        crt.write_bytes(renewed.cert)
        with caplog.at_level(logging.WARNING, logger="webhook.tlsreload"):
            assert not reloader.maybe_reload()
            assert not reloader.maybe_reload()  # same files: not retried, not logged again
        assert len([r for r in caplog.records if "does not load" in r.message]) == 1
        assert await served_serial(port, bundle.ca_cert) == old_serial

        key.write_bytes(renewed.key)
        assert reloader.maybe_reload()
        assert await served_serial(port, bundle.ca_cert) == new_serial

        # Garbage, an empty key (a write cut short) and a missing file: still the last good pair.
        crt.write_bytes(b"-----BEGIN CERTIFICATE-----\ntruncated")
        assert not reloader.maybe_reload()
        crt.write_bytes(renewed.cert)
        key.write_bytes(b"")
        assert not reloader.maybe_reload()
        key.unlink()
        assert not reloader.maybe_reload()
        assert await served_serial(port, bundle.ca_cert) == new_serial

        certs.write_files(bundle, tmp_path)
        assert reloader.maybe_reload()
        assert await served_serial(port, bundle.ca_cert) == old_serial

    serving(tmp_path, body)


def test_watch_picks_up_rotation(bundle: CertBundle, tmp_path: Path) -> None:
    certs.write_files(bundle, tmp_path)
    renewed = certs.renew(bundle, "x", DNS, IPS)

    async def body(reloader: CertReloader, port: int) -> None:
        task = asyncio.create_task(reloader.watch(period=0.02))
        try:
            certs.write_files(renewed, tmp_path)
            deadline = asyncio.get_running_loop().time() + 5
            while await served_serial(port, bundle.ca_cert) != certs.serial(renewed.cert):
                assert asyncio.get_running_loop().time() < deadline, "rotation not picked up"
                await asyncio.sleep(0.02)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    serving(tmp_path, body)


def test_reloader_refuses_to_start_without_a_loadable_pair(bundle: CertBundle, tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_bytes(bundle.cert)
    (tmp_path / "tls.key").write_bytes(certs.generate("x", ["a"], []).key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with pytest.raises(ssl.SSLError):
        CertReloader(context, tmp_path / "tls.crt", tmp_path / "tls.key")
    with pytest.raises(FileNotFoundError):
        CertReloader(context, tmp_path / "absent.crt", tmp_path / "tls.key")
    assert sorted(os.listdir(tmp_path)) == ["tls.crt", "tls.key"]  # nothing written beside them
