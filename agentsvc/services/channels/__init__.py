"""Channels: an agent answering on other platforms than the widget."""
