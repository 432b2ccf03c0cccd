"""Channels by id for the inbound route: each platform message names its channel, and one
database read per message for a row that hardly ever changes is work that need not be
there.

A channel changes only through `ChannelsService` (updated, deleted; the CLI never edits
channels) and goes with its agent; each announces the change after its commit, and every
process's cache drops the entry (`changes.follow`): at once in this process, within
milliseconds in the others (PostgreSQL's NOTIFY; RESYNC clears all when it was lost).
"""

from __future__ import annotations

from agentsvc.store.channels import Channel


class ChannelCache:
    """Channels by id (unknown ids are not kept: a flood of them fills nothing)."""

    def __init__(self, max_entries: int = 10_000):
        self._by_id: dict[str, Channel] = {}
        self._max_entries = max_entries
        # Moves on every drop: a row read before a change is not put after it.
        self.generation = 0

    def get(self, channel_id: str) -> Channel | None:
        return self._by_id.get(channel_id)

    def put(self, channel: Channel, generation: int) -> None:
        """Keep a channel read when `generation` was current (else it may be stale)."""
        if generation != self.generation:
            return
        if len(self._by_id) >= self._max_entries:
            self._by_id.clear()
        self._by_id[channel.id] = channel

    def forget(self, channel_id: str) -> None:
        self.generation += 1
        self._by_id.pop(channel_id, None)

    def forget_agent(self, agent_id: str) -> None:
        """Drop the agent's channels (a deleted agent's went with it)."""
        self.generation += 1
        for channel_id in [c.id for c in self._by_id.values() if c.agent_id == agent_id]:
            del self._by_id[channel_id]

    def clear(self) -> None:
        self.generation += 1
        self._by_id.clear()
