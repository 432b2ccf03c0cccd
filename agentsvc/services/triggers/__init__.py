"""Widget triggers: definitions, matching rules, templates, and event counting."""
