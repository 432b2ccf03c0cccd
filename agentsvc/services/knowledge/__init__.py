"""Knowledge documents: ingestion, indexing (and embedding), retrieval and prompt assembly."""

from agentsvc.services.knowledge.documents import (
    check_agent,
    create_document,
    delete_document,
    get_document,
    list_documents,
)
from agentsvc.services.knowledge.indexing import Indexer, knowledge_ctx
from agentsvc.services.knowledge.ingestion import Source, file_source, text_source, url_source
from agentsvc.services.knowledge.prompt import context_block, sources, with_context
from agentsvc.services.knowledge.retrieval import (
    Passage,
    fuse,
    match_expression,
    query_terms,
    retrieve,
)
from agentsvc.services.knowledge.vectors import Semantic

__all__ = [
    "Indexer",
    "Passage",
    "Semantic",
    "Source",
    "check_agent",
    "context_block",
    "create_document",
    "delete_document",
    "file_source",
    "fuse",
    "get_document",
    "knowledge_ctx",
    "list_documents",
    "match_expression",
    "query_terms",
    "retrieve",
    "sources",
    "text_source",
    "url_source",
    "with_context",
]
