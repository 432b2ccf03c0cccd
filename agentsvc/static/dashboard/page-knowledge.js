// What the agent answers from. Knowledge: its documents (text, uploaded files, fetched
// pages) and their indexing. Review (below): its curated answers, written from the answers
// visitors rated 👎.

import { enc, get, patch, post, qs } from "./api.js";
import { button, field, h, mount, pager, table, toast, when } from "./dom.js";
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
    field("Address", h("input", { name: "url", type: "url", required: true, placeholder: "https://example.com/faq" }), "Fetched once, now; its text is indexed. To keep pages or a whole site in step, add them under Sources."),
    h("button", { type: "submit" }, "Fetch page")), async (data) => {
    added(await post(agentDocs(agent.id), { url: String(data.get("url")).trim() }));
  });
  const columns = [
    ["Title", (d) => h("a", { href: `#/knowledge/${enc(d.id)}` }, d.title)],
    ["Source", (d) => (d.sourceType === "url" ? d.sourceUrl : d.sourceType === "file" ? d.filename : "Typed in")],
    ["Format", (d) => documentFormat(d.format)],
    ["Size", (d) => size(d.sizeBytes)],
    ["Status", statusTag],
    ["Passages", (d) => String(d.passageCount)],
    ["Added", (d) => when(d.createdAt)],
  ];
  mount(page,
    pageHeader(`Knowledge of ${agent.name}`, "The agent answers from these documents: the passages closest to each question are given to the model.",
      h("a.button.secondary", { href: "#/knowledge/sources" }, "Sources")),
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

// ── Review: the agent's thumbs-down answers with the questions before them, each turned
// into a curated answer with one form; and the agent's curated answers (add, edit, delete).

const answersPath = (agentId) => `/agents/${enc(agentId)}/answers`;
// Pages of thumbs-down answers by cursor; a question waiting to be answered (from Analytics).
const view = { cursor: null, back: [], shown: 0, limit: 10 };
let pendingQuestion = "";

/** Open the Review page with the add form holding `question` (Analytics' unanswered list). */
export function answerQuestion(ctx, question) {
  pendingQuestion = question;
  ctx.navigate("#/review");
}

/** The form that saves a curated answer for `question` (editable), then calls `saved`. */
function curatedForm(ctx, { question = "", answer = "", label, submit, saved }) {
  return onSubmit(h("form.stack.curated-form", { "aria-label": label },
    field("Question", h("input", { name: "question", value: question, required: true, maxlength: 1000 }), "Visitors asking this, in their own words, get the answer below."),
    field("Answer", h("textarea", { name: "answer", rows: 3, required: true, maxlength: 10000 }, answer)),
    h("button", { type: "submit" }, submit)), async (data) => {
    const body = { question: String(data.get("question")).trim(), answer: String(data.get("answer")).trim() };
    saved(await post(answersPath(ctx.agent.id), body));
  });
}

function sourceList(sources) {
  if (!sources || !sources.length) return null;
  return h("p.muted", "Sources: ", sources.map((src) => src.title).join(", "));
}

/** One thumbs-down answer: the question, the answer, and the form to fix it; `added` is
 *  told of the curated answer it creates. */
function feedbackItem(ctx, item, added) {
  const status = h("p.resolved");
  const showCurated = (curated) => {
    mount(status, h("span.tag.good", "Answered by a curated answer"), " ", curated.question);
  };
  if (item.curatedAnswer) showCurated(item.curatedAnswer);
  const form = curatedForm(ctx, {
    question: item.question || "",
    label: `Curated answer for: ${item.question || "this answer"}`,
    submit: "Save as curated answer",
    saved: (created) => {
      showCurated(created);
      form.hidden = true;
      added(created);
      toast("Curated answer saved: visitors asking this get it from now on");
    },
  });
  form.hidden = Boolean(item.curatedAnswer);
  return h("article.card.review-item", { "aria-label": `Thumbs-down answer to ${item.question || "a message"}` },
    h("div.row",
      h("span.tag.bad", { "aria-label": "Rated down" }, "👎"),
      h("span.muted", `Answered ${when(item.createdAt)}`),
      h("span.spacer"),
      h("a", { href: `#/conversations/${enc(item.conversationId)}` }, "Open the conversation")),
    h("h3", item.question || "(no question before it)"),
    h("div.msg.assistant", h("div.text", item.answer || "(no text)")),
    sourceList(item.sources),
    status,
    form);
}

/** A curated answer's row: its question and answer, edited in place or deleted. */
function curatedItem(ctx, answer) {
  const row = h("article.card.curated-item", { "aria-label": `Curated answer: ${answer.question}` });
  const show = (current) => {
    const edit = onSubmit(h("form.stack", { "aria-label": `Edit: ${current.question}`, hidden: true },
      field("Question", h("input", { name: "question", value: current.question, required: true, maxlength: 1000 })),
      field("Answer", h("textarea", { name: "answer", rows: 3, required: true, maxlength: 10000 }, current.answer)),
      h("div.row",
        h("button", { type: "submit" }, "Save changes"),
        button("Cancel", () => { edit.hidden = true; }, { class: "secondary" }))), async (data) => {
      const updated = await patch(`/answers/${enc(current.id)}`, {
        question: String(data.get("question")).trim(),
        answer: String(data.get("answer")).trim(),
      });
      toast("Curated answer updated");
      show(updated);
    });
    mount(row,
      h("div.row",
        h("h3", current.question),
        h("span.spacer"),
        h("span.muted", `Updated ${when(current.updatedAt)}`),
        button("Edit", () => { edit.hidden = false; }),
        deleteButton("Delete", `Delete the curated answer to "${current.question}"?`, "Delete answer",
          `/answers/${enc(current.id)}`, "Curated answer deleted", () => row.remove(), { class: "danger small" })),
      h("p.answer-text", current.answer),
      edit);
  };
  show(answer);
  return row;
}

/** Thumbs-down answers to review, and the agent's curated answers. */
export async function renderReview(ctx, page) {
  const agent = ctx.agent;
  const [feedback, answers] = await Promise.all([
    get(`/feedback${qs({ agentId: agent.id, rating: "down", limit: view.limit, cursor: view.cursor })}`),
    get(answersPath(agent.id)),
  ]);
  const items = feedback.data;
  const { total, nextCursor } = feedback.pagination;
  const curatedList = h("div.stack", { role: "list", "aria-label": "Curated answers" },
    answers.map((a) => h("div", { role: "listitem" }, curatedItem(ctx, a))));
  const noneYet = h("p.empty", { hidden: answers.length > 0 }, "No curated answers yet.");
  const count = h("span", String(answers.length));
  const listed = (created) => {
    curatedList.prepend(h("div", { role: "listitem" }, curatedItem(ctx, created)));
    noneYet.hidden = true;
    count.textContent = String(Number(count.textContent) + 1);
  };
  const add = curatedForm(ctx, {
    question: pendingQuestion,
    label: "Add a curated answer",
    submit: "Add curated answer",
    saved: (created) => {
      toast("Curated answer added");
      listed(created);
      add.reset();
    },
  });
  const focusAdd = Boolean(pendingQuestion);
  pendingQuestion = "";
  const pages = pager(view, nextCursor, items.length, () => ctx.navigate("#/review"),
    h("span.muted", `${items.length} shown of ${total} thumbs-down answers`), ["Newer", "Older"]);
  mount(page,
    pageHeader(`Review of ${agent.name}`, "Answers visitors rated 👎, newest first. Write the answer they should have had: visitors asking that question again get it, word for word with the builtin model, as the first source with other models."),
    h("h2", "Thumbs-down answers"),
    items.length
      ? h("div.stack", { role: "list", "aria-label": "Thumbs-down answers" }, items.map((i) => h("div", { role: "listitem" }, feedbackItem(ctx, i, listed))))
      : h("p.empty", "No answer has a 👎 rating."),
    items.length || view.back.length ? pages : null,
    h("h2", "Curated answers (", count, ")"),
    h("section.card", h("h3", "Add a curated answer"), add),
    noneYet,
    curatedList);
  // After the page is in the document (the router mounts it once this returns).
  if (focusAdd) setTimeout(() => add.querySelector("textarea").focus(), 0);
}
