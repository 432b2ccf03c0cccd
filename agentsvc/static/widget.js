/* agentsvc embeddable chat widget: plain JavaScript, no build step, no dependencies.
 * Embed: set window.agentsvcConfig = {agentId, userId?, userEmail?, userName?, userHash?, userToken?,
 * appearance?, language?, strings?, starters?, showSources?} and load <script src="https://HOST/widget.js" async>.
 * See the README (## Widget). */
(function () {
  "use strict";
  var W = window, D = document;
  var existing = W.agentsvc;
  if (existing && existing.loaded) return;

  var MAX_FILE_BYTES = 5 * 1024 * 1024;
  var EXIT_INTENT_DELAY_MS = 3000;
  var MAX_STORED_MESSAGES = 100;
  var CONFIG_WAIT_MS = 5000;
  var cfg = Object.assign({}, W.agentsvcConfig || {});
  var agentId = cfg.agentId;

  // ── Texts: English built in, the other languages loaded on demand ───────────────────
  // The same table as static/widget-locales/en.json (a test keeps them equal).
  var LOCALES = "en de fr es pt it nl pl tr ar he ja zh".split(" ");
  var RTL = { ar: 1, he: 1 };
  var EN = {
    "title": "Chat",
    "openChat": "Open chat",
    "closeChat": "Close chat",
    "close": "Close",
    "conversation": "Conversation",
    "message": "Message",
    "placeholder": "Type a message…",
    "send": "Send",
    "talkToPerson": "Talk to a person",
    "dismiss": "Dismiss",
    "goodAnswer": "Good answer",
    "badAnswer": "Bad answer",
    "retry": "Retry",
    "team": "Team",
    "suggestions": "Suggested questions",
    "poweredBy": "Powered by agentsvc",
    "networkError": "Network error",
    "requestFailed": "Request failed ({status})",
    "noAnswer": "The assistant could not answer.",
    "askPerson": "I would like to talk to a person.",
    "personSoon": "A person from the team will answer here shortly.",
    "emailLabel": "Your e-mail address",
    "emailPlaceholder": "you@example.com",
    "answerAt": "Thank you. We will answer at {email}.",
    "joined": "{name} joined the conversation.",
    "aPerson": "A person",
    "assistantBack": "The assistant is back.",
    "form": "Form",
    "submit": "Submit",
    "thanks": "Thank you!",
    "formFailed": "Sorry, the form could not be processed.",
    "formNotSent": "Could not send the form",
    "required": "This field is required",
    "fileTooLarge": "The file is over 5 MB",
    "notImage": "Must be an image",
    "notNumber": "Must be a number",
    "atLeast": "Must be at least {n}",
    "atMost": "Must be at most {n}",
    "minChars": "Must be at least {n} characters",
    "maxChars": "Must be at most {n} characters",
    "notEmail": "Must be an e-mail address",
    "notPhone": "Must be a telephone number",
    "notDate": "Must be a date (YYYY-MM-DD)",
    "notDateTime": "Must be a date and time",
    "badFormat": "Does not have the expected format",
    "fileUnreadable": "Could not read the file",
    "noHandler": "No handler registered for {name}",
    "handlerFailed": "The form handler failed",
    "sources": "Sources",
    "approvalWaiting": "Waiting for a person from the team to approve this…",
    "approvalApproved": "A person from the team approved this.",
    "approvalDenied": "A person from the team did not approve this."
  };
  var S = EN, lang = "en", tables = { en: EN };
  function t(key, params) {
    var s = S[key] != null ? S[key] : EN[key];
    return params ? s.replace(/\{(\w+)\}/g, function (m, n) { return params[n] != null ? params[n] : m; }) : s;
  }
  function warn(message) { if (W.console) console.warn("agentsvc: " + message); }
  function own(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }

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
  // visitor on a shared computer) starts afresh. Checked at start, once the page's queued
  // identify calls have said who the visitor is.
  function dropForeignTranscript() {
    if (conv.userId && conv.userId !== userKey()) {
      conv = { conversationId: null, userId: null, messages: [] };
      local.del(K_CONV);
    }
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
    return body && body.error && body.error.message ? body.error.message : t("requestFailed", { status: status });
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
  // Icons are inline SVG (stroked paths), so they render without any emoji font.
  var ICONS = {
    chat: "M5 4h14a2 2 0 0 1 2 2v9a2 2 0 0 1-2 2h-8l-5 4v-4H5a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z",
    down: "M6 9l6 6 6-6",
    x: "M6 6l12 12M18 6L6 18",
    up: "M3 10h4v10H3zM7 10l4-7c1.5 0 2.5 1 2.5 2.5V9h5a2 2 0 0 1 2 2.3l-1.2 7a2 2 0 0 1-2 1.7H7"
  };
  function icon(name, flip) {
    var NS = "http://www.w3.org/2000/svg", svg = D.createElementNS(NS, "svg"), path = D.createElementNS(NS, "path");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    path.setAttribute("d", ICONS[name]);
    if (flip) path.setAttribute("transform", "rotate(180 12 12)");
    svg.appendChild(path);
    return svg;
  }
  function safeUrl(u) {
    if (typeof u !== "string") return null;
    try { var p = new URL(u, location.href); } catch (e) { return null; }
    if (p.protocol === "http:" || p.protocol === "https:") return p.href;
    return /^data:image\//i.test(u) ? u : null;
  }
  // A source's link: an absolute http(s) address, nothing else (never javascript: or data:).
  function webUrl(u) {
    if (typeof u !== "string") return null;
    try { var p = new URL(u); } catch (e) { return null; }
    return p.protocol === "http:" || p.protocol === "https:" ? p.href : null;
  }
  function str(v) { return v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); }

  // ── Appearance: checked again here (it ends up in CSS), merged, turned into CSS ──────
  var LOOK = {
    accentColor: "#2457d6", textColor: "#1f2328", backgroundColor: "#ffffff", radius: 12, fontFamily: null,
    position: "right", offsetX: 20, offsetY: 20, launcherIcon: null, title: null, avatar: null,
    welcomeMessage: null, darkMode: "off", poweredBy: true
  };
  var HEX = /^#[0-9a-f]{6}$/i;
  var IMAGE = /^(https:\/\/[^\s"'<>\\()]+|data:image\/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+\/]+={0,2})$/;
  function upTo(max) { return function (v) { return typeof v === "number" && v % 1 === 0 && v >= 0 && v <= max; }; }
  function text(max) { return function (v) { return typeof v === "string" && v.length > 0 && v.length <= max; }; }
  function image(v) { return typeof v === "string" && v.length <= 32768 && IMAGE.test(v); }
  var CHECKS = {
    accentColor: HEX, textColor: HEX, backgroundColor: HEX, radius: upTo(24),
    fontFamily: function (v) { return typeof v === "string" && v.length <= 200 && /^[A-Za-z0-9 ,-]*[A-Za-z][A-Za-z0-9 ,-]*$/.test(v); },
    position: /^(left|right)$/, offsetX: upTo(200), offsetY: upTo(200), launcherIcon: image, title: text(80),
    avatar: image, welcomeMessage: text(1000), darkMode: /^(off|on|auto)$/,
    poweredBy: function (v) { return typeof v === "boolean"; }
  };
  function fits(key, v) {
    var c = CHECKS[key];
    return c instanceof RegExp ? typeof v === "string" && c.test(v) : c(v);
  }
  var server = null; // the agent's public config (GET /widget/config/:agentId)
  // Defaults, then the agent's settings, then the page's: a null puts a default back.
  function mergeLook() {
    var out = Object.assign({}, LOOK);
    [server && server.appearance, cfg.appearance, cfg.title ? { title: cfg.title } : null].forEach(function (src) {
      if (!isObj(src)) return;
      Object.keys(src).forEach(function (k) {
        if (!own(CHECKS, k)) return;
        if (src[k] === null) out[k] = LOOK[k];
        else if (fits(k, src[k])) out[k] = src[k];
        else warn("appearance." + k + " ignored: " + String(src[k]).slice(0, 40));
      });
    });
    return out;
  }
  function luminance(hex) {
    var c = [1, 3, 5].map(function (i) {
      var v = parseInt(hex.substr(i, 2), 16) / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }
  // White or near-black on the accent, whichever reads better.
  function onAccent(hex) { var l = luminance(hex); return 1.05 / (l + 0.05) >= (l + 0.05) / 0.0556 ? "#fff" : "#111"; }
  var DARK = "--bg:#1c1f24;--fg:#e6edf3;--er:#ffb4a9;--eb:#3b1d1a;--ok:#7ee787";
  function themeCss(L) {
    return "\n.root{--a:" + L.accentColor + ";--ao:" + onAccent(L.accentColor) + ";--bg:" + L.backgroundColor +
      ";--fg:" + L.textColor + ";--r:" + L.radius + "px;--x:" + L.offsetX + "px;--y:" + L.offsetY + "px" +
      (L.fontFamily ? ";--f:" + L.fontFamily + "," + FONTS : "") + "}\n.root.dark{" + DARK +
      "}\n@media (prefers-color-scheme:dark){.root.auto{" + DARK + "}}";
  }

  var FONTS = "system-ui,-apple-system,Segoe UI,Roboto,sans-serif";
  var CSS = [
    ":host{all:initial}:host([data-inline]){display:block;height:100%}[hidden]{display:none!important}",
    "*{box-sizing:border-box;font-family:var(--f);font-size:14px;line-height:1.4}",
    ".root{--f:" + FONTS + ";--mu:#57606a;--sf:#f0f2f5;--bd:#c9ccd1;--ln:#e1e4e8;--hl:#dde7fb;--er:#8a1c12;--eb:#fdecea;--ok:#116329;" +
      "position:fixed;right:var(--x);bottom:var(--y);z-index:2147483000;display:flex;flex-direction:column;align-items:flex-end;gap:10px;color:var(--fg)}",
    "@supports (color:color-mix(in srgb,red,red)){.root{--mu:color-mix(in srgb,var(--fg) 72%,var(--bg));--sf:color-mix(in srgb,var(--fg) 7%,var(--bg));" +
      "--bd:color-mix(in srgb,var(--fg) 30%,var(--bg));--ln:color-mix(in srgb,var(--fg) 13%,var(--bg));--hl:color-mix(in srgb,var(--a) 18%,var(--bg))}}",
    ".root.left{right:auto;left:var(--x);align-items:flex-start}",
    "button{cursor:pointer;font:inherit}",
    "svg{width:20px;height:20px;display:block;fill:none;stroke:currentColor;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}",
    ".launcher{width:56px;height:56px;border-radius:min(50%,calc(var(--r)*2.4));border:0;padding:0;background:var(--a);color:var(--ao);" +
      "display:flex;align-items:center;justify-content:center;box-shadow:0 4px 14px rgba(0,0,0,.25)}",
    ".launcher svg{width:28px;height:28px}.launcher img{width:60%;height:60%;object-fit:contain}",
    ".launcher:focus-visible,button:focus-visible,input:focus-visible,textarea:focus-visible,select:focus-visible{outline:3px solid #f5a623;outline-offset:2px}",
    ".panel{width:min(380px,calc(100vw - 40px));height:min(560px,calc(100vh - 110px));background:var(--bg);border-radius:var(--r);" +
      "box-shadow:0 8px 30px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden}",
    ".head{display:flex;align-items:center;gap:8px;padding:10px 14px;background:var(--a);color:var(--ao)}",
    ".head h2{margin:0;font-size:15px;flex:1;min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}",
    ".av{width:28px;height:28px;border-radius:50%;object-fit:cover;flex:none}",
    ".x{border:0;background:none;color:inherit;padding:2px;display:flex}",
    ".log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px}",
    ".msg,.welcome{max-width:85%;padding:8px 11px;border-radius:calc(var(--r)*.8);white-space:pre-wrap;word-wrap:break-word}",
    ".user{align-self:flex-end;background:var(--a);color:var(--ao)}",
    ".assistant,.welcome{align-self:flex-start;background:var(--sf)}",
    ".err{align-self:stretch;background:var(--eb);color:var(--er);border-radius:8px;padding:8px}",
    ".fb{display:flex;gap:4px;margin-top:4px}.fb button{border:1px solid var(--bd);background:var(--bg);color:var(--fg);border-radius:6px;padding:2px 5px}",
    ".fb svg{width:16px;height:16px}.fb button[aria-pressed=true]{background:var(--hl);border-color:var(--a)}",
    ".tool{align-self:stretch;border:1px solid var(--ln);border-radius:8px;padding:8px;overflow-x:auto}",
    ".cards{display:flex;gap:8px;overflow-x:auto}.card{min-width:150px;border:1px solid var(--ln);border-radius:8px;padding:8px}",
    ".card img,.tool img{max-width:100%;border-radius:6px}a{color:inherit}",
    ".src{white-space:normal;margin-top:6px;color:var(--mu)}.src *{font-size:12px}.src ul{margin:0;padding-inline-start:16px}",
    "table{border-collapse:collapse}td,th{border:1px solid var(--ln);padding:3px 6px;text-align:start}",
    "pre{margin:0;white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12px}",
    ".choices,.starters{display:flex;flex-wrap:wrap;gap:6px}.starters{padding:0 12px 10px}",
    ".choices button,.starters button{border:1px solid var(--a);color:var(--fg);background:var(--bg);border-radius:14px;padding:3px 10px;text-align:start}",
    "form.form{display:flex;flex-direction:column;gap:8px}form.form label{display:flex;flex-direction:column;gap:2px;font-weight:600}",
    "input,textarea,select{background:var(--bg);color:var(--fg)}",
    "form.form input,form.form textarea,form.form select{font-weight:400;padding:6px;border:1px solid var(--bd);border-radius:6px}",
    ".ferr{color:var(--er);font-weight:400;font-size:12px}.ok{color:var(--ok)}",
    ".primary{background:var(--a);color:var(--ao);border:0;border-radius:6px;padding:7px 12px}",
    ".compose{display:flex;gap:6px;padding:10px;border-top:1px solid var(--ln)}",
    ".compose textarea{flex:1;resize:none;height:38px;padding:8px;border:1px solid var(--bd);border-radius:8px}",
    ".pb{text-align:center;font-size:11px;color:var(--mu);padding:0 0 6px}",
    ".bubble-wrap{display:flex;gap:4px;align-items:flex-start}",
    ".bubble{max-width:260px;text-align:start;background:var(--bg);color:var(--fg);border:0;border-radius:12px;padding:10px 12px;box-shadow:0 4px 14px rgba(0,0,0,.2)}",
    ".bubble-x{border:0;background:var(--bg);color:var(--fg);border-radius:50%;width:24px;height:24px;padding:4px;box-shadow:0 2px 6px rgba(0,0,0,.2)}",
    ".bubble-x svg{width:16px;height:16px}",
    ".who{display:block;font-size:12px;font-weight:600;color:var(--mu);margin-bottom:2px}",
    ".who img{width:20px;height:20px;border-radius:50%;object-fit:cover;vertical-align:middle;margin-inline-end:6px}",
    ".note{align-self:center;max-width:90%;text-align:center;color:var(--mu);font-size:13px}",
    ".human-btn{border:1px solid var(--ao);background:none;color:var(--ao);border-radius:12px;padding:2px 9px;font-size:12px;flex:none}",
    ".contact{display:flex;gap:6px;align-self:stretch}.contact input{flex:1;padding:6px;border:1px solid var(--bd);border-radius:6px}",
    ".root.inline{position:relative;inset:auto;z-index:auto;height:100%;align-items:stretch}",
    ".inline .panel{width:100%;height:100%;min-height:360px;box-shadow:none;border:1px solid var(--ln)}",
    ".inline .launcher,.inline .bubble-wrap,.inline .x{display:none}",
    // Narrow screens: the open panel takes the whole screen (the header's button closes it).
    "@media (max-width:480px){.root.open:not(.inline) .panel{position:fixed;inset:0;width:auto;height:auto;border-radius:0}" +
      ".root.open:not(.inline) .launcher{display:none}}"
  ].join("\n");

  // ── The UI, in a shadow root so host styles neither leak in nor out ─────────────────
  var host, sheet, styleEl, root, panel, log, input, sendBtn, launcher, bubbleWrap, bubbleBtn, bubbleX, humanBtn;
  var titleEl, avatarEl, closeBtn, welcomeEl, startersEl, poweredEl;
  var isOpen = false, busy = false, bubbleTimer = null, proactive = null, inline = false, look = LOOK;
  // The trigger a chat starts from (an open_chat trigger, or a bubble clicked): sent with the
  // first message of a new conversation, for the trigger's funnel in the analytics.
  var chatTrigger = null;

  function build() {
    host = el("div", { id: "agentsvc-widget" });
    var shadow = host.attachShadow({ mode: "open" });
    // A constructed stylesheet is not inline style, so a site's CSP (style-src) allows it.
    try {
      sheet = new CSSStyleSheet();
      shadow.adoptedStyleSheets = [sheet];
    } catch (e) {
      sheet = null;
      shadow.appendChild(styleEl = el("style"));
    }
    log = el("div", { class: "log", role: "log", part: "log" });
    welcomeEl = el("div", { class: "welcome", part: "welcome", dir: "auto", hidden: true });
    input = el("textarea", { part: "input", rows: "1" });
    sendBtn = el("button", { type: "submit", class: "primary", part: "send-button" });
    startersEl = el("div", { class: "starters", role: "group", part: "starters", hidden: true });
    titleEl = el("h2", { part: "title" });
    avatarEl = el("img", { class: "av", part: "avatar", alt: "", hidden: true });
    humanBtn = el("button", { type: "button", class: "human-btn", part: "human-button", hidden: true, onclick: function () { askForPerson(); } });
    closeBtn = el("button", { class: "x", type: "button", part: "close-button", onclick: function () { close(); } }, [icon("x")]);
    poweredEl = el("div", { class: "pb", part: "powered-by" });
    panel = el("div", { id: "panel", class: "panel", part: "panel", role: "dialog", hidden: true }, [
      el("div", { class: "head", part: "header" }, [avatarEl, titleEl, humanBtn, closeBtn]),
      log,
      startersEl,
      el("form", { class: "compose", part: "composer", onsubmit: function (e) { e.preventDefault(); send(input.value); } }, [input, sendBtn]),
      poweredEl
    ]);
    input.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(input.value); }
    });
    bubbleBtn = el("button", { type: "button", class: "bubble", part: "bubble", dir: "auto", onclick: bubbleClicked });
    bubbleX = el("button", { type: "button", class: "bubble-x", part: "bubble-close", onclick: function () { hideBubble(); } }, [icon("x")]);
    bubbleWrap = el("div", { class: "bubble-wrap", hidden: true }, [bubbleBtn, bubbleX]);
    launcher = el("button", {
      type: "button", class: "launcher", part: "launcher", "aria-expanded": "false", "aria-controls": "panel",
      onclick: function () { toggle(); }
    });
    root = el("div", { class: "root" }, [panel, bubbleWrap, launcher]);
    root.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && isOpen && !inline) { e.stopPropagation(); close(); }
    });
    shadow.appendChild(root);
  }

  // The texts of the chosen language: its table, then the owner's and the page's overrides.
  function buildStrings() {
    S = Object.assign({}, EN, tables[lang] || {});
    if (look.title) S.title = look.title;
    S.welcome = look.welcomeMessage || "";
    var page = cfg.strings;
    if (isObj(page) && isObj(page[lang])) page = page[lang];
    [server && server.strings && server.strings[lang], page].forEach(function (o) {
      if (!isObj(o)) return;
      Object.keys(o).forEach(function (k) {
        if ((own(EN, k) || k === "welcome") && typeof o[k] === "string" && o[k]) S[k] = o[k];
      });
    });
  }
  function starterList() {
    var list = Array.isArray(cfg.starters) ? cfg.starters : (server && server.starters) || [];
    return list.filter(function (q) { return typeof q === "string" && q.trim(); }).slice(0, 4);
  }
  function showImage(img, src) {
    img.hidden = !src;
    if (src) img.setAttribute("src", src); else img.removeAttribute("src");
  }
  function classes() {
    root.className = "root" + (look.position === "left" ? " left" : "") + (inline ? " inline" : "") + (isOpen ? " open" : "") +
      (look.darkMode === "on" ? " dark" : look.darkMode === "auto" ? " auto" : "");
    launcher.setAttribute("aria-label", t(isOpen ? "closeChat" : "openChat"));
    launcher.replaceChildren(look.launcherIcon && !isOpen ? el("img", { src: look.launcherIcon, alt: "" }) : icon(isOpen ? "down" : "chat"));
  }
  // Applies the merged appearance and texts to the whole UI (again after configure()).
  function applyLook() {
    look = mergeLook();
    buildStrings();
    var css = CSS + themeCss(look);
    if (sheet) sheet.replaceSync(css); else styleEl.textContent = css;
    classes();
    root.setAttribute("dir", RTL[lang] ? "rtl" : "ltr");
    root.setAttribute("lang", lang);
    panel.setAttribute("aria-label", t("title"));
    titleEl.textContent = t("title");
    showImage(avatarEl, look.avatar);
    closeBtn.setAttribute("aria-label", t("close"));
    log.setAttribute("aria-label", t("conversation"));
    input.setAttribute("aria-label", t("message"));
    input.setAttribute("placeholder", t("placeholder"));
    sendBtn.textContent = t("send");
    humanBtn.textContent = t("talkToPerson");
    bubbleX.setAttribute("aria-label", t("dismiss"));
    startersEl.setAttribute("aria-label", t("suggestions"));
    poweredEl.textContent = t("poweredBy");
    poweredEl.hidden = !look.poweredBy;
    welcomeEl.textContent = S.welcome;
    welcomeEl.hidden = !S.welcome;
    startersEl.replaceChildren.apply(startersEl, starterList().map(function (q) {
      return el("button", { type: "button", part: "starter", dir: "auto", text: q, onclick: function () { send(q); } });
    }));
    showStarters();
  }
  function showStarters() {
    // A trigger's greeting does not count: the visitor has not said anything yet.
    var said = conv.messages.some(function (m) { return !m.greeting; });
    startersEl.hidden = !startersEl.firstChild || said;
  }
  function resetLog() {
    log.replaceChildren(welcomeEl);
    conv.messages.forEach(function (m) { renderMessage(m); });
    showStarters();
  }

  // The language: the page's setting, the agent's, the page's lang, the browser's, English.
  function pickLanguage() {
    var wanted = [cfg.language, server && server.language, D.documentElement.lang]
      .concat(navigator.languages || [navigator.language]);
    for (var i = 0; i < wanted.length; i++) {
      var code = String(wanted[i] || "").toLowerCase().split(/[-_]/)[0];
      if (LOCALES.indexOf(code) >= 0) return code;
    }
    return "en";
  }
  function loadTable(code) {
    if (tables[code]) return Promise.resolve(tables[code]);
    return fetch(base + "/widget/locales/" + code + ".json").then(function (r) {
      if (!r.ok) throw new Error("locale " + code + ": " + r.status);
      return r.json();
    }).then(function (table) { return (tables[code] = isObj(table) ? table : {}); }, function (e) {
      warn(e.message);
      return {};
    });
  }
  // The agent's config and the language's texts, fetched side by side (the language is
  // guessed from the page first; the agent's setting may then ask for another one).
  function loadSettings() {
    var guess = pickLanguage();
    loadTable(guess);
    var config = request("GET", "/widget/config/" + encodeURIComponent(agentId)).then(function (c) {
      server = isObj(c) ? c : null;
    }, function (e) { warn("config: " + e.message); });
    var wait = new Promise(function (resolve) { setTimeout(resolve, CONFIG_WAIT_MS); });
    return Promise.race([config, wait]).then(function () {
      var code = pickLanguage();
      return loadTable(code).then(function () { lang = code; });
    });
  }
  var configSeq = 0;
  function configure(o) {
    if (!isObj(o)) return Promise.resolve();
    if (isObj(o.appearance)) cfg.appearance = Object.assign({}, cfg.appearance, o.appearance);
    ["title", "language", "strings", "starters", "showSources"].forEach(function (k) { if (k in o) cfg[k] = o[k]; });
    if (!root) return Promise.resolve();
    var seq = ++configSeq, code = pickLanguage();
    return loadTable(code).then(function () {
      if (seq !== configSeq) return;
      var changed = code !== lang || "showSources" in o;
      lang = code;
      applyLook();
      if (changed) resetLog();
    });
  }
  // Inline mode: the chat inside a page element, always open, no launcher.
  function mount(target) {
    if (typeof target === "string") target = D.querySelector(target);
    if (!target || typeof target.appendChild !== "function") { warn("mount: no such element"); return; }
    inline = true;
    hideBubble();
    host.setAttribute("data-inline", "");
    panel.setAttribute("role", "region");
    panel.hidden = false;
    isOpen = true;
    classes();
    target.appendChild(host);
  }

  function scrollLog() { log.scrollTop = log.scrollHeight; }

  function renderMessage(m) {
    var node = el("div", { class: "msg " + m.role, part: "message " + m.role + "-message", dir: "auto" });
    if (m.author && m.author.type === "human") {
      // The member's picture (decorative: their name follows), from the service's origin.
      var pic = /^https?:\/\//.test(m.author.avatarUrl || "") ? el("img", { src: m.author.avatarUrl, alt: "", part: "avatar" }) : null;
      node.appendChild(el("span", { class: "who" }, [pic, m.author.name || t("team")]));
    }
    node.appendChild(D.createTextNode(m.content));
    log.appendChild(node);
    addSources(node, m);
    if (m.role === "assistant" && m.id && !(m.author && m.author.type === "human")) addFeedback(node, m);
    scrollLog();
    return node;
  }

  // An answer's sources (the chat stream's message_stop), under it when the agent (or the
  // page) says so: titles as text, a link only to an http(s) address.
  function showsSources() {
    return typeof cfg.showSources === "boolean" ? cfg.showSources : !!(server && server.showSources === true);
  }
  function sourceList(list) {
    return (Array.isArray(list) ? list : []).filter(function (s) {
      return isObj(s) && typeof s.title === "string" && s.title.trim();
    }).slice(0, 10).map(function (s) {
      var u = webUrl(s.url);
      return u ? { title: s.title.slice(0, 300), url: u } : { title: s.title.slice(0, 300) };
    });
  }
  var sourcesSeq = 0;
  function addSources(node, m) {
    if (!m.sources || !m.sources.length || !showsSources()) return;
    var id = "src" + (++sourcesSeq);
    node.appendChild(el("div", { class: "src", part: "sources" }, [
      el("span", { id: id, text: t("sources") }),
      el("ul", { "aria-labelledby": id }, m.sources.map(function (s) {
        var u = webUrl(s.url);
        return el("li", { dir: "auto" }, [u ? el("a", { href: u, target: "_blank", rel: "noopener noreferrer", text: s.title }) : s.title]);
      }))
    ]));
  }

  function addFeedback(node, m) {
    var bar = el("div", { class: "fb" });
    [["up", "goodAnswer"], ["down", "badAnswer"]].forEach(function (spec) {
      bar.appendChild(el("button", {
        type: "button", part: "feedback-button", "aria-label": t(spec[1]), "aria-pressed": String(m.rating === spec[0]),
        onclick: function () { rate(m, spec[0], bar); }
      }, [icon("up", spec[0] === "down")]));
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
    var box = el("div", { class: "err", role: "alert", part: "error" }, [el("span", { text: message })]);
    if (retry) {
      box.appendChild(D.createTextNode(" "));
      box.appendChild(el("button", {
        type: "button", text: t("retry"), onclick: function () { box.remove(); retry(); }
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
      classes();
      emit("open", {});
    }
    if (opts && typeof opts.message === "string") input.value = opts.message;
    if (!opts || opts.focus !== false) input.focus();
    scrollLog();
  }
  function close() {
    if (!isOpen || inline) return;
    isOpen = false;
    panel.hidden = true;
    launcher.setAttribute("aria-expanded", "false");
    classes();
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
    var attrs = cfg.userAttributes && typeof cfg.userAttributes === "object" ? cfg.userAttributes : null;
    if (!cfg.userId) return attrs ? { attributes: attrs } : null;
    var u = { id: String(cfg.userId) };
    if (cfg.userEmail) u.email = String(cfg.userEmail);
    if (cfg.userName) u.name = String(cfg.userName);
    if (attrs) u.attributes = attrs;
    return u;
  }
  // Where the visitor is, told with a conversation's first message (the service keeps
  // http(s) addresses only).
  function pageContext() {
    var c = {}, lang = W.navigator && W.navigator.language;
    if (location.href) c.pageUrl = String(location.href).slice(0, 2000);
    if (D.referrer) c.referrer = String(D.referrer).slice(0, 2000);
    if (lang) c.language = String(lang).slice(0, 2000);
    return c;
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
    showStarters();
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
      body.context = pageContext();
      if (chatTrigger) body.triggerId = chatTrigger;
      body.messages = conv.messages.filter(function (x) { return x.role === "user" || x.role === "assistant"; })
        .map(function (x) { return { role: x.role, content: x.content }; });
    }
    var user = userPayload();
    if (user) body.user = user;
    if (user && user.id && cfg.userHash) body.userHash = String(cfg.userHash);
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
        if (node) addSources(node, reply);
        if (reply.id && node) addFeedback(node, reply);
        emit("message", { role: "assistant", content: reply.content, messageId: reply.id });
      }
    }
    function retry() { return stream(text); }
    function say(text) {
      if (!node) {
        node = el("div", { class: "msg assistant", part: "message assistant-message", dir: "auto", "aria-busy": "true" });
        textNode = D.createTextNode("");
        node.appendChild(textNode);
        log.appendChild(node);
        nodes.push(node);
      }
      reply.content += text;
      textNode.data += text;
      scrollLog();
    }
    function onEvent(name, data) {
      if (name === "message_start") {
        if (data.conversationId) { conv.conversationId = data.conversationId; chatTrigger = null; saveConv(); }
        reply.id = data.messageId || null;
      } else if (name === "content_block_delta" && data.delta && typeof data.delta.text === "string") {
        say(data.delta.text);
      } else if (name === "answer_replaced" && typeof data.text === "string") {
        // A guardrail stopped the answer: only its replacement is kept and shown.
        nodes.forEach(function (n) { if (n.parentNode) n.parentNode.removeChild(n); });
        nodes = [];
        node = null;
        reply.content = "";
        say(data.text);
      } else if (name === "message_stop") {
        var found = sourceList(data.sources);
        if (found.length) reply.sources = found;
        if (conv.awaiting === reply.id) { conv.awaiting = null; saveConv(); }
      } else if (name === "approval_pending") {
        // A person approves the agent's action first: the answer follows here, or (the
        // stream gone) in the conversation's events.
        conv.awaiting = reply.id;
        saveConv();
        note(t("approvalWaiting"));
      } else if (name === "approval_decided") {
        note(t(data.status === "approved" ? "approvalApproved" : "approvalDenied"));
      } else if (name === "tool_result") {
        node = null;
        if (data.toolName !== "request_human") renderToolResult(data);
      } else if (name === "handoff") {
        handedOver(data);
      } else if (name === "error") {
        var e = data.error || {};
        throw new Error(e.message || t("noAnswer"));
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
    }).then(function () { finish(); follow(); return true; }, function (err) {
      if (err === null) return true; // answered by the retry of a lost conversation
      finish();
      // A call waits for a person: its answer comes in the conversation's events (a retry
      // would ask again).
      if (conv.awaiting) { follow(); return false; }
      showError(err && err.message ? err.message : t("networkError"), retry);
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
    log.appendChild(el("div", { class: "note", role: "status", part: "note", dir: "auto", text: text }));
    scrollLog();
  }
  function loadHandoff(pending) {
    return pending.then(function (h) {
      handoffOn = !!(h && h.enabled);
      showHumanBtn();
    }, function () { /* no handoff: the button stays hidden */ });
  }
  // Hidden while the visitor already waits for a person or talks to one (pressed again, it
  // did nothing); back when the conversation returns to the agent or a new one starts.
  function showHumanBtn() {
    if (humanBtn) humanBtn.hidden = !handoffOn || conv.status === "waiting" || conv.status === "human";
  }
  function askForPerson() {
    var first = conv.conversationId ? Promise.resolve(true) : send(t("askPerson"));
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
    showHumanBtn();
    if (h.status === "waiting" && was !== "waiting") {
      if (h.online === false) askAddress(h.offlineMessage);
      else note(t("personSoon"));
    }
    emit("handoff", h);
    follow();
  }
  function askAddress(message) {
    if (message) note(message);
    var field = el("input", { type: "email", "aria-label": t("emailLabel"), placeholder: t("emailPlaceholder"), required: true, autocomplete: "email" });
    var box = el("form", { class: "contact", onsubmit: function (e) {
      e.preventDefault();
      request("POST", "/conversations/" + encodeURIComponent(conv.conversationId) + "/contact",
        { sessionId: sessionId(), email: field.value.trim() }).then(function () {
        box.remove();
        note(t("answerAt", { email: field.value.trim() }));
      }, function (err) { showError(err.message); });
    } }, [field, el("button", { type: "submit", class: "primary", text: t("send") })]);
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
        note(t("joined", { name: data.assignee.name || t("aPerson") }));
      } else if (data.status === "bot" && was && was !== "bot" && id) {
        note(t("assistantBack"));
      }
      conv.status = data.status;
      conv.assignee = data.assignee || null;
      saveConv();
      showHumanBtn();
      // Back with the agent: the chat stream carries its answers; stop following.
      if ((data.status === "bot" || data.status === "closed") && followAbort && !conv.awaiting) followAbort.abort();
    } else if (name === "message" && data.message) {
      var m = data.message;
      if (m.role === "user" || known(m.id) || !m.content) return;
      var withPerson = conv.status === "waiting" || conv.status === "human";
      if (conv.awaiting && !withPerson && m.id !== conv.awaiting) return;
      if (conv.awaiting === m.id) {
        conv.awaiting = null;
        if (!withPerson && followAbort) followAbort.abort();
      }
      var shown = { role: "assistant", content: m.content, id: m.id, rating: null, author: m.author };
      conv.messages.push(shown);
      saveConv();
      renderMessage(shown);
      emit("message", { role: "assistant", content: m.content, messageId: m.id, author: m.author });
    }
  }
  // Follow the conversation live while a person is (or may be) in it, or an answer waits
  // for a person's approval: replayed from the last event seen, so nothing is lost across
  // reconnects and page loads.
  function follow() {
    if (following || !conv.conversationId || !(conv.status === "waiting" || conv.status === "human" || conv.awaiting)) return;
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
    var out = ev.output, box = el("div", { class: "tool", part: "tool-result", "data-tool": ev.toolName || "" });
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
    var req = rule(f, "required"), type = f.type, r, re;
    if (empty(v)) return req && req.value ? req.message || t("required") : null;
    if (type === "file" || type === "image") {
      if (v.size > MAX_FILE_BYTES) return t("fileTooLarge");
      if (type === "image" && !/^image\//.test(v.type || "")) return t("notImage");
      return null;
    }
    if (type === "number") {
      if (typeof v !== "number" || !isFinite(v)) return t("notNumber");
      if ((r = rule(f, "min")) && v < r.value) return r.message || t("atLeast", { n: r.value });
      if ((r = rule(f, "max")) && v > r.value) return r.message || t("atMost", { n: r.value });
      return null;
    }
    if (typeof v !== "string") return null;
    if (v.length > 10000) return t("maxChars", { n: 10000 });
    if (type !== "text" && type !== "textarea") v = v.trim();
    if (type === "email" && !EMAIL.test(v)) return t("notEmail");
    if (type === "tel" && (!TEL.test(v) || v.replace(/\D/g, "").length < 3)) return t("notPhone");
    if (type === "date" && !validDate(v)) return t("notDate");
    if (type === "datetime" && (!DATETIME.test(v) || !validDate(v.slice(0, 10)))) return t("notDateTime");
    if ((r = rule(f, "minLength")) && v.length < r.value) return r.message || t("minChars", { n: r.value });
    if ((r = rule(f, "maxLength")) && v.length > r.value) return r.message || t("maxChars", { n: r.value });
    if ((r = rule(f, "pattern")) && (re = simplePattern(r.value, v.length)) && !re.test(v)) {
      return r.message || t("badFormat");
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
      fr.onerror = function () { reject(new Error(t("fileUnreadable"))); };
      fr.readAsDataURL(file);
    });
  }
  var formSeq = 0;
  function renderForm(form, into, trigger) {
    var schema = form.formSchema || {}, fields = schema.fields || [];
    var toolId = form.toolId, impressionAt = Date.now(), startedAt = null, controls = {};
    var idp = "f" + (++formSeq) + "_";
    // A preview (the dashboard's form builder) is drawn and checked, never counted or sent.
    if (!form.preview) beacon("/form-submissions/event", { toolId: toolId, eventType: "impression", sessionId: sessionId() });
    function started() {
      if (startedAt || form.preview) return;
      startedAt = Date.now();
      beacon("/form-submissions/event", { toolId: toolId, eventType: "started", sessionId: sessionId() });
    }
    var formEl = el("form", { class: "form", part: "form", novalidate: true, "aria-label": schema.title || form.toolName || t("form") });
    if (schema.title) formEl.appendChild(el("strong", { text: schema.title }));
    if (schema.description) formEl.appendChild(el("div", { text: schema.description }));
    fields.forEach(function (f) {
      var id = idp + f.name, c, type = f.type;
      var req = rule(f, "required");
      var attrs = { id: id, name: f.name, placeholder: f.placeholder, required: !!(req && req.value) };
      if (type === "textarea") c = el("textarea", attrs);
      else if (type === "select" || type === "multiselect") {
        attrs.multiple = type === "multiselect";
        c = el("select", attrs, (type === "select" ? [el("option", { value: "", text: "—" })] : []).concat(
          (f.options || []).map(function (o, i) { return el("option", { value: String(i), text: str(o.label) }); })));
      } else {
        attrs.type = { email: "email", tel: "tel", number: "number", date: "date", datetime: "datetime-local", file: "file", image: "file" }[type] || "text";
        if (type === "image") attrs.accept = "image/*";
        if (type === "number") attrs.step = "any";
        c = el("input", attrs);
      }
      var err = el("span", { class: "ferr", id: id + "_err", "aria-live": "polite" });
      c.setAttribute("aria-describedby", err.id);
      c.addEventListener("input", started);
      c.addEventListener("change", started);
      controls[f.name] = { field: f, control: c, err: err };
      formEl.appendChild(el("label", { for: id }, [f.label, c, f.description ? el("small", { text: f.description }) : null, err]));
    });
    var submitBtn = el("button", { type: "submit", class: "primary", text: schema.submitLabel || t("submit") });
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
      if (form.preview) { result.textContent = schema.successMessage || t("thanks"); return; }
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
              : ok ? schema.successMessage || t("thanks") : t("formFailed");
            formEl.replaceChildren(el("div", { class: ok ? "ok" : "ferr", role: "status", text: msg }));
            emit("form_submit", { toolId: toolId, submissionId: res.submissionId, success: ok, data: formData });
            if (trigger) converted(trigger);
            if (proactive === trigger) proactive = null;
          });
        });
      }).catch(function (err) {
        submitBtn.disabled = false;
        result.className = "ferr";
        result.textContent = err.message || t("formNotSent");
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
    }) : Promise.resolve({ success: false, message: t("noHandler", { name: name }) });
    return run.then(function (out) {
      return isObj(out) ? { success: !!out.success, message: out.message, data: out.data } : { success: !!out };
    }, function (err) {
      return { success: false, message: err && err.message ? String(err.message) : t("handlerFailed") };
    }).then(function (outcome) {
      var body = { submissionId: res.submissionId, success: outcome.success, sessionId: sessionId() };
      if (typeof outcome.message === "string") body.message = outcome.message.slice(0, 2000);
      if (isObj(outcome.data)) body.data = outcome.data;
      return request("POST", "/form-submissions/client-result", body).then(function () { return outcome; });
    });
  }
  // The dashboard's builder shows an unsaved form with this renderer: one at a time.
  var previewed = null;
  function previewForm(schema) {
    if (!root || !isObj(schema)) return null;
    open({ focus: false });
    if (previewed) previewed.parentNode.remove();
    previewed = renderForm({ formSchema: schema, preview: true }, log);
    return previewed;
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
      if (typeof ac.greeting === "string" && ac.greeting.trim()) greet(ac.greeting);
    } else if (t.actionType === "show_bubble") {
      showBubble(ac.message || "", Number(ac.duration) || 0, run);
    } else if (t.actionType === "show_form") {
      showForm(ac.toolId, run).catch(function () { /* logged */ });
    } else proactive = null;
  }
  // A trigger's greeting is the agent speaking first: an agent's message in the transcript
  // (not sent, not stored, no feedback buttons). The visitor's first message carries it to
  // the model as the agent's earlier turn, so the answer follows on from it.
  function greet(text) {
    var last = conv.messages[conv.messages.length - 1];
    if (last && last.greeting && last.content === text) return;
    var m = { role: "assistant", content: text, greeting: true };
    conv.messages.push(m);
    saveConv();
    renderMessage(m);
    showStarters();
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
  function loadTriggers(pending) {
    return pending.then(function (list) {
      triggers = (Array.isArray(list) ? list : []).slice().sort(function (a, b) { return (a.priority || 0) - (b.priority || 0); });
      armPage();
    }, function (e) { warn("triggers: " + e.message); });
  }

  // ── Public API ──────────────────────────────────────────────────────────────────────
  function identify(u) {
    u = u || {};
    var prev = userKey();
    ["userId", "userEmail", "userName", "userHash", "userToken"].forEach(function (k) { if (k in u) cfg[k] = u[k]; });
    if ("attributes" in u) cfg.userAttributes = u.attributes;
    if (prev && userKey() !== prev) clearConversation();
  }
  function clearConversation() {
    conv = { conversationId: null, userId: null, messages: [] };
    local.del(K_CONV);
    if (log) resetLog();
    showHumanBtn();
  }
  function reset() {
    clearConversation();
    local.del(K_SESSION);
    session.del(K_FIRED);
    ["userId", "userEmail", "userName", "userHash", "userToken", "userAttributes"].forEach(function (k) { delete cfg[k]; });
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
    mount: mount,
    configure: configure,
    on: function (name, fn) { (listeners[name] = listeners[name] || []).push(fn); },
    off: function (name, fn) {
      listeners[name] = (listeners[name] || []).filter(function (f) { return f !== fn; });
    },
    // The shared matching rules, exposed so tests can run the shared vectors against them.
    rules: { globMatches: globMatches, eventDataMatches: eventDataMatches, customEventMatches: customEventMatches }
  };
  // Not part of the embed API (no stub queues it): the dashboard's form builder calls it on
  // its preview frame of /widget/demo once the widget is ready.
  publicApi.previewForm = previewForm;

  // An inline container must be parsed before it is looked for.
  function domReady() {
    return D.readyState !== "loading" ? null : new Promise(function (resolve) { D.addEventListener("DOMContentLoaded", resolve); });
  }
  // Calls that need no UI run at once; the others wait until the widget is on the page.
  var AT_ONCE = { on: 1, off: 1, registerFormHandler: 1, identify: 1, configure: 1 };
  function start() {
    if (!agentId) { if (W.console) console.error("agentsvc: window.agentsvcConfig.agentId is required"); return; }
    var target = W.agentsvc && typeof W.agentsvc === "object" ? W.agentsvc : {};
    var queue = Array.isArray(target.q) ? target.q : [];
    delete target.q;
    // Who the visitor is, as the page said before this script loaded, comes first.
    queue = queue.filter(function (call) {
      if (!call || call[0] !== "identify") return true;
      identify.apply(null, call[1] || []);
      return false;
    });
    dropForeignTranscript();
    Object.keys(publicApi).forEach(function (k) {
      var fn = publicApi[k];
      target[k] = typeof fn !== "function" || AT_ONCE[k] ? fn : function () { queue.push([k, [].slice.call(arguments)]); };
    });
    W.agentsvc = target;
    var id = encodeURIComponent(agentId);
    var pending = [request("GET", "/triggers/widget/" + id), request("GET", "/widget/handoff/" + id)];
    pending.forEach(function (p) { p.catch(function () { /* reported where it is used */ }); });
    // The look and texts come first, so the launcher never shows in the wrong colours.
    loadSettings().then(domReady).then(function () {
      build();
      var spot = D.querySelector("[data-agentsvc-inline]");
      if (spot) mount(spot);
      applyLook();
      resetLog();
      if (!inline) D.body.appendChild(host);
      follow();
      Object.keys(publicApi).forEach(function (k) { target[k] = publicApi[k]; });
      watchPage();
      queue.forEach(function (call) {
        var fn = publicApi[call[0]];
        if (typeof fn === "function") {
          try { fn.apply(null, call[1] || []); } catch (e) { if (W.console) console.error(e); }
        }
      });
      return Promise.all([loadTriggers(pending[0]), loadHandoff(pending[1])]);
    }).then(function () { target.ready = true; emit("ready", {}); });
  }
  if (D.body) start(); else D.addEventListener("DOMContentLoaded", start);
})();
