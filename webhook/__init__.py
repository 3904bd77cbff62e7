"""The mutating admission webhook: routes pods that ask for datasets to handler groups whose plugins
inject the runtime config."""
