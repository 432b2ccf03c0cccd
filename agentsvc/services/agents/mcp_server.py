"""An agent as an MCP server: the tools `ask` and `search_knowledge`, built on the chat
turns (a question is a chat turn through `ChatTurns`, as `/chat`'s: stored, answered from
curated answers, announced to event webhooks alike) and on retrieval.

One SDK `Server` is made per request for the agent it names (a few microseconds), so the
handlers know their agent and team without any shared state.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import mcp_types as types
from mcp.server import Server

from agentsvc import __version__
from agentsvc.errors import DomainError
from agentsvc.services.agents.mcp_service import AgentServerDeps
from agentsvc.services.chat import start as chat_start
from agentsvc.services.chat import turn as turn_service
from agentsvc.services.knowledge import prompt
from agentsvc.services.knowledge.retrieval import retrieve
from agentsvc.store.agents import Agent

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 100_000
MAX_PASSAGES = 20
ID_PATTERN = r"^[A-Za-z0-9_-]{1,100}$"

ASK = types.Tool(
    name="ask",
    description="Ask the agent a question and get its answer. Pass the conversationId of an"
    " earlier answer to continue that conversation.",
    input_schema={
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
            "conversationId": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "Continue this conversation (from an earlier answer)",
            },
        },
        "required": ["question"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "conversationId": {"type": "string"},
            "messageId": {"type": ["string", "null"]},
            "sources": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["answer", "conversationId"],
    },
)
SEARCH = types.Tool(
    name="search_knowledge",
    description="Search the agent's knowledge documents; returns the best passages with"
    " the title of the document each comes from.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 2000},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PASSAGES},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    output_schema={
        "type": "object",
        "properties": {"passages": {"type": "array", "items": {"type": "object"}}},
        "required": ["passages"],
    },
)


class _Collected:
    """A turn's stream, kept instead of sent: the text blocks, the end, or the error."""

    def __init__(self) -> None:
        self.blocks: dict[int, list[str]] = {}
        self.start: dict[str, Any] = {}
        self.stop: dict[str, Any] | None = None
        self.error: dict[str, str] | None = None
        self.form: str | None = None
        self.handoff = False

    async def event(self, name: str, data: dict[str, Any]) -> None:
        if name == "message_start":
            self.start = data
        elif name == "message_stop":
            self.stop = data
        elif name == "error":
            self.error = data["error"]
        elif name == "tool_result" and data.get("form"):
            self.form = data["toolName"]
        elif name == "handoff":
            self.handoff = True
        elif name == "answer_replaced":  # a guardrail replaced what was said: only this
            self.blocks = {0: [data["text"]]}

    async def delta(self, index: int, text: str) -> None:
        self.blocks.setdefault(index, []).append(text)

    async def keepalive(self) -> None:
        return None

    @property
    def text(self) -> str:
        return "\n\n".join("".join(parts) for _, parts in sorted(self.blocks.items()))


def _text(text: str, *, error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


async def ask(
    deps: AgentServerDeps, agent: Agent, team_id: str, question: str, conversation_id: str | None
) -> types.CallToolResult:
    """The agent's answer to one question, stored as a chat turn of the team."""
    chat = chat_start.ChatInput(
        agent_id=agent.id,
        messages=(("user", question),),
        conversation_id=conversation_id,
        session_id=None,
        user=None,
        team_id=team_id,
    )
    sink = _Collected()
    try:
        async with asyncio.timeout(deps.turn_seconds):
            # People cannot answer over MCP: the agent is not offered handing the chat over.
            # The turn stores the answer (or what there was) whatever happens.
            turn = await deps.turns.run(chat, sink, people_can_answer=False)
    except DomainError as exc:
        return _text(exc.message, error=True)
    except TimeoutError:
        return _text(f"The answer took longer than {deps.turn_seconds:g} seconds", error=True)
    if isinstance(turn, turn_service.HeldTurn):
        note = "A person from the team has this conversation; your message was passed on."
        structured = {
            "answer": note,
            "conversationId": turn.conversation.id,
            "messageId": None,
            "sources": [],
        }
        return _text(note, structured=structured)
    if sink.error is not None:
        return _text(f"The agent could not answer: {sink.error['message']}", error=True)
    answer = sink.text
    if sink.form:
        answer += (
            f"\n\n(The agent wanted to show the form {sink.form!r}, which needs the chat widget.)"
        )
    sources = (sink.stop or {}).get("sources", [])
    structured = {
        "answer": answer,
        "conversationId": turn.conversation.id,
        "messageId": turn.message_id,
        "sources": sources,
    }
    content = [types.TextContent(type="text", text=answer or "(no answer)")]
    if sources:
        titles = "; ".join(s["title"] for s in sources)
        content.append(types.TextContent(type="text", text=f"Sources: {titles}"))
    content.append(
        types.TextContent(
            type="text",
            text=f"conversationId: {turn.conversation.id} (pass it to ask to continue)",
        )
    )
    return types.CallToolResult(content=content, structured_content=structured)


async def search_knowledge(
    deps: AgentServerDeps, agent: Agent, query: str, limit: int | None
) -> types.CallToolResult:
    """The best passages of the agent's documents for a query, with their sources."""
    passages = await retrieve(
        deps.db, agent.id, query, limit or deps.top_k, deps.semantic, agent.language
    )
    found = [
        {
            "documentId": p.document_id,
            "title": p.title,
            "heading": p.heading,
            "text": p.text,
            "score": round(p.score, 4),
        }
        for p in passages
    ]
    if not found:
        return _text("No passage of the agent's documents matches.", structured={"passages": []})
    content = [
        types.TextContent(
            type="text",
            text=f"[{i}] {p['title']}"
            + (f" — {p['heading']}" if p["heading"] else "")
            + f"\n{p['text']}",
        )
        for i, p in enumerate(found, start=1)
    ]
    titles = "; ".join(s["title"] for s in prompt.sources(passages))
    content.append(types.TextContent(type="text", text=f"Sources: {titles}"))
    return types.CallToolResult(content=content, structured_content={"passages": found})


def _label(passage: dict[str, Any]) -> str:
    heading = passage["heading"]
    return f"{passage['title']} — {heading}" if heading else passage["title"]


def _argument(args: dict[str, Any], name: str, kind: type, required: bool = False) -> Any:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"{name}: must be a {kind.__name__}")
    return value


def agent_server(deps: AgentServerDeps, agent: Agent, team_id: str) -> Server:
    """The MCP server of one agent, for one request."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ASK, SEARCH])

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        try:
            if params.name == "ask":
                question = _argument(args, "question", str, required=True)
                conversation = _argument(args, "conversationId", str)
                if not question.strip() or len(question) > MAX_QUESTION_CHARS:
                    raise ValueError(f"question: 1 to {MAX_QUESTION_CHARS} characters")
                return await ask(deps, agent, team_id, question, conversation)
            if params.name == "search_knowledge":
                query = _argument(args, "query", str, required=True)
                limit = _argument(args, "limit", int)
                if not query.strip() or len(query) > 2000:
                    raise ValueError("query: 1 to 2000 characters")
                if limit is not None and not 1 <= limit <= MAX_PASSAGES:
                    raise ValueError(f"limit: 1 to {MAX_PASSAGES}")
                return await search_knowledge(deps, agent, query, limit)
        except ValueError as exc:
            return _text(f"Invalid arguments: {exc}", error=True)
        return _text(
            f"Unknown tool {params.name!r}: this agent offers ask and search_knowledge", error=True
        )

    return Server(
        f"agentsvc-{agent.slug}",
        version=__version__,
        title=agent.name,
        instructions=f"The {agent.name} agent: ask it questions, or search its knowledge.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
