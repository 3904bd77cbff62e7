"""The cluster's PKI and the admin kubeconfig: a CA, the API server's serving certificate, client
certificates (admin, the API server's for kubelets, a real node's kubelet via ``sign_leaf``) and the
service-account key pair.

``cryptography`` is imported inside the functions: importing this module stays standard-library only,
so ``down`` and ``status`` work without the venv.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from localcluster.state import Cluster


def _validity() -> tuple[Any, Any]:
    import datetime

    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(hours=1), now + datetime.timedelta(days=365)


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )


def _name(cn: str, org: str | None = None) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: Any, issuer: Any, public_key: Any) -> Any:
    """A certificate valid from an hour ago for a year, with a fresh serial."""
    from cryptography import x509

    valid = _validity()
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
    )


def sign_leaf(
    pki: Path, cn: str, org: str | None, server: bool = False, sans: list[Any] | None = None
) -> tuple[bytes, bytes]:
    """A certificate and key (PEM) for ``cn``/``org`` signed by the cluster CA in ``pki``: a client
    certificate (the API server maps CN to the user, O to groups), or a serving one with ``sans``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(_name(cn, org), ca.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def write_pki(pki: Path) -> None:
    """CA, API server serving cert, admin client cert (system:masters), the API server's client cert
    for kubelets, and the service-account key pair. EC P-256 keys: generated in milliseconds,
    accepted by every Kubernetes component."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pki.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("kubectl-fluid-local-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    files = {"ca.crt": ca.public_bytes(serialization.Encoding.PEM), "ca.key": _key_pem(ca_key)}
    for fname in ("ca.crt", "ca.key"):
        (pki / fname).write_bytes(files[fname])
    server_sans: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.96.0.1")),
        *(
            x509.DNSName(d)
            for d in (
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            )
        ),
    ]
    files["apiserver.crt"], files["apiserver.key"] = sign_leaf(
        pki, "kube-apiserver", None, server=True, sans=server_sans
    )
    files["admin.crt"], files["admin.key"] = sign_leaf(pki, "kubectl-fluid-admin", "system:masters")
    # kubectl exec/logs/port-forward: the API server calls a real node's kubelet as this user.
    files["apiserver-kubelet-client.crt"], files["apiserver-kubelet-client.key"] = sign_leaf(
        pki, "kube-apiserver-kubelet-client", "system:masters"
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    files["sa.key"] = _key_pem(sa_key)
    files["sa.pub"] = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for fname, data in files.items():
        path = pki / fname
        path.write_bytes(data)
        path.chmod(0o600 if fname.endswith(".key") else 0o644)


def write_kubeconfig(cluster: Cluster) -> None:
    pki = cluster.pki
    # JSON is valid YAML; every client (kubectl, kr8s, the official client) reads it.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kubectl-fluid-local",
                "cluster": {"server": cluster.server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "kubectl-fluid-admin",
                "user": {
                    "client-certificate": str(pki / "admin.crt"),
                    "client-key": str(pki / "admin.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": "kubectl-fluid-local",
                "context": {"cluster": "kubectl-fluid-local", "user": "kubectl-fluid-admin"},
            }
        ],
        "current-context": "kubectl-fluid-local",
    }
    cluster.kubeconfig.write_text(json.dumps(config, indent=2) + "\n")
    cluster.kubeconfig.chmod(0o600)
