"""Knowledge documents: ingestion, documents, indexing, vectors, retrieval and prompt modules."""
