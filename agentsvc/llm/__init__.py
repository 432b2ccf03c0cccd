"""Model providers: one module per wire protocol, plus the built-in offline model."""
