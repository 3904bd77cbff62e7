"""Programs of the demo (make demo): applications that run inside pods the demo creates."""
