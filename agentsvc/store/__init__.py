"""SQL only: one module per table family; functions take a connection and return models."""
