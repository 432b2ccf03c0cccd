/* agentsvc embeddable chat widget: plain JavaScript, no build step, no dependencies.
 * Embed: set window.agentsvcConfig = {agentId, userId?, userEmail?, userName?, userHash?, userToken?}
 * and load <script src="https://HOST/widget.js" async></script>. See the README (## Widget). */
(function () {
  "use strict";
  var W = window, D = document;
  var existing = W.agentsvc;
  if (existing && existing.loaded) return;

  var MAX_FILE_BYTES = 5 * 1024 * 1024;
  var EXIT_INTENT_DELAY_MS = 3000;
  var MAX_STORED_MESSAGES = 100;
  var cfg = Object.assign({}, W.agentsvcConfig || {});
  var agentId = cfg.agentId;

  // ── Service address: from the config, else from this script's own src ───────────────
  function scriptBase() {
    var el = D.currentScript;
    if (!el || !/widget\.js/.test(el.src || "")) {
      var all = D.querySelectorAll('script[src*="widget.js"]');
      el = all[all.length - 1];
    }
    return el ? el.src.replace(/\/widget\.js(?:[?#].*)?$/, "") : location.origin;
  }
  var base = String(cfg.serviceUrl || scriptBase()).replace(/\/+$/, "");
  var api = base + "/api/v1";

  // ── Storage that never throws (private mode, blocked storage) ───────────────────────
  function store(kind) {
    var s = null;
    try { s = W[kind]; s.getItem("x"); } catch (e) { s = null; }
    var mem = {};
    return {
      get: function (k) {
        try { var v = s ? s.getItem(k) : mem[k]; return v == null ? null : JSON.parse(v); } catch (e) { return null; }
      },
      set: function (k, v) {
        var t = JSON.stringify(v);
        try { if (s) s.setItem(k, t); else mem[k] = t; } catch (e) { mem[k] = t; }
      },
      del: function (k) { try { if (s) s.removeItem(k); } catch (e) { /* ignore */ } delete mem[k]; }
    };
  }
  var local = store("localStorage"), session = store("sessionStorage");
  var prefix = "agentsvc:" + agentId + ":";
  var K_SESSION = prefix + "session", K_CONV = prefix + "conversation", K_FIRED = prefix + "fired";

  function randomId() {
    if (W.crypto && crypto.randomUUID) return crypto.randomUUID();
    var b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
  }
  function sessionId() {
    var id = local.get(K_SESSION);
    if (typeof id !== "string" || !id) { id = "s_" + randomId(); local.set(K_SESSION, id); }
    return id;
  }
  function loadConv() {
    var c = local.get(K_CONV);
    return c && typeof c === "object" && Array.isArray(c.messages) ? c : { conversationId: null, userId: null, messages: [] };
  }
  var conv = loadConv();
  // A transcript belongs to the user it was held for: another user (or a signed-out
  // visitor on a shared computer) starts afresh.
  if (conv.userId && conv.userId !== userKey()) {
    conv = { conversationId: null, userId: null, messages: [] };
    local.del(K_CONV);
  }
  function saveConv() {
    conv.messages = conv.messages.slice(-MAX_STORED_MESSAGES);
    conv.userId = userKey();
    local.set(K_CONV, conv);
  }

  // ── Events of the JS API ──────────────────────────────────────────────────────────────
  var listeners = {};
  function emit(name, data) {
    (listeners[name] || []).slice().forEach(function (fn) {
      try { fn(data); } catch (e) { if (W.console) console.error(e); }
    });
  }

  // ── Trigger matching: the same rules as agentsvc/services/triggers/rules.py ───────────
  function segments(p) {
    if (p.length > 1 && p.charAt(p.length - 1) === "/") p = p.slice(0, -1);
    return p === "/" ? [] : p.slice(1).split("/");
  }
  function matchSegs(pat, path) {
    if (!pat.length) return !path.length;
    var head = pat[0], rest = pat.slice(1);
    if (head === "**") {
      for (var i = 0; i <= path.length; i++) if (matchSegs(rest, path.slice(i))) return true;
      return false;
    }
    if (!path.length) return false;
    if (head === "*") return path[0] !== "" && matchSegs(rest, path.slice(1));
    return head === path[0] && matchSegs(rest, path.slice(1));
  }
  function globMatches(pattern, path) {
    path = String(path).split("?")[0].split("#")[0];
    if (typeof pattern !== "string" || path.charAt(0) !== "/") return false;
    return matchSegs(segments(pattern), segments(path));
  }
  var MISSING = {};
  function isNum(v) { return typeof v === "number"; }
  function isObj(v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  function isOpObj(c) {
    if (!isObj(c)) return false;
    var ks = Object.keys(c);
    return ks.length > 0 && ks.every(function (k) { return k.charAt(0) === "$"; });
  }
  function jsonEqual(a, b) {
    if (isNum(a) && isNum(b)) return a === b;
    if (Array.isArray(a) || Array.isArray(b)) {
      return Array.isArray(a) && Array.isArray(b) && a.length === b.length &&
        a.every(function (x, i) { return jsonEqual(x, b[i]); });
    }
    if (isObj(a) && isObj(b)) {
      var ka = Object.keys(a), kb = Object.keys(b);
      return ka.length === kb.length && ka.every(function (k) {
        return Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]);
      });
    }
    return typeof a === typeof b && a === b;
  }
  function lookup(data, field) {
    var v = data, parts = field.split(".");
    for (var i = 0; i < parts.length; i++) {
      if (!isObj(v) || !Object.prototype.hasOwnProperty.call(v, parts[i])) return MISSING;
      v = v[parts[i]];
    }
    return v;
  }
  function holds(op, operand, v) {
    var present = v !== MISSING;
    var inList = function () { return present && operand.some(function (x) { return jsonEqual(v, x); }); };
    switch (op) {
      case "$eq": return present && jsonEqual(v, operand);
      case "$ne": return !(present && jsonEqual(v, operand));
      case "$gt": return present && isNum(v) && v > operand;
      case "$gte": return present && isNum(v) && v >= operand;
      case "$lt": return present && isNum(v) && v < operand;
      case "$lte": return present && isNum(v) && v <= operand;
      case "$in": return inList();
      case "$nin": return !inList();
      case "$exists": return present === !!operand;
    }
    return false;
  }
  function eventDataMatches(conditions, data) {
    if (!isObj(data)) data = {};
    return Object.keys(conditions || {}).every(function (field) {
      var c = conditions[field], v = lookup(data, field);
      if (isOpObj(c)) return Object.keys(c).every(function (op) { return holds(op, c[op], v); });
      return holds("$eq", c, v);
    });
  }
  function customEventMatches(conditions, event, data) {
    return conditions.event === event && eventDataMatches(conditions.eventData || {}, data);
  }

  // ── HTTP ──────────────────────────────────────────────────────────────────────────────
  function errorMessage(body, status) {
    return body && body.error && body.error.message ? body.error.message : "Request failed (" + status + ")";
  }
  function request(method, path, body, extra) {
    var opts = Object.assign({ method: method, headers: {} }, extra || {});
    if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(api + path, opts).then(function (r) {
      return r.text().then(function (t) {
        var data = null;
        try { data = t ? JSON.parse(t) : null; } catch (e) { data = null; }
        if (!r.ok) { var err = new Error(errorMessage(data, r.status)); err.status = r.status; throw err; }
        return data;
      });
    });
  }
  function beacon(path, body) {
    return fetch(api + path, {
      method: "POST", keepalive: true, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    }).catch(function () { /* analytics never breaks the page */ });
  }

  // ── DOM helpers: every text goes in as text, never as HTML ──────────────────────────
  function el(tag, attrs, kids) {
    var n = D.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      var v = attrs[k];
      if (v == null || v === false) return;
      if (k === "text") n.textContent = v;
      else if (k.slice(0, 2) === "on") n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? "" : v);
    });
    (kids || []).forEach(function (c) { if (c) n.appendChild(typeof c === "string" ? D.createTextNode(c) : c); });
    return n;
  }
  function safeUrl(u) {
    if (typeof u !== "string") return null;
    try { var p = new URL(u, location.href); } catch (e) { return null; }
    if (p.protocol === "http:" || p.protocol === "https:") return p.href;
    return /^data:image\//i.test(u) ? u : null;
  }
  function str(v) { return v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); }

  var CSS = [
    ":host{all:initial}",
    "*{box-sizing:border-box;font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:14px;line-height:1.4}",
    ".root{position:fixed;right:20px;bottom:20px;z-index:2147483000;display:flex;flex-direction:column;align-items:flex-end;gap:10px;color:#1f2328}",
    "button{cursor:pointer;font:inherit}",
    ".launcher{width:56px;height:56px;border-radius:50%;border:0;background:#2457d6;color:#fff;font-size:24px;box-shadow:0 4px 14px rgba(0,0,0,.25)}",
    ".launcher:focus-visible,button:focus-visible,input:focus-visible,textarea:focus-visible,select:focus-visible{outline:3px solid #f5a623;outline-offset:2px}",
    ".panel{width:min(380px,calc(100vw - 40px));height:min(560px,calc(100vh - 110px));background:#fff;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden}",
    ".panel[hidden],.bubble-wrap[hidden]{display:none}",
    ".head{display:flex;justify-content:space-between;align-items:center;padding:10px 14px;background:#2457d6;color:#fff}",
    ".head h2{margin:0;font-size:15px}",
    ".x{border:0;background:none;color:inherit;font-size:18px}",
    ".log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px}",
    ".msg{max-width:85%;padding:8px 11px;border-radius:10px;white-space:pre-wrap;word-wrap:break-word}",
    ".user{align-self:flex-end;background:#2457d6;color:#fff}",
    ".assistant{align-self:flex-start;background:#f0f2f5}",
    ".err{align-self:stretch;background:#fdecea;color:#8a1c12;border-radius:8px;padding:8px}",
    ".fb{display:flex;gap:4px;margin-top:4px}.fb button{border:1px solid #c9ccd1;background:#fff;border-radius:6px;padding:1px 6px}",
    ".fb button[aria-pressed=true]{background:#dde7fb;border-color:#2457d6}",
    ".tool{align-self:stretch;border:1px solid #e1e4e8;border-radius:8px;padding:8px;overflow-x:auto}",
    ".cards{display:flex;gap:8px;overflow-x:auto}.card{min-width:150px;border:1px solid #e1e4e8;border-radius:8px;padding:8px}",
    ".card img,.tool img{max-width:100%;border-radius:6px}",
    "table{border-collapse:collapse}td,th{border:1px solid #e1e4e8;padding:3px 6px;text-align:left}",
    "pre{margin:0;white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px}",
    ".choices{display:flex;flex-wrap:wrap;gap:6px}.choices button{border:1px solid #2457d6;color:#2457d6;background:#fff;border-radius:14px;padding:3px 10px}",
    "form.form{display:flex;flex-direction:column;gap:8px}form.form label{display:flex;flex-direction:column;gap:2px;font-weight:600}",
    "form.form input,form.form textarea,form.form select{font-weight:400;padding:6px;border:1px solid #c9ccd1;border-radius:6px}",
    ".ferr{color:#b42318;font-weight:400;font-size:12px}.ok{color:#116329}",
    ".primary{background:#2457d6;color:#fff;border:0;border-radius:6px;padding:7px 12px}",
    ".compose{display:flex;gap:6px;padding:10px;border-top:1px solid #e1e4e8}",
    ".compose textarea{flex:1;resize:none;height:38px;padding:8px;border:1px solid #c9ccd1;border-radius:8px}",
    ".bubble-wrap{display:flex;gap:4px;align-items:flex-start}",
    ".bubble{max-width:260px;text-align:left;background:#fff;color:#1f2328;border:0;border-radius:12px;padding:10px 12px;box-shadow:0 4px 14px rgba(0,0,0,.2)}",
    ".bubble-x{border:0;background:#fff;border-radius:50%;width:22px;height:22px;box-shadow:0 2px 6px rgba(0,0,0,.2)}",
    ".who{display:block;font-size:12px;font-weight:600;color:#57606a;margin-bottom:2px}",
    ".note{align-self:center;max-width:90%;text-align:center;color:#57606a;font-size:13px}",
    ".human-btn{border:1px solid #fff;background:none;color:#fff;border-radius:12px;padding:2px 9px;font-size:12px;margin-left:auto;margin-right:8px}",
    ".contact{display:flex;gap:6px;align-self:stretch}.contact input{flex:1;padding:6px;border:1px solid #c9ccd1;border-radius:6px}"
  ].join("\n");

  // ── The UI, in a shadow root so host styles neither leak in nor out ─────────────────
  var host, panel, log, input, sendBtn, launcher, bubbleWrap, bubbleBtn, humanBtn;
  var isOpen = false, busy = false, bubbleTimer = null, proactive = null;
  // The trigger a chat starts from (an open_chat trigger, or a bubble clicked): sent with the
  // first message of a new conversation, for the trigger's funnel in the analytics.
  var chatTrigger = null;

  function build() {
    host = el("div", { id: "agentsvc-widget" });
    var shadow = host.attachShadow({ mode: "open" });
    // A constructed stylesheet is not inline style, so a site's CSP (style-src) allows it.
    try {
      var sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
      shadow.adoptedStyleSheets = [sheet];
    } catch (e) {
      shadow.appendChild(el("style", { text: CSS }));
    }
    log = el("div", { class: "log", role: "log", "aria-label": "Conversation" });
    input = el("textarea", { "aria-label": "Message", placeholder: "Type a message…", rows: "1" });
    sendBtn = el("button", { type: "submit", class: "primary", text: "Send" });
    panel = el("div", { id: "panel", class: "panel", role: "dialog", "aria-label": cfg.title || "Chat", hidden: true }, [
      el("div", { class: "head" }, [
        el("h2", { text: cfg.title || "Chat" }),
        humanBtn = el("button", { type: "button", class: "human-btn", hidden: true, text: "Talk to a person", onclick: function () { askForPerson(); } }),
        el("button", { class: "x", type: "button", "aria-label": "Close", text: "×", onclick: function () { close(); } })
      ]),
      log,
      el("form", { class: "compose", onsubmit: function (e) { e.preventDefault(); send(input.value); } }, [input, sendBtn])
    ]);
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(input.value); }
    });
    bubbleBtn = el("button", { type: "button", class: "bubble", onclick: bubbleClicked });
    bubbleWrap = el("div", { class: "bubble-wrap", hidden: true }, [
      bubbleBtn,
      el("button", { type: "button", class: "bubble-x", "aria-label": "Dismiss", text: "×", onclick: function () { hideBubble(); } })
    ]);
    launcher = el("button", {
      type: "button", class: "launcher", "aria-expanded": "false", "aria-controls": "panel", "aria-label": "Open chat", text: "💬",
      onclick: function () { toggle(); }
    });
    var wrap = el("div", { class: "root" }, [panel, bubbleWrap, launcher]);
    wrap.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && isOpen) { e.stopPropagation(); close(); }
    });
    shadow.appendChild(wrap);
    D.body.appendChild(host);
    conv.messages.forEach(function (m) { renderMessage(m); });
    follow();
  }

  function scrollLog() { log.scrollTop = log.scrollHeight; }

  function renderMessage(m) {
    var node = el("div", { class: "msg " + m.role });
    if (m.author && m.author.type === "human") node.appendChild(el("span", { class: "who", text: m.author.name || "Team" }));
    node.appendChild(D.createTextNode(m.content));
    log.appendChild(node);
    if (m.role === "assistant" && m.id && !(m.author && m.author.type === "human")) addFeedback(node, m);
    scrollLog();
    return node;
  }

  function addFeedback(node, m) {
    var bar = el("div", { class: "fb" });
    [["up", "Good answer", "👍"], ["down", "Bad answer", "👎"]].forEach(function (spec) {
      var b = el("button", {
        type: "button", "aria-label": spec[1], "aria-pressed": String(m.rating === spec[0]), text: spec[2],
        onclick: function () { rate(m, spec[0], bar); }
      });
      bar.appendChild(b);
    });
    node.appendChild(bar);
  }

  function rate(m, rating, bar) {
    if (!conv.conversationId) return;
    request("POST", "/conversations/" + encodeURIComponent(conv.conversationId) + "/feedback",
      { messageId: m.id, rating: rating }, { headers: { "X-Session-Id": sessionId() } })
      .then(function () {
        m.rating = rating;
        saveConv();
        bar.querySelectorAll("button").forEach(function (b, i) {
          b.setAttribute("aria-pressed", String((i === 0 ? "up" : "down") === rating));
        });
        emit("feedback", { messageId: m.id, rating: rating });
      })
      .catch(function (e) { showError(e.message); });
  }

  function showError(message, retry) {
    var box = el("div", { class: "err", role: "alert" }, [el("span", { text: message })]);
    if (retry) {
      box.appendChild(D.createTextNode(" "));
      box.appendChild(el("button", {
        type: "button", text: "Retry", onclick: function () { box.remove(); retry(); }
      }));
    }
    log.appendChild(box);
    scrollLog();
    emit("error", { message: message });
  }

  // ── Open / close ────────────────────────────────────────────────────────────────────
  function open(opts) {
    if (!isOpen) {
      isOpen = true;
      hideBubble();
      panel.hidden = false;
      launcher.setAttribute("aria-expanded", "true");
      launcher.setAttribute("aria-label", "Close chat");
      emit("open", {});
    }
    if (opts && typeof opts.message === "string") input.value = opts.message;
    input.focus();
    scrollLog();
  }
  function close() {
    if (!isOpen) return;
    isOpen = false;
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    launcher.setAttribute("aria-label", "Open chat");
    launcher.focus();
    if (proactive && proactive.action !== "show_bubble") proactive = null;
    emit("close", {});
  }
  function toggle() { if (isOpen) close(); else open(); }

  // ── Chat: fetch + stream reader over the SSE response ───────────────────────────────
  // Who the visitor is, to tell users apart in this browser: userId, else the `sub` of a
  // userToken (read, not verified: the service verifies it).
  function userKey() {
    if (cfg.userId) return cfg.userId;
    if (!cfg.userToken) return null;
    try {
      var sub = JSON.parse(atob(String(cfg.userToken).split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
      return typeof sub === "string" && sub ? sub : null;
    } catch (e) { return null; }
  }
  function userPayload() {
    if (!cfg.userId) return null;
    var u = { id: String(cfg.userId) };
    if (cfg.userEmail) u.email = String(cfg.userEmail);
    if (cfg.userName) u.name = String(cfg.userName);
    return u;
  }

  function send(text) {
    text = String(text == null ? "" : text).trim();
    if (!text || busy) return Promise.resolve(false);
    if (!isOpen) open();
    input.value = "";
    var m = { role: "user", content: text };
    conv.messages.push(m);
    saveConv();
    renderMessage(m);
    emit("message", { role: "user", content: text });
    if (proactive && proactive.action === "open_chat") {
      converted(proactive);
      chatTrigger = proactive.trigger.id;
      proactive = null;
    }
    return stream(text);
  }

  function stream(text) {
    busy = true;
    sendBtn.disabled = true;
    var body = { agentId: agentId, messages: [{ role: "user", content: text }], sessionId: sessionId() };
    if (conv.conversationId) body.conversationId = conv.conversationId;
    else {
      if (chatTrigger) body.triggerId = chatTrigger;
      body.messages = conv.messages.filter(function (x) { return x.role === "user" || x.role === "assistant"; })
        .map(function (x) { return { role: x.role, content: x.content }; });
    }
    var user = userPayload();
    if (user) body.user = user;
    if (user && cfg.userHash) body.userHash = String(cfg.userHash);
    if (cfg.userToken) body.userToken = String(cfg.userToken);
    var reply = { role: "assistant", content: "", id: null, rating: null };
    // The streamed text goes in a node marked aria-busy until the turn ends, so the log
    // (a polite live region) announces the final text once; a tool result starts a new node.
    var node = null, textNode = null, nodes = [];
    function finish() {
      busy = false;
      sendBtn.disabled = false;
      nodes.forEach(function (n) { n.setAttribute("aria-busy", "false"); });
      if (reply.content) {
        conv.messages.push(reply);
        saveConv();
        if (reply.id && node) addFeedback(node, reply);
        emit("message", { role: "assistant", content: reply.content, messageId: reply.id });
      }
    }
    function retry() { return stream(text); }
    function onEvent(name, data) {
      if (name === "message_start") {
        if (data.conversationId) { conv.conversationId = data.conversationId; chatTrigger = null; saveConv(); }
        reply.id = data.messageId || null;
      } else if (name === "content_block_delta" && data.delta && typeof data.delta.text === "string") {
        if (!node) {
          node = el("div", { class: "msg assistant", "aria-busy": "true" });
          textNode = D.createTextNode("");
          node.appendChild(textNode);
          log.appendChild(node);
          nodes.push(node);
        }
        reply.content += data.delta.text;
        textNode.data += data.delta.text;
        scrollLog();
      } else if (name === "tool_result") {
        node = null;
        if (data.toolName !== "request_human") renderToolResult(data);
      } else if (name === "handoff") {
        handedOver(data);
      } else if (name === "error") {
        var e = data.error || {};
        throw new Error(e.message || "The assistant could not answer.");
      }
      emit("stream", { event: name, data: data });
    }
    return fetch(api + "/chat", {
      method: "POST", headers: { "Content-Type": "application/json", Accept: "text/event-stream" }, body: JSON.stringify(body)
    }).then(function (r) {
      if (!r.ok || !r.body) {
        return r.text().then(function (t) {
          var parsed = null;
          try { parsed = JSON.parse(t); } catch (e) { parsed = null; }
          if (r.status === 404 && body.conversationId) {
            // The stored conversation is gone (deleted): start a new one with the transcript.
            conv.conversationId = null;
            saveConv();
            busy = false;
            return stream(text).then(function () { throw null; });
          }
          throw new Error(errorMessage(parsed, r.status));
        });
      }
      return readSse(r, onEvent);
    }).then(function () { finish(); return true; }, function (err) {
      if (err === null) return true; // answered by the retry of a lost conversation
      finish();
      showError(err && err.message ? err.message : "Network error", retry);
      return false;
    });
  }

  // Reads an SSE response, calling onEvent(name, data, id) for each event.
  function readSse(r, onEvent) {
    var reader = r.body.getReader(), decoder = new TextDecoder(), buf = "";
    function pump() {
      return reader.read().then(function (res) {
        buf += decoder.decode(res.value || new Uint8Array(), { stream: !res.done });
        var parts = buf.split(/\r?\n\r?\n/);
        buf = res.done ? "" : parts.pop();
        parts.forEach(function (block) {
          var name = "message", data = "", id = null;
          block.split(/\r?\n/).forEach(function (line) {
            if (line.indexOf("event:") === 0) name = line.slice(6).trim();
            else if (line.indexOf("data:") === 0) data += line.slice(5).replace(/^ /, "");
            else if (line.indexOf("id:") === 0) id = line.slice(3).trim();
          });
          if (!data) return;
          var parsed;
          try { parsed = JSON.parse(data); } catch (e) { return; }
          onEvent(name, parsed, id);
        });
        return res.done ? null : pump();
      });
    }
    return pump();
  }

  // ── A person from the team: handoff, live replies, an address when away ─────────────
  var handoffOn = false, following = null, followRetry = null, followAbort = null;
  function note(text) {
    log.appendChild(el("div", { class: "note", role: "status", text: text }));
    scrollLog();
  }
  function loadHandoff() {
    return request("GET", "/widget/handoff/" + encodeURIComponent(agentId)).then(function (h) {
      handoffOn = !!(h && h.enabled);
      humanBtn.hidden = !handoffOn;
    }, function () { /* no handoff: the button stays hidden */ });
  }
  function askForPerson() {
    var first = conv.conversationId ? Promise.resolve(true) : send("I would like to talk to a person.");
    return first.then(function (ok) {
      if (!ok || !conv.conversationId || conv.status === "waiting" || conv.status === "human") return;
      return request("POST", "/conversations/" + encodeURIComponent(conv.conversationId) + "/handoff",
        { sessionId: sessionId() }).then(function (r) { handedOver(r && r.data); }, function (e) { showError(e.message); });
    });
  }
  function handedOver(h) {
    if (!h || !h.status) return;
    var was = conv.status;
    conv.status = h.status;
    saveConv();
    if (h.status === "waiting" && was !== "waiting") {
      if (h.online === false) askAddress(h.offlineMessage);
      else note("A person from the team will answer here shortly.");
    }
    emit("handoff", h);
    follow();
  }
  function askAddress(message) {
    if (message) note(message);
    var field = el("input", { type: "email", "aria-label": "Your e-mail address", placeholder: "you@example.com", required: true, autocomplete: "email" });
    var box = el("form", { class: "contact", onsubmit: function (e) {
      e.preventDefault();
      request("POST", "/conversations/" + encodeURIComponent(conv.conversationId) + "/contact",
        { sessionId: sessionId(), email: field.value.trim() }).then(function () {
        box.remove();
        note("Thank you. We will answer at " + field.value.trim() + ".");
      }, function (err) { showError(err.message); });
    } }, [field, el("button", { type: "submit", class: "primary", text: "Send" })]);
    log.appendChild(box);
    scrollLog();
  }
  function known(id) {
    return conv.messages.some(function (m) { return m.id === id; });
  }
  function onLive(name, data, id) {
    if (id) { conv.lastEventId = id; saveConv(); }
    if (name === "status") {
      var was = conv.status;
      if (data.status === "human" && data.assignee && (was !== "human" || !conv.assignee || conv.assignee.id !== data.assignee.id) && id) {
        note((data.assignee.name || "A person") + " joined the conversation.");
      } else if (data.status === "bot" && was && was !== "bot" && id) {
        note("The assistant is back.");
      }
      conv.status = data.status;
      conv.assignee = data.assignee || null;
      saveConv();
      // Back with the agent: the chat stream carries its answers; stop following.
      if ((data.status === "bot" || data.status === "closed") && followAbort) followAbort.abort();
    } else if (name === "message" && data.message) {
      var m = data.message;
      if (m.role === "user" || known(m.id) || !m.content) return;
      var shown = { role: "assistant", content: m.content, id: m.id, rating: null, author: m.author };
      conv.messages.push(shown);
      saveConv();
      renderMessage(shown);
      emit("message", { role: "assistant", content: m.content, messageId: m.id, author: m.author });
    }
  }
  // Follow the conversation live while a person is (or may be) in it: replayed from the
  // last event seen, so nothing is lost across reconnects and page loads.
  function follow() {
    if (following || !conv.conversationId || !(conv.status === "waiting" || conv.status === "human")) return;
    var id = conv.conversationId;
    var headers = { "X-Session-Id": sessionId(), Accept: "text/event-stream", "Last-Event-ID": String(conv.lastEventId || 0) };
    followAbort = W.AbortController ? new AbortController() : null;
    following = fetch(api + "/conversations/" + encodeURIComponent(id) + "/events",
      { headers: headers, signal: followAbort ? followAbort.signal : undefined })
      .then(function (r) {
        if (!r.ok || !r.body) throw new Error("events " + r.status);
        return readSse(r, function (name, data, eid) { if (conv.conversationId === id) onLive(name, data, eid); });
      })
      .then(function () { return 0; }, function () { return 1; })
      .then(function (failed) {
        following = null;
        clearTimeout(followRetry);
        followRetry = setTimeout(follow, failed ? 5000 : 500);
      });
  }

  // ── Tool results by displayConfig type ──────────────────────────────────────────────
  function pick(obj, mappings, slot) {
    var key = (mappings && mappings[slot]) || slot;
    var v = lookup(obj, key);
    return v === MISSING ? null : v;
  }
  function card(item, dc) {
    var fm = dc.fieldMappings || {}, opt = dc.options || {};
    var img = safeUrl(pick(item, fm, "image")), url = safeUrl(pick(item, fm, "url"));
    var price = pick(item, fm, "price"), desc = pick(item, fm, "description");
    var title = str(pick(item, fm, "title"));
    return el("div", { class: "card" }, [
      img && opt.showImage !== false ? el("img", { src: img, alt: title }) : null,
      url ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: title })
        : el("strong", { text: title }),
      price != null && opt.showPrice !== false ? el("div", { text: str(price) }) : null,
      desc != null ? el("div", { text: str(desc) }) : null
    ]);
  }
  function listOf(output, dc) {
    var items = output;
    if (!Array.isArray(items) && isObj(output)) items = pick(output, dc.fieldMappings, "items");
    return Array.isArray(items) ? items : [output];
  }
  function renderToolResult(ev) {
    if (ev.form) { renderForm(ev.form, log); return; }
    var dc = isObj(ev.displayConfig) ? ev.displayConfig : { type: "text" };
    var out = ev.output, box = el("div", { class: "tool", "data-tool": ev.toolName || "" });
    if (ev.isError) { box.appendChild(el("div", { class: "ferr", text: str(out) })); }
    else {
      switch (dc.type) {
        case "product_card": box.appendChild(card(isObj(out) ? out : {}, dc)); break;
        case "product_carousel":
          box.appendChild(el("div", { class: "cards" }, listOf(out, dc).map(function (i) { return card(isObj(i) ? i : {}, dc); })));
          break;
        case "image": {
          var src = safeUrl(typeof out === "string" ? out : pick(out, dc.fieldMappings, "image") || pick(out, dc.fieldMappings, "url"));
          box.appendChild(src ? el("img", { src: src, alt: str(isObj(out) ? pick(out, dc.fieldMappings, "title") || "" : "") }) : el("div", { text: str(out) }));
          break;
        }
        case "table": {
          var rows = listOf(out, dc).filter(isObj), cols = [];
          rows.forEach(function (r) { Object.keys(r).forEach(function (k) { if (cols.indexOf(k) < 0) cols.push(k); }); });
          box.appendChild(el("table", {}, [
            el("thead", {}, [el("tr", {}, cols.map(function (c) { return el("th", { text: c }); }))]),
            el("tbody", {}, rows.map(function (r) {
              return el("tr", {}, cols.map(function (c) { return el("td", { text: str(r[c]) }); }));
            }))
          ]));
          break;
        }
        case "buttons":
          box.appendChild(el("div", { class: "choices" }, listOf(out, dc).map(function (b) {
            var label = isObj(b) ? str(b.label != null ? b.label : b.value) : str(b);
            var value = isObj(b) ? str(b.value != null ? b.value : b.label) : str(b);
            return el("button", { type: "button", text: label, onclick: function () { send(value); } });
          })));
          break;
        case "custom": box.appendChild(el("pre", { text: JSON.stringify(out, null, 2) })); break;
        default: box.appendChild(el("div", { text: str(out) }));
      }
    }
    log.appendChild(box);
    scrollLog();
  }

  // ── Forms ───────────────────────────────────────────────────────────────────────────
  var handlers = {};
  // The same checks as the server (agentsvc/services/forms/values.py), so errors show early.
  var EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s.]+$/, TEL = /^\+?[0-9 ().\-\/]{3,30}$/;
  var DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?$/;
  function rule(f, name) {
    var r = f.validation && f.validation[name];
    if (r == null) return null;
    return isObj(r) ? r : { value: r };
  }
  function empty(v) { return v == null || (typeof v === "string" && !v.trim()) || (Array.isArray(v) && !v.length); }
  function validDate(v) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) return false;
    var d = new Date(v + "T00:00:00Z");
    return !isNaN(d) && d.toISOString().slice(0, 10) === v;
  }
  function validateField(f, v) {
    var req = rule(f, "required"), t = f.type, r, re;
    if (empty(v)) return req && req.value ? req.message || "This field is required" : null;
    if (t === "file" || t === "image") {
      if (v.size > MAX_FILE_BYTES) return "The file is over 5 MB";
      if (t === "image" && !/^image\//.test(v.type || "")) return "Must be an image";
      return null;
    }
    if (t === "number") {
      if (typeof v !== "number" || !isFinite(v)) return "Must be a number";
      if ((r = rule(f, "min")) && v < r.value) return r.message || "Must be at least " + r.value;
      if ((r = rule(f, "max")) && v > r.value) return r.message || "Must be at most " + r.value;
      return null;
    }
    if (typeof v !== "string") return null;
    if (v.length > 10000) return "Must be at most 10000 characters";
    if (t !== "text" && t !== "textarea") v = v.trim();
    if (t === "email" && !EMAIL.test(v)) return "Must be an e-mail address";
    if (t === "tel" && (!TEL.test(v) || v.replace(/\D/g, "").length < 3)) return "Must be a telephone number";
    if (t === "date" && !validDate(v)) return "Must be a date (YYYY-MM-DD)";
    if (t === "datetime" && (!DATETIME.test(v) || !validDate(v.slice(0, 10)))) return "Must be a date and time";
    if ((r = rule(f, "minLength")) && v.length < r.value) return r.message || "Must be at least " + r.value + " characters";
    if ((r = rule(f, "maxLength")) && v.length > r.value) return r.message || "Must be at most " + r.value + " characters";
    if ((r = rule(f, "pattern")) && (re = simplePattern(r.value, v.length)) && !re.test(v)) {
      return r.message || "Does not have the expected format";
    }
    return null;
  }
  // The browser's RegExp backtracks: `^(a+)+$` on 30 characters would freeze the page. A
  // pattern is tried here only when its backtracking is provably small for this value (no
  // quantified group, no backreference or lookaround, few choices); any other is left to
  // the server, which checks every pattern in linear time and names the field on refusal.
  var PATTERN_BUDGET = 1e6;
  function patternChoices(src, n) {
    var cost = 1, inClass = false, i, c, m;
    for (i = 0; i < src.length; i++) {
      c = src.charAt(i);
      if (c === "\\") {
        if (!inClass && /[1-9k]/.test(src.charAt(i + 1))) return Infinity;
        i++;
      } else if (inClass) {
        if (c === "]") inClass = false;
      } else if (c === "[") {
        inClass = true;
      } else if (c === "(") {
        if (src.charAt(i + 1) !== "?") continue;
        if (src.charAt(i + 2) === ":") { i += 2; continue; }
        m = /^\(\?P?<[A-Za-z_][A-Za-z0-9_]*>/.exec(src.slice(i));
        if (!m) return Infinity; // lookaround, inline flags: not simple
        i += m[0].length - 1;
      } else if (c === ")") {
        if (/[*+?{]/.test(src.charAt(i + 1))) return Infinity;
      } else if (c === "*" || c === "+") {
        cost *= n + 1;
        if (src.charAt(i + 1) === "?") i++;
      } else if (c === "?") {
        cost *= 2;
      } else if (c === "|") {
        cost *= 2;
      } else if (c === "{" && (m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i)))) {
        if (m[2]) cost *= (m[3] === "" ? n : Math.min(+m[3] - +m[1], n)) + 1;
        i += m[0].length - 1;
        if (src.charAt(i + 1) === "?") i++;
      }
      if (cost > PATTERN_BUDGET) return Infinity;
    }
    return cost;
  }
  function simplePattern(src, n) {
    if (typeof src !== "string" || src.length > 500 || patternChoices(src, n) > PATTERN_BUDGET) return null;
    try { return new RegExp("^(?:" + src + ")$"); } catch (e) { return null; /* the server checks */ }
  }
  function readDataUrl(file) {
    return new Promise(function (resolve, reject) {
      var fr = new FileReader();
      // The file name travels as a data URL parameter, which the server keeps.
      fr.onload = function () {
        resolve(String(fr.result).replace(/^data:([^;,]*)/, function (m, type) {
          return "data:" + (type || "application/octet-stream") + ";name=" + encodeURIComponent(file.name);
        }));
      };
      fr.onerror = function () { reject(new Error("Could not read the file")); };
      fr.readAsDataURL(file);
    });
  }
  var formSeq = 0;
  function renderForm(form, into, trigger) {
    var schema = form.formSchema || {}, fields = schema.fields || [];
    var toolId = form.toolId, impressionAt = Date.now(), startedAt = null, controls = {};
    var idp = "f" + (++formSeq) + "_";
    beacon("/form-submissions/event", { toolId: toolId, eventType: "impression", sessionId: sessionId() });
    function started() {
      if (startedAt) return;
      startedAt = Date.now();
      beacon("/form-submissions/event", { toolId: toolId, eventType: "started", sessionId: sessionId() });
    }
    var formEl = el("form", { class: "form", novalidate: true, "aria-label": schema.title || form.toolName || "Form" });
    if (schema.title) formEl.appendChild(el("strong", { text: schema.title }));
    if (schema.description) formEl.appendChild(el("div", { text: schema.description }));
    fields.forEach(function (f) {
      var id = idp + f.name, c, t = f.type;
      var req = rule(f, "required");
      var attrs = { id: id, name: f.name, placeholder: f.placeholder, required: !!(req && req.value) };
      if (t === "textarea") c = el("textarea", attrs);
      else if (t === "select" || t === "multiselect") {
        attrs.multiple = t === "multiselect";
        c = el("select", attrs, (t === "select" ? [el("option", { value: "", text: "—" })] : []).concat(
          (f.options || []).map(function (o, i) { return el("option", { value: String(i), text: str(o.label) }); })));
      } else {
        attrs.type = { email: "email", tel: "tel", number: "number", date: "date", datetime: "datetime-local", file: "file", image: "file" }[t] || "text";
        if (t === "image") attrs.accept = "image/*";
        if (t === "number") attrs.step = "any";
        c = el("input", attrs);
      }
      var err = el("span", { class: "ferr", id: id + "_err", "aria-live": "polite" });
      c.setAttribute("aria-describedby", err.id);
      c.addEventListener("input", started);
      c.addEventListener("change", started);
      controls[f.name] = { field: f, control: c, err: err };
      formEl.appendChild(el("label", { for: id }, [f.label, c, f.description ? el("small", { text: f.description }) : null, err]));
    });
    var submitBtn = el("button", { type: "submit", class: "primary", text: schema.submitLabel || "Submit" });
    var result = el("div", { role: "status" });
    formEl.appendChild(submitBtn);
    formEl.appendChild(result);
    function value(entry) {
      var f = entry.field, c = entry.control;
      if (f.type === "select") return c.value === "" ? null : f.options[Number(c.value)].value;
      if (f.type === "multiselect") {
        return Array.prototype.filter.call(c.options, function (o) { return o.selected; })
          .map(function (o) { return f.options[Number(o.value)].value; });
      }
      if (f.type === "file" || f.type === "image") return c.files && c.files[0] ? c.files[0] : null;
      if (f.type === "number") return c.value === "" ? (c.validity && c.validity.badInput ? NaN : null) : Number(c.value);
      return c.value;
    }
    formEl.addEventListener("submit", function (e) {
      e.preventDefault();
      var values = {}, bad = null;
      Object.keys(controls).forEach(function (name) {
        var entry = controls[name], v = value(entry), msg = validateField(entry.field, v);
        entry.err.textContent = msg || "";
        entry.control.setAttribute("aria-invalid", msg ? "true" : "false");
        if (msg && !bad) bad = entry.control;
        values[name] = v;
      });
      if (bad) { bad.focus(); return; }
      started();
      submitBtn.disabled = true;
      result.textContent = "";
      var names = Object.keys(values);
      Promise.all(names.map(function (n) {
        var v = values[n];
        return W.File && v instanceof W.File ? readDataUrl(v) : v;
      })).then(function (vals) {
        var formData = {}, completed = [];
        names.forEach(function (n, i) { if (!empty(vals[i])) { formData[n] = vals[i]; completed.push(n); } });
        var body = { toolId: toolId, formData: formData, fieldsCompleted: completed, impressionAt: impressionAt, startedAt: startedAt, sessionId: sessionId() };
        if (conv.conversationId) body.conversationId = conv.conversationId;
        if (trigger && trigger.trigger) body.triggerId = trigger.trigger.id;
        return request("POST", "/form-submissions/submit", body).then(function (res) {
          return runClient(res, form, formData).then(function (client) {
            var ok = res.success !== false && (!client || client.success);
            var msg = client && client.message ? client.message
              : ok ? schema.successMessage || "Thank you!" : "Sorry, the form could not be processed.";
            formEl.replaceChildren(el("div", { class: ok ? "ok" : "ferr", role: "status", text: msg }));
            emit("form_submit", { toolId: toolId, submissionId: res.submissionId, success: ok, data: formData });
            if (trigger) converted(trigger);
            if (proactive === trigger) proactive = null;
          });
        });
      }).catch(function (err) {
        submitBtn.disabled = false;
        result.className = "ferr";
        result.textContent = err.message || "Could not send the form";
      });
    });
    into.appendChild(el("div", { class: "tool" }, [formEl]));
    scrollLog();
    emit("form_show", { toolId: toolId });
    return formEl;
  }
  function runClient(res, form, formData) {
    var mode = res.executionMode || form.executionMode;
    if (mode !== "client" && mode !== "both") return Promise.resolve(null);
    var name = res.clientHandler || form.clientHandler, fn = handlers[name];
    if (!name) return Promise.resolve(null); // a form with no handler only stores its submissions
    var run = fn ? Promise.resolve().then(function () {
      return fn(formData, { toolId: form.toolId, toolName: form.toolName, submissionId: res.submissionId });
    }) : Promise.resolve({ success: false, message: "No handler registered for " + name });
    return run.then(function (out) {
      return isObj(out) ? { success: !!out.success, message: out.message, data: out.data } : { success: !!out };
    }, function (err) {
      return { success: false, message: err && err.message ? String(err.message) : "The form handler failed" };
    }).then(function (outcome) {
      var body = { submissionId: res.submissionId, success: outcome.success, sessionId: sessionId() };
      if (typeof outcome.message === "string") body.message = outcome.message.slice(0, 2000);
      if (isObj(outcome.data)) body.data = outcome.data;
      return request("POST", "/form-submissions/client-result", body).then(function () { return outcome; });
    });
  }
  function showForm(toolIdOrName, trigger) {
    var q = "?agentId=" + encodeURIComponent(agentId);
    return request("GET", "/triggers/form/" + encodeURIComponent(toolIdOrName) + q).then(function (form) {
      open();
      return renderForm(form, log, trigger);
    }, function (e) {
      if (trigger && proactive === trigger) proactive = null;
      if (W.console) console.warn("agentsvc: form " + toolIdOrName + ": " + e.message);
      throw e;
    });
  }

  // ── Bubble ──────────────────────────────────────────────────────────────────────────
  function showBubble(message, seconds, trigger) {
    clearTimeout(bubbleTimer);
    bubbleBtn.textContent = String(message);
    bubbleBtn.bubbleTrigger = trigger || null;
    bubbleWrap.hidden = false;
    if (seconds > 0) bubbleTimer = setTimeout(hideBubble, seconds * 1000);
    emit("bubble", { message: String(message) });
  }
  function hideBubble() {
    clearTimeout(bubbleTimer);
    if (bubbleWrap.hidden) return;
    bubbleWrap.hidden = true;
    if (proactive && proactive.action === "show_bubble") proactive = null;
  }
  function bubbleClicked() {
    var t = bubbleBtn.bubbleTrigger;
    hideBubble();
    open();
    if (t) { converted(t); chatTrigger = t.trigger.id; }
  }

  // ── Triggers ────────────────────────────────────────────────────────────────────────
  var triggers = [], pageStart = Date.now(), pageFired = {}, timers = [], maxScrollY = 0, lastScroll = null;
  function firedOnce() { var f = session.get(K_FIRED); return Array.isArray(f) ? f : []; }
  function eligible(t) {
    if (pageFired[t.id] || (t.triggerOnce !== false && firedOnce().indexOf(t.id) >= 0)) return false;
    return true;
  }
  function triggerEvent(t, type) {
    return beacon("/triggers/event", {
      agentId: agentId, triggerId: t.id, triggerName: t.name, triggerType: t.triggerType,
      actionType: t.actionType, eventType: type, sessionId: sessionId(), pagePath: location.pathname
    });
  }
  function converted(t) {
    if (!t || t.converted) return;
    t.converted = true;
    triggerEvent(t.trigger, "converted");
    emit("trigger_converted", { triggerId: t.trigger.id, name: t.trigger.name });
  }
  // A bubble is only a hint: a trigger that opens the chat or shows a form replaces it,
  // so a bubble left showing never blocks the actions a site owner cares most about.
  var REPLACES_BUBBLE = { open_chat: true, show_form: true };
  function consider(candidates) {
    // Lower priority values go first; only one proactive action at a time, none while open.
    candidates = candidates.filter(eligible).sort(function (a, b) { return (a.priority || 0) - (b.priority || 0); });
    if (proactive && proactive.action === "show_bubble") {
      candidates = candidates.filter(function (t) { return REPLACES_BUBBLE[t.actionType] === true; });
    } else if (proactive) return;
    if (!candidates.length || isOpen) return;
    fire(candidates[0]);
  }
  function fire(t) {
    if (REPLACES_BUBBLE[t.actionType] === true) hideBubble();
    pageFired[t.id] = true;
    if (t.triggerOnce !== false) { var f = firedOnce(); f.push(t.id); session.set(K_FIRED, f); }
    var run = { trigger: t, action: t.actionType, converted: false };
    proactive = run;
    triggerEvent(t, "fired");
    emit("trigger", { triggerId: t.id, name: t.name, actionType: t.actionType });
    var ac = t.actionConfig || {};
    if (t.actionType === "open_chat") {
      open(typeof ac.message === "string" ? { message: ac.message } : undefined);
    } else if (t.actionType === "show_bubble") {
      showBubble(ac.message || "", Number(ac.duration) || 0, run);
    } else if (t.actionType === "show_form") {
      showForm(ac.toolId, run).catch(function () { /* logged */ });
    } else proactive = null;
  }
  function ofType(type) { return triggers.filter(function (t) { return t.triggerType === type; }); }
  function armPage() {
    timers.forEach(clearTimeout);
    timers = [];
    pageStart = Date.now();
    pageFired = {};
    maxScrollY = W.scrollY;
    ofType("time_on_page").forEach(function (t) {
      var ms = Math.max(0, Number((t.conditions || {}).timeOnPage) || 0) * 1000;
      timers.push(setTimeout(function () { consider([t]); }, ms));
    });
    consider(ofType("page_view").filter(function (t) { return globMatches((t.conditions || {}).page, location.pathname); }));
  }
  function onScroll() {
    var y = W.scrollY, room = D.documentElement.scrollHeight - W.innerHeight;
    if (room > 0) {
      var pct = Math.min(100, (y / room) * 100);
      consider(ofType("scroll_depth").filter(function (t) { return pct >= Number((t.conditions || {}).scrollDepth); }));
    }
    // Mobile exit intent: a quick scroll back up (no pointer can leave the viewport there).
    var now = Date.now();
    if (coarse() && now - pageStart >= EXIT_INTENT_DELAY_MS && lastScroll && now - lastScroll.t < 400 &&
        lastScroll.y - y > W.innerHeight * 0.3 && maxScrollY > W.innerHeight) exitIntent();
    if (!lastScroll || now - lastScroll.t >= 400) lastScroll = { y: y, t: now };
    maxScrollY = Math.max(maxScrollY, y);
  }
  function coarse() { return !!(W.matchMedia && W.matchMedia("(pointer: coarse)").matches); }
  function exitIntent() {
    if (Date.now() - pageStart >= EXIT_INTENT_DELAY_MS) consider(ofType("exit_intent"));
  }
  function watchPage() {
    W.addEventListener("scroll", onScroll, { passive: true });
    D.addEventListener("mouseout", function (e) {
      if (!e.relatedTarget && e.clientY <= 0) exitIntent();
    });
    // SPA navigation: wrap history methods (keeping the host's behaviour) and listen to popstate.
    var last = location.pathname;
    function changed() { if (location.pathname !== last) { last = location.pathname; armPage(); } }
    ["pushState", "replaceState"].forEach(function (m) {
      var orig = history[m];
      history[m] = function () { var r = orig.apply(this, arguments); changed(); return r; };
    });
    W.addEventListener("popstate", changed);
  }
  function loadTriggers() {
    return request("GET", "/triggers/widget/" + encodeURIComponent(agentId)).then(function (list) {
      triggers = (Array.isArray(list) ? list : []).slice().sort(function (a, b) { return (a.priority || 0) - (b.priority || 0); });
      armPage();
    }, function (e) { if (W.console) console.warn("agentsvc: triggers: " + e.message); });
  }

  // ── Public API ──────────────────────────────────────────────────────────────────────
  function identify(u) {
    u = u || {};
    var prev = userKey();
    ["userId", "userEmail", "userName", "userHash", "userToken"].forEach(function (k) { if (k in u) cfg[k] = u[k]; });
    if (prev && userKey() !== prev) clearConversation();
  }
  function clearConversation() {
    conv = { conversationId: null, userId: null, messages: [] };
    local.del(K_CONV);
    if (log) log.replaceChildren();
  }
  function reset() {
    clearConversation();
    local.del(K_SESSION);
    session.del(K_FIRED);
    ["userId", "userEmail", "userName", "userHash", "userToken"].forEach(function (k) { delete cfg[k]; });
    emit("reset", {});
  }
  function track(event, data) {
    emit("track", { event: event, data: data });
    consider(ofType("custom_event").filter(function (t) { return customEventMatches(t.conditions || {}, event, data); }));
  }
  var publicApi = {
    loaded: true,
    version: "1",
    open: function (o) { open(o); },
    close: close,
    toggle: toggle,
    send: send,
    identify: identify,
    reset: reset,
    track: track,
    registerFormHandler: function (name, fn) { if (typeof fn === "function") handlers[name] = fn; },
    showBubble: function (message, seconds) { showBubble(message, seconds); },
    showForm: function (toolIdOrName) { return showForm(toolIdOrName); },
    talkToPerson: function () { return askForPerson(); },
    on: function (name, fn) { (listeners[name] = listeners[name] || []).push(fn); },
    off: function (name, fn) {
      listeners[name] = (listeners[name] || []).filter(function (f) { return f !== fn; });
    },
    // The shared matching rules, exposed so tests can run the shared vectors against them.
    rules: { globMatches: globMatches, eventDataMatches: eventDataMatches, customEventMatches: customEventMatches }
  };

  function start() {
    if (!agentId) { if (W.console) console.error("agentsvc: window.agentsvcConfig.agentId is required"); return; }
    build();
    var target = W.agentsvc && typeof W.agentsvc === "object" ? W.agentsvc : {};
    var queue = Array.isArray(target.q) ? target.q : [];
    delete target.q;
    Object.keys(publicApi).forEach(function (k) { target[k] = publicApi[k]; });
    W.agentsvc = target;
    watchPage();
    queue.forEach(function (call) {
      var fn = publicApi[call[0]];
      if (typeof fn === "function") {
        try { fn.apply(null, call[1] || []); } catch (e) { if (W.console) console.error(e); }
      }
    });
    Promise.all([loadTriggers(), loadHandoff()]).then(function () { target.ready = true; emit("ready", {}); });
  }
  if (D.body) start(); else D.addEventListener("DOMContentLoaded", start);
})();
