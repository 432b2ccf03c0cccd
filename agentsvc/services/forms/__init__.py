"""Forms: submissions, value checks, files, and their deliveries as a kind of the outbox."""
