"""kr8s glue shared by every process: client factory, list-then-watch cache, apply/patch helpers,
retries with backoff."""
