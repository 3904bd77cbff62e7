"""``kubectl fluid config show`` through a real kubectl with kubeconfigs of every kind a kubectl user
has, against the cluster's own API server: client certificates (files and inline, issued by the
cluster's signer through a CertificateSigningRequest), a bearer token, a tokenFile, an exec plugin
(with the cluster's information), impersonation, the oidc auth-provider (its id-token a
ServiceAccount token, valid and then refreshed at a loopback issuer), and the API server reached
through an HTTP, an HTTPS and a SOCKS5 proxy on loopback.

Each identity is granted exactly what ``config show`` reads (get Datasets and ConfigMaps in one
namespace), so a request that went out as someone else, or without credentials, fails."""

from __future__ import annotations

import base64
import datetime
import http.server
import json
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client

from kubectl_fluid.api import names
from tests.connectproxy import connect_proxy_running
from tests.e2e.plugin_checks import stage_dataset
from tests.e2e.test_cli_inject import kubectl_fluid, ok, one_error_line
from tests.e2e.wait import eventually
from tests.serving import serving
from tests.socksproxy import socks_proxy_running

READER = "fluid-reader"


@dataclass
class Reading:
    """A namespace with dataset ds1 staged, its runtime.sh, and the admin's cluster entry."""

    namespace: str
    runtime_sh: str
    cluster: dict[str, Any]
    tmp: Path

    def kubeconfig(self, name: str, user: dict[str, Any], **cluster: Any) -> Path:
        path = self.tmp / name
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "c", "cluster": {**self.cluster, **cluster}}],
                    "users": [{"name": name, "user": user}],
                    "contexts": [{"name": "c", "context": {"cluster": "c", "user": name}}],
                    "current-context": "c",
                }
            )
        )
        path.chmod(0o600)
        return path

    def shows(self, kubeconfig: Path) -> str:
        run = kubectl_fluid(kubeconfig, "config", "show", "ds1", "-n", self.namespace)
        assert ok(run) == self.runtime_sh
        return run.stderr


def admin_cluster(admin: Path) -> dict[str, Any]:
    """The admin kubeconfig's cluster, its CA inlined (so the file can live anywhere)."""
    cfg = yaml.safe_load(admin.read_text())
    context = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    cluster = dict(next(c for c in cfg["clusters"] if c["name"] == context["cluster"])["cluster"])
    if "certificate-authority" in cluster:
        ca = Path(cluster.pop("certificate-authority"))
        ca = ca if ca.is_absolute() else admin.parent / ca
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    return cluster


def admin_user(admin: Path) -> dict[str, Any]:
    cfg = yaml.safe_load(admin.read_text())
    context = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    user = dict(next(u for u in cfg["users"] if u["name"] == context["user"])["user"])
    for key in ("client-certificate", "client-key", "tokenFile"):
        if key in user and not Path(user[key]).is_absolute():
            user[key] = str(admin.parent / user[key])
    return user


@pytest.fixture
def reading(
    fluid: Path, k8s: client.ApiClient, core: client.CoreV1Api, namespace: str, tmp_path: Path
) -> Reading:
    runtime_sh = stage_dataset(k8s, namespace, "ds1")
    rbac = client.RbacAuthorizationV1Api(k8s)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": READER},
            "rules": [
                {"apiGroups": [names.GROUP], "resources": ["datasets"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            ],
        },
    )
    core.create_namespaced_service_account(namespace, {"metadata": {"name": READER}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": READER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": READER},
            "subjects": [
                {"kind": "ServiceAccount", "name": READER, "namespace": namespace},
                {"kind": "User", "name": "fluid-e2e-cert-user", "apiGroup": "rbac.authorization.k8s.io"},
            ],
        },
    )
    return Reading(namespace, runtime_sh, admin_cluster(fluid), tmp_path)


def token_of(core: client.CoreV1Api, namespace: str, account: str = READER) -> str:
    return str(
        eventually(
            lambda: core.create_namespaced_service_account_token(
                account, namespace, {"spec": {"expirationSeconds": 3600}}
            ),
            f"a token for {account}",
            timeout=30,
        ).status.token
    )


def test_a_bearer_token_and_a_token_file(reading: Reading, core: client.CoreV1Api) -> None:
    token = token_of(core, reading.namespace)
    assert reading.shows(reading.kubeconfig("token", {"token": token})) == ""
    token_file = reading.tmp / "reader.token"
    token_file.write_text(token + "\n")
    assert reading.shows(reading.kubeconfig("token-file", {"tokenFile": str(token_file)})) == ""
    # Without any credentials the same request is anonymous, and refused (forbidden to
    # system:anonymous, or unauthorized where anonymous requests are off).
    line = one_error_line(
        kubectl_fluid(reading.kubeconfig("anonymous", {}), "config", "show", "ds1", "-n", reading.namespace)
    )
    assert '"system:anonymous"' in line or "Unauthorized" in line, line


def test_client_certificates_issued_by_the_clusters_signer(reading: Reading, k8s: client.ApiClient) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fluid-e2e-cert-user")]))
        .sign(key, hashes.SHA256())
    )
    certificates = client.CertificatesV1Api(k8s)
    name = f"fluid-e2e-{reading.namespace}"
    certificates.create_certificate_signing_request(
        {
            "metadata": {"name": name},
            "spec": {
                "request": base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode(),
                "signerName": "kubernetes.io/kube-apiserver-client",
                "expirationSeconds": 600,
                "usages": ["client auth"],
            },
        }
    )
    try:
        stored = certificates.read_certificate_signing_request(name)
        stored.status.conditions = [
            client.V1CertificateSigningRequestCondition(
                type="Approved", status="True", reason="E2E", message="approved by the e2e test"
            )
        ]
        certificates.replace_certificate_signing_request_approval(name, stored)
        issued = eventually(
            lambda: certificates.read_certificate_signing_request(name).status.certificate,
            "the CSR's certificate",
            timeout=60,
        )
    finally:
        certificates.delete_certificate_signing_request(name)
    cert_pem = base64.b64decode(issued)
    leaf = x509.load_pem_x509_certificate(cert_pem)
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (reading.tmp / "me.crt").write_bytes(cert_pem)
    (reading.tmp / "me.key").write_bytes(key_pem)
    # Relative paths are relative to the kubeconfig's own folder.
    files = reading.kubeconfig("cert-files", {"client-certificate": "me.crt", "client-key": "me.key"})
    assert reading.shows(files) == ""
    inline = {
        "client-certificate-data": base64.b64encode(cert_pem).decode(),
        "client-key-data": base64.b64encode(key_pem).decode(),
    }
    assert reading.shows(reading.kubeconfig("cert-data", inline)) == ""


def test_an_exec_plugin_given_the_cluster(reading: Reading, core: client.CoreV1Api) -> None:
    token = token_of(core, reading.namespace)
    server = reading.cluster["server"]
    plugin = reading.tmp / "bin" / "fluid-cred"
    plugin.parent.mkdir()
    credential = json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"token": token},
        }
    )
    # It hands out the token only to a caller that told it which cluster it is for.
    plugin.write_text(
        "#!/bin/sh\n"
        f'case "$KUBERNETES_EXEC_INFO" in *\'"server": "{server}"\'*) ;;\n'
        '  *) echo "no cluster info" >&2; exit 1;;\nesac\n'
        f"echo '{credential}'\n"
    )
    plugin.chmod(0o755)
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "./bin/fluid-cred",  # relative to the kubeconfig, as client-go resolves it
            "interactiveMode": "Never",
            "provideClusterInfo": True,
        }
    }
    assert reading.shows(reading.kubeconfig("exec", user)) == ""
    blind = {"exec": {**user["exec"], "provideClusterInfo": False}}
    line = one_error_line(kubectl_fluid(reading.kubeconfig("exec-blind", blind), "config", "show", "ds1"))
    assert "credential plugin" in line
    assert "no cluster info" in line


def test_impersonation_is_who_the_api_server_sees(reading: Reading, fluid: Path) -> None:
    admin = admin_user(fluid)
    ns = reading.namespace
    as_reader = reading.kubeconfig("as-reader", {**admin, "as": f"system:serviceaccount:{ns}:{READER}"})
    assert reading.shows(as_reader) == ""
    as_nobody = reading.kubeconfig("as-nobody", {**admin, "as": f"system:serviceaccount:{ns}:nobody"})
    line = one_error_line(kubectl_fluid(as_nobody, "config", "show", "ds1", "-n", ns))
    assert f'"system:serviceaccount:{ns}:nobody"' in line
    assert "cannot get" in line


def jwt_claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    loaded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return loaded


@pytest.fixture
def issuer() -> Iterator[tuple[str, list[str]]]:
    """A loopback OpenID provider whose token endpoint answers with the id_token set in its list."""
    answers: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def reply(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self.reply({"token_endpoint": f"http://127.0.0.1:{self.server.server_address[1]}/token"})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.reply({"id_token": answers[-1], "refresh_token": "r2"})

    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://127.0.0.1:{port}", answers


def test_the_oidc_auth_provider_sends_and_refreshes_its_token(
    reading: Reading, core: client.CoreV1Api, issuer: tuple[str, list[str]]
) -> None:
    url, answers = issuer
    token = token_of(core, reading.namespace)  # a JWT with exp, as an OIDC id-token is
    assert jwt_claims(token)["exp"] > time.time()
    config = {"client-id": "kubectl", "idp-issuer-url": url, "id-token": token}
    assert (
        reading.shows(reading.kubeconfig("oidc", {"auth-provider": {"name": "oidc", "config": config}})) == ""
    )

    expired = token.split(".")
    expired[1] = (
        base64.urlsafe_b64encode(json.dumps({**jwt_claims(token), "exp": 1}).encode()).decode().rstrip("=")
    )
    answers.append(token)
    stale = {**config, "id-token": ".".join(expired), "refresh-token": "r1"}
    path = reading.kubeconfig("oidc-stale", {"auth-provider": {"name": "oidc", "config": stale}})
    assert reading.shows(path) == ""
    written = yaml.safe_load(path.read_text())["users"][0]["user"]["auth-provider"]["config"]
    assert written["id-token"] == token
    assert written["refresh-token"] == "r2"


def self_signed_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "e2e-proxy-ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def proxy_tls(tmp: Path) -> tuple[ssl.SSLContext, bytes]:
    """The TLS of an https:// proxy on 127.0.0.1, and its CA's PEM. Go trusts such a proxy through the
    cluster's CA setting: the test adds its CA to the kubeconfig's bundle, as an operator would."""
    import ipaddress

    ca, ca_key = self_signed_ca()
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "proxy")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = tmp / "proxy.pem"
    pem.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem)
    return ctx, ca.public_bytes(serialization.Encoding.PEM)


def test_the_api_server_through_http_https_and_socks5_proxies(
    reading: Reading, core: client.CoreV1Api
) -> None:
    user = {"token": token_of(core, reading.namespace)}
    server = reading.cluster["server"].removeprefix("https://")
    with connect_proxy_running() as http_proxy:
        assert reading.shows(reading.kubeconfig("via-http", user, **{"proxy-url": http_proxy.url})) == ""
        assert http_proxy.tunnels == [server]
    tls, proxy_ca = proxy_tls(reading.tmp)
    bundle = base64.b64decode(reading.cluster["certificate-authority-data"]) + proxy_ca
    with connect_proxy_running(tls=tls) as https_proxy:
        via_https = reading.kubeconfig(
            "via-https",
            user,
            **{"proxy-url": https_proxy.url, "certificate-authority-data": base64.b64encode(bundle).decode()},
        )
        assert reading.shows(via_https) == ""
        assert https_proxy.tunnels == [server]
    with socks_proxy_running(login=("me", "pw")) as socks:
        assert reading.shows(reading.kubeconfig("via-socks5", user, **{"proxy-url": socks.url})) == ""
        assert socks.destinations == [server]
        assert socks.logins == [("me", "pw")]
