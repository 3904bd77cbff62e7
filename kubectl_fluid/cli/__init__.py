"""The ``kubectl fluid`` plugin: click commands, one module per verb. Imports nothing heavy at start-up."""

# --request-timeout when no level of the command line gives one, as kubectl's. Here, in the one module
# both the click flags and the click-free fast path load.
DEFAULT_REQUEST_TIMEOUT = "30s"
