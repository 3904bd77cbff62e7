"""The webhook's PKI (SPEC §4, TLS): a CA, a serving certificate it signs, the checks that decide whether
a stored pair may still be served, and writing the files the server loads.

Everything is PEM bytes, so the same values travel through a Secret, files and ``caBundle`` unchanged.
Keys are EC P-256: small, fast to generate (replicas race to bootstrap), accepted by every TLS stack the
API server uses. Nothing here talks to the API server (see ``certsecret`` and ``cabundle``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificatePublicKeyTypes,
    PrivateKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubectl_fluid.api import names
from kubectl_fluid.files import atomic_write

DEFAULT_DAYS = 365
# The CA outlives many serving certificates: renewing only the serving cert keeps ``caBundle`` as it
# is, so replicas still serving the previous cert stay trusted while they pick up the new one.
DEFAULT_CA_DAYS = 3650
DEFAULT_MARGIN_DAYS = 30
# Backdated so a peer whose clock runs a little behind (another node, the API server) accepts a cert
# issued a moment ago.
BACKDATE = timedelta(hours=1)
# X.509 caps a commonName at 64 characters; verifiers read the SANs anyway.
_CN_MAX = 64

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
T = TypeVar("T")


@dataclass(frozen=True)
class CertBundle:
    """A CA (certificate and key) and a serving certificate and key it signed, all PEM."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes

    def as_files(self) -> dict[str, bytes]:
        """Secret keys (and file names) → content."""
        return {
            names.TLS_CERT_FILE: self.cert,
            names.TLS_KEY_FILE: self.key,
            names.CA_CERT_FILE: self.ca_cert,
            names.CA_KEY_FILE: self.ca_key,
        }

    @classmethod
    def from_files(cls, files: Mapping[str, bytes]) -> CertBundle | None:
        """The bundle in ``files`` (Secret data, decoded), or None when a part is missing."""
        try:
            return cls(
                ca_cert=files[names.CA_CERT_FILE],
                ca_key=files[names.CA_KEY_FILE],
                cert=files[names.TLS_CERT_FILE],
                key=files[names.TLS_KEY_FILE],
            )
        except KeyError:
            return None


def service_dns_names(service: str, namespace: str, cluster_domain: str = names.CLUSTER_DOMAIN) -> list[str]:
    """Every name a client may use for a Service; the API server itself dials ``svc.ns.svc``."""
    host = names.service_host(service, namespace)
    return [service, f"{service}.{namespace}", host, f"{host}.{cluster_domain}"]


# --------------------------------------------------------------------------- issuing


def generate(
    ca_name: str,
    dns_names: list[str],
    ips: list[str],
    days: int = DEFAULT_DAYS,
    *,
    ca_days: int = DEFAULT_CA_DAYS,
    now: datetime | None = None,
) -> CertBundle:
    """A new CA named ``ca_name`` and a serving certificate for ``dns_names`` and ``ips`` it signed."""
    now = _utc(now)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, ca_name[:_CN_MAX])])
    ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        _validity(x509.CertificateBuilder(), now, ca_days)
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_cert_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    cert, key = issue(ca_cert_pem, _key_pem(ca_key), dns_names, ips, days, now=now)
    return CertBundle(ca_cert=ca_cert_pem, ca_key=_key_pem(ca_key), cert=cert, key=key)


def issue(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    dns_names: Iterable[str],
    ips: Iterable[str],
    days: int = DEFAULT_DAYS,
    *,
    now: datetime | None = None,
) -> tuple[bytes, bytes]:
    """A serving certificate and its key (PEM), signed by the given CA."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an EC key")
    dns = _unique(d.lower() for d in dns_names)
    addrs = _unique(ipaddress.ip_address(i) for i in ips)
    if not dns and not addrs:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    key = ec.generate_private_key(ec.SECP256R1())
    first = dns[0] if dns else str(addrs[0])
    san: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    san += [x509.IPAddress(a) for a in addrs]
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        _validity(x509.CertificateBuilder(), _utc(now), days)
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, first[:_CN_MAX])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def renew(
    current: CertBundle | None,
    ca_name: str,
    dns_names: list[str],
    ips: list[str],
    days: int = DEFAULT_DAYS,
    *,
    margin_days: int = DEFAULT_MARGIN_DAYS,
    now: datetime | None = None,
) -> CertBundle:
    """What to store instead of ``current``: a new serving cert under the same CA while that CA is
    sound and not due, so ``caBundle`` stays put; otherwise a new CA too.

    The new cert names the current cert's SANs as well as the wanted ones: two instances sharing the
    Secret with different wishes (a local run adding 127.0.0.1) then converge instead of taking turns
    overwriting each other."""
    now = _utc(now)
    if current is None or _ca_problem(current, now, margin_days) is not None:
        return generate(ca_name, dns_names, ips, days, now=now)
    have_dns, have_ips = _sans_or_empty(current.cert)
    cert, key = issue(
        current.ca_cert,
        current.ca_key,
        [*dns_names, *sorted(have_dns)],
        [*ips, *sorted(str(a) for a in have_ips)],
        days,
        now=now,
    )
    return CertBundle(ca_cert=current.ca_cert, ca_key=current.ca_key, cert=cert, key=key)


# --------------------------------------------------------------------------- checking


def needs_renewal(cert_pem: bytes, now: datetime, margin_days: int = DEFAULT_MARGIN_DAYS) -> bool:
    """True when the certificate expires within the margin, or cannot be read.

    The margin is at most a third of the cert's lifetime: a cert issued for fewer days than the margin
    would otherwise be due the moment it is made, and replicas would reissue it on every check."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError:
        return True
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    margin = min(timedelta(days=margin_days), lifetime / 3)
    return _utc(now) + margin >= cert.not_valid_after_utc


def problem(
    bundle: CertBundle,
    dns_names: Iterable[str],
    ips: Iterable[str],
    now: datetime,
    margin_days: int = DEFAULT_MARGIN_DAYS,
) -> str | None:
    """Why ``bundle`` must not be served as it is (a sentence for the log), or None when it is fine:
    every part parses, keys match their certs, the CA signed the serving cert, neither is due for
    renewal, and the serving cert names every wanted DNS name and IP."""
    return (
        _ca_problem(bundle, now, margin_days)
        or _serving_problem(bundle, now, margin_days)
        or _missing_sans(bundle.cert, dns_names, ips)
    )


def sans(cert_pem: bytes) -> tuple[set[str], set[IPAddress]]:
    """The DNS names (lower case) and IP addresses a certificate is valid for."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set(), set()
    dns = {d.lower() for d in ext.get_values_for_type(x509.DNSName)}
    # An iPAddress SAN may also hold a network (name constraints); only addresses name a server.
    ips = {a for a in ext.get_values_for_type(x509.IPAddress) if not isinstance(a, IPNetwork)}
    return dns, ips


def serial(cert_pem: bytes) -> int:
    return x509.load_pem_x509_certificate(cert_pem).serial_number


# --------------------------------------------------------------------------- files


def write_files(bundle: CertBundle, cert_dir: str | os.PathLike[str]) -> bool:
    """Write ``tls.crt``, ``tls.key`` and ``ca.crt`` into ``cert_dir`` (not the CA key: the server does
    not need it on disk). Each file is replaced atomically (temp file + rename), so a reader sees the
    old or the new content, never half of it; the key goes last, so a reader between the two renames
    sees a new cert with the old key, which fails loudly (``CertReloader`` keeps the old pair) rather
    than silently. Unchanged files are left alone, so their mtime does not trigger reloads. True when
    anything was written."""
    directory = Path(cert_dir)
    directory.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, content, mode in (
        (names.CA_CERT_FILE, bundle.ca_cert, 0o644),
        (names.TLS_CERT_FILE, bundle.cert, 0o644),
        (names.TLS_KEY_FILE, bundle.key, 0o600),
    ):
        target = directory / name
        with contextlib.suppress(OSError):
            if target.read_bytes() == content:
                continue
        atomic_write(target, content, mode)
        changed = True
    return changed


# --------------------------------------------------------------------------- helpers


def _ca_problem(bundle: CertBundle, now: datetime, margin_days: int) -> str | None:
    try:
        ca_cert = x509.load_pem_x509_certificate(bundle.ca_cert)
        ca_key = serialization.load_pem_private_key(bundle.ca_key, password=None)
    except ValueError as e:
        return f"CA unreadable: {e}"
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey) or not _pair(ca_key, ca_cert.public_key()):
        return "CA key is not the EC key of the CA certificate"
    try:
        is_ca = ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        # Issuing needs it: the serving cert's authorityKeyIdentifier copies the CA's SKI.
        ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        return "CA certificate is not a CA with a subjectKeyIdentifier"
    if needs_renewal(bundle.ca_cert, now, margin_days):
        return f"CA expires {ca_cert.not_valid_after_utc:%Y-%m-%d}"
    return None


def _serving_problem(bundle: CertBundle, now: datetime, margin_days: int) -> str | None:
    try:
        cert = x509.load_pem_x509_certificate(bundle.cert)
        key = serialization.load_pem_private_key(bundle.key, password=None)
        ca_cert = x509.load_pem_x509_certificate(bundle.ca_cert)
    except ValueError as e:
        return f"serving certificate or key unreadable: {e}"
    if not _pair(key, cert.public_key()):
        return "serving key does not match the serving certificate"
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, InvalidSignature):
        return "serving certificate was not signed by the CA"
    if needs_renewal(bundle.cert, now, margin_days):
        return f"serving certificate expires {cert.not_valid_after_utc:%Y-%m-%d}"
    return None


def _missing_sans(cert_pem: bytes, dns_names: Iterable[str], ips: Iterable[str]) -> str | None:
    have_dns, have_ips = sans(cert_pem)
    missing = sorted({d.lower() for d in dns_names} - have_dns)
    missing += sorted(str(a) for a in {ipaddress.ip_address(i) for i in ips} - have_ips)
    return f"serving certificate does not name {', '.join(missing)}" if missing else None


def _sans_or_empty(cert_pem: bytes) -> tuple[set[str], set[IPAddress]]:
    try:
        return sans(cert_pem)
    except ValueError:
        return set(), set()


def _validity(builder: x509.CertificateBuilder, now: datetime, days: int) -> x509.CertificateBuilder:
    return builder.not_valid_before(now - BACKDATE).not_valid_after(now + timedelta(days=days))


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    # EC keys sign (TLS 1.2/1.3 ECDHE handshakes); they never encipher keys.
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pair(key: PrivateKeyTypes, public: CertificatePublicKeyTypes) -> bool:
    """Whether ``key`` is the private half of ``public``."""
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    return key.public_key().public_bytes(*spki) == public.public_bytes(*spki)


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def _utc(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo else now.replace(tzinfo=UTC)
