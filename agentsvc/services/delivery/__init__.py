"""Delivery: the durable outbox every kind of delivery goes through (form deliveries, event
webhooks, and channel sends to come), with its signing, outcomes and retry schedule."""
