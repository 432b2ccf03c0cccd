"""Events: what webhooks can receive, emitted in the transaction of each change, and the
team's event webhooks with their delivery log."""
