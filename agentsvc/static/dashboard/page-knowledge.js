// Knowledge: the agent's documents (text, uploaded files, fetched pages) and their indexing.

import { enc, get, post } from "./api.js";
import { field, h, mount, table, toast, when } from "./dom.js";
import { deleteButton, onSubmit, pageHeader } from "./forms.js";
import { documentFormat, documentStatus } from "./labels.js";

const agentDocs = (agentId) => `/agents/${enc(agentId)}/documents`;

function statusTag(doc) {
  const kind = doc.status === "ready" ? "good" : doc.status === "failed" ? "bad" : "warn";
  return h("span", { class: `tag ${kind}`, title: doc.error || "" }, documentStatus(doc.status));
}

function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** The agent's documents, with forms to add text, a file or a web page. */
export async function renderKnowledge(ctx, page) {
  const agent = ctx.agent;
  const docs = await get(agentDocs(agent.id));
  const reload = () => ctx.navigate("#/knowledge");
  const added = (doc) => {
    toast(`Added ${doc.title}${doc.status === "indexing" ? " (indexing…)" : ""}`);
    reload();
  };
  const text = onSubmit(h("form.stack.card", { "aria-label": "Add text" },
    h("h2", "Write or paste text"),
    field("Title", h("input", { name: "title", required: true, maxlength: 300 })),
    field("Content", h("textarea", { name: "content", rows: 6, required: true }), "Markdown and plain text are both fine."),
    h("button", { type: "submit" }, "Add text")), async (data) => {
    added(await post(agentDocs(agent.id), { title: String(data.get("title")).trim(), content: String(data.get("content")) }));
  });
  const upload = onSubmit(h("form.stack.card", { "aria-label": "Upload a file" },
    h("h2", "Upload a file"),
    field("File", h("input", { name: "file", type: "file", required: true, accept: ".txt,.md,.html,.htm,.pdf,text/plain,text/markdown,text/html,application/pdf" }), ".txt, .md, .html or .pdf"),
    field("Title (optional)", h("input", { name: "title", maxlength: 300 })),
    h("button", { type: "submit" }, "Upload")), async (data) => {
    const form = new FormData();
    const file = data.get("file");
    if (!file || !file.name) throw new Error("file: choose a file");
    form.append("file", file, file.name);
    if (String(data.get("title")).trim()) form.append("title", String(data.get("title")).trim());
    added(await post(agentDocs(agent.id), form));
  });
  const url = onSubmit(h("form.stack.card", { "aria-label": "Add a web page" },
    h("h2", "Fetch a web page"),
    field("Address", h("input", { name: "url", type: "url", required: true, placeholder: "https://example.com/faq" }), "Fetched once, now; its text is indexed."),
    h("button", { type: "submit" }, "Fetch page")), async (data) => {
    added(await post(agentDocs(agent.id), { url: String(data.get("url")).trim() }));
  });
  const columns = [
    { label: "Title", cell: (d) => h("a", { href: `#/knowledge/${enc(d.id)}` }, d.title) },
    { label: "Source", cell: (d) => (d.sourceType === "url" ? d.sourceUrl : d.sourceType === "file" ? d.filename : "Typed in") },
    { label: "Format", cell: (d) => documentFormat(d.format) },
    { label: "Size", cell: (d) => size(d.sizeBytes) },
    { label: "Status", cell: statusTag },
    { label: "Passages", cell: (d) => String(d.passageCount) },
    { label: "Added", cell: (d) => when(d.createdAt) },
  ];
  mount(page,
    pageHeader(`Knowledge of ${agent.name}`, "The agent answers from these documents: the passages closest to each question are given to the model."),
    table(columns, docs, "No documents yet.", "Documents"),
    h("div.grid3", text, upload, url));
  if (docs.some((d) => d.status === "indexing")) {
    // Indexing runs in the background: look again shortly while this page is shown.
    setTimeout(() => {
      if (page.isConnected) reload();
    }, 1500);
  }
}

/** One document: its details and the text that was indexed. */
export async function renderDocument(ctx, page, id) {
  const doc = await get(`/documents/${enc(id)}`);
  const remove = deleteButton("Delete document", `Delete "${doc.title}"? The agent stops using it at once.`, "Delete document",
    `/documents/${enc(id)}`, "Document deleted", () => ctx.navigate("#/knowledge"));
  mount(page,
    pageHeader(doc.title, `${documentFormat(doc.format)} · ${size(doc.sizeBytes)} · ${doc.passageCount} passages · added ${when(doc.createdAt)}`,
      h("a.button.secondary", { href: "#/knowledge" }, "All documents"), remove),
    h("p", "Status: ", statusTag(doc), doc.error ? h("span.bad", ` — ${doc.error}`) : null),
    doc.sourceUrl ? h("p.muted", "From ", h("a", { href: doc.sourceUrl, rel: "noopener noreferrer", target: "_blank" }, doc.sourceUrl)) : null,
    h("h2", "Text"),
    h("pre.document-text", doc.content));
}
