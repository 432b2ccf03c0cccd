"""The widget's look per agent: appearance, language, visitor-facing strings, starters."""
