"""Ports of a component, from its class template: the container's ports and its Service's.

Decisions where SPEC is silent:
- Ports come from the class only; a runtime cannot change them (the Service and, for a FUSE runtime,
  the PV's master address are derived from them, and a PV's source is immutable).
- A Service port is named after the template port, or ``{protocol}-{port}`` (``tcp-8995``) when the
  template leaves it unnamed: Kubernetes requires names once a Service has two ports, and a generated
  name is valid both as a DNS label and as an IANA service name.
- Two template ports with the same name or the same (port, protocol) are refused here: server-side
  apply keys container ports by (port, protocol) and the API server refuses duplicate names.
"""

from __future__ import annotations

from typing import Any

from controller.desired.scope import Scope
from kubectl_fluid.api import names
from kubectl_fluid.api.cacheruntimeclass import ComponentPort
from kubectl_fluid.runtimeconfig import RuntimeConfigError


def template_ports(scope: Scope, component: names.Component) -> list[ComponentPort]:
    template = scope.template(component)
    ports = list(template.ports) if template else []
    where = f"{scope.class_ref()} topology.{component}.ports"
    _unique([(p.container_port, p.protocol) for p in ports], where, "port/protocol")
    _unique([p.name for p in ports if p.name], where, "port name")
    _unique(
        [service_port_name(p) for p in ports],
        where,
        "Service port name",
        hint="; an unnamed port is named {protocol}-{port} in the Service, so name the ports explicitly",
    )
    return ports


def container_ports(ports: list[ComponentPort]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for port in ports:
        entry: dict[str, Any] = {"containerPort": port.container_port, "protocol": port.protocol}
        if port.name:
            entry["name"] = port.name
        out.append(entry)
    return out


def service_ports(ports: list[ComponentPort]) -> list[dict[str, Any]]:
    return [
        {
            "name": service_port_name(port),
            "port": port.container_port,
            "protocol": port.protocol,
            "targetPort": port.name or port.container_port,
        }
        for port in ports
    ]


def service_port_name(port: ComponentPort) -> str:
    return port.name or f"{port.protocol.lower()}-{port.container_port}"


def _unique(values: list[Any], where: str, what: str, hint: str = "") -> None:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            shown = "/".join(map(str, value)) if isinstance(value, tuple) else value
            raise RuntimeConfigError(f"{where}: {what} {shown} appears twice{hint}")
        seen.add(value)
