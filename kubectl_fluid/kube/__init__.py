"""How every process talks to the API server.

- The servers (controller, webhook, CSI): kr8s glue: client factory (``client``), raw calls by path
  (``http``), list-then-watch cache (``watchcache``), retries with backoff (``backoff``).
- The kubectl plugin: a small synchronous client on the standard library (``transport``, with
  ``kubeconfig``, ``oidc``, ``proxy``, ``dial``, ``tlsintls``, ``http11`` and ``errors``), since kr8s
  costs a plugin command more to import than its request takes.
- Both: where each kind lives in the API (``resources``), the one place paths are built.

The plugin imports this package, so this file imports nothing; the plugin's modules import no kr8s,
httpx or server module.
"""
