"""The errors the runtime config builders raise."""


class RuntimeConfigError(ValueError):
    """The inputs cannot make a runtime config; the message says why, for a person to act on.
    ``reason`` becomes the reason of the Ready=False condition the controller reports."""

    reason = "InvalidSpec"


class InvalidRuntimeClass(RuntimeConfigError):
    """The CacheRuntimeClass cannot run any runtime (it defines no component)."""

    reason = "InvalidRuntimeClass"


class InvalidTieredStore(RuntimeConfigError):
    """A tiered-store level upstream refuses."""

    reason = "InvalidTieredStore"


class RuntimeConfigTooLarge(RuntimeConfigError):
    """runtime.sh would not fit the limits of a process environment (see ``limits``)."""

    reason = "RuntimeConfigTooLarge"
