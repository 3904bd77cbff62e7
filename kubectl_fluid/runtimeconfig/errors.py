"""The one error the runtime config builders raise."""


class RuntimeConfigError(ValueError):
    """The inputs cannot make a runtime config; the message says why, for a person to act on."""
