"""Rules and orchestration; no aiohttp request objects, no SQL."""
