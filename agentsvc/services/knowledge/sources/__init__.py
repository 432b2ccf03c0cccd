"""Sources: sites an agent's knowledge follows, crawled and kept in step by syncs."""
