// The dashboard's only way to the server: the public API under /api/v1, with the session
// cookie (HttpOnly: the page never sees it) sent automatically by the browser.

import { plain, words } from "./labels.js";

export const BASE = "/api/v1";

/** A piece of a path or a link escaped (an id, a name): short, as every page writes it often. */
export const enc = encodeURIComponent;

/** An error answered by the API: status, code and the API's own message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized = () => {};

/** Register what happens when a call answers 401 (the session ended). */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** Call the API; resolves to the parsed body (envelopes unwrapped), throws ApiError. */
export async function api(method, path, body, { raw = false, quiet401 = false } = {}) {
  const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
  if (body instanceof FormData) {
    init.body = body; // multipart: the browser writes the Content-Type with its boundary
  } else if (body instanceof Blob) {
    init.headers["Content-Type"] = body.type; // a file sent as it is (an avatar)
    init.body = body;
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(BASE + path, init);
  } catch (err) {
    throw new ApiError(0, "NETWORK_ERROR", `The server could not be reached (${err.message})`);
  }
  if (raw) return response;
  let payload = null;
  const text = await response.text();
  if (text) {
    try {
      payload = JSON.parse(text);
    } catch {
      payload = null;
    }
  }
  if (!response.ok) {
    const error = payload && payload.error ? payload.error : { code: "HTTP_" + response.status, message: response.statusText || "Request failed" };
    if (response.status === 401 && !quiet401) onUnauthorized();
    throw new ApiError(response.status, error.code, error.message);
  }
  if (payload && typeof payload === "object" && !Array.isArray(payload) && "data" in payload && "error" in payload) {
    return payload.pagination ? { data: payload.data, pagination: payload.pagination } : payload.data;
  }
  return payload;
}

export const get = (path, opts) => api("GET", path, undefined, opts);
export const post = (path, body, opts) => api("POST", path, body === undefined ? {} : body, opts);
export const put = (path, body) => api("PUT", path, body);
export const patch = (path, body) => api("PATCH", path, body);
export const del = (path) => api("DELETE", path);

/** Build a query string, skipping empty values. */
export function qs(params) {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") search.set(k, v);
  }
  const s = search.toString();
  return s ? `?${s}` : "";
}

/**
 * POST /chat and read the SSE stream with fetch (not EventSource: it is a POST).
 * Calls onEvent(name, data) for each event; resolves when the stream ends.
 */
export async function chatStream(body, onEvent, signal) {
  const response = await fetch(BASE + "/chat", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) {
    let error = { code: "HTTP_" + response.status, message: response.statusText };
    try {
      error = (await response.json()).error || error;
    } catch { /* not JSON */ }
    throw new ApiError(response.status, error.code, error.message);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const key = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (key === "event") name = val;
        else if (key === "data") data.push(val);
      }
      if (!data.length) continue;
      let parsed;
      try {
        parsed = JSON.parse(data.join("\n"));
      } catch {
        continue;
      }
      onEvent(name, parsed);
    }
  }
}

/** A readable line for an error from the API or the page: the message, never the code. */
export function describe(err) {
  if (err instanceof ApiError) return plain(err.message || words(err.code));
  return plain(err && err.message ? err.message : String(err));
}
