"""SQL only, one module per table family: async functions of a `Tx` returning records."""
