"""Forms: submissions, value checks, files, and delivery of each submission."""
