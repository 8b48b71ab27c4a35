// ckpt web page: a thin client of the `ckpt serve` JSON API. All rewind logic
// lives in the server's Controller; this only shows state and sends requests.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const sigil = { created: "+", modified: "~", deleted: "-" };

  // The token comes in the URL fragment (never sent to the server); it is
  // read once and removed from the address bar and the history entry, so it
  // is not left on screen, in screenshots or in the browser's history.
  function tokenFromHash() {
    const t = new URLSearchParams(location.hash.slice(1)).get("token");
    if (t !== null) history.replaceState(history.state, "", location.pathname + location.search);
    return t;
  }
  let token = tokenFromHash() || sessionStorage.getItem("ckpt-token") || "";
  let turns = [];
  let messages = [];
  let selected = null; // turn number
  let pending = null; // {kind: "rewind"|"fork", scope, turn}
  let events = null;

  function status(text, kind) {
    const s = $("status");
    s.textContent = text;
    s.className = kind || "";
    s.dataset.kind = kind || "";
  }

  async function api(method, path, body) {
    const opt = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      opt.headers["Content-Type"] = "application/json";
      opt.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opt);
    let data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    if (resp.status === 401) {
      $("auth").hidden = false;
    }
    if (!resp.ok) {
      const err = new Error((data && data.error) || resp.status + " " + resp.statusText);
      err.status = resp.status;
      err.data = data;
      throw err;
    }
    return data;
  }

  async function refresh() {
    try {
      const [cps, conv] = await Promise.all([api("GET", "/api/checkpoints"), api("GET", "/api/conversation")]);
      turns = cps;
      messages = conv;
      render();
      document.body.dataset.loaded = "true";
    } catch (e) {
      status("Could not load the session: " + e.message, "error");
    }
  }

  function render() {
    const tl = $("timeline");
    tl.textContent = "";
    const byTurn = new Map();
    for (const m of messages) {
      if (!byTurn.has(m.turn)) byTurn.set(m.turn, []);
      byTurn.get(m.turn).push(m);
    }
    const sorted = turns.slice().sort((a, b) => b.turn - a.turn);
    for (const t of sorted) {
      const li = el("li", "turn");
      li.id = "turn-" + t.turn;
      li.dataset.turn = t.turn;
      li.tabIndex = 0;
      if (t.turn === selected) li.classList.add("selected");
      const head = el("div", "head");
      head.append(el("span", "num", "#" + t.turn), el("span", "time", new Date(t.time).toLocaleString()));
      if (t.label) head.append(el("span", "tag", "[" + t.label + "]"));
      if (t.pinned) head.append(el("span", "tag", "pinned"));
      if (t.pruned) head.append(el("span", "tag", "files pruned"));
      li.append(head, el("div", "prompt", t.prompt || "(no prompt)"));
      const files = el("ul", "files");
      for (const f of t.files) {
        const fl = el("li", "", (sigil[f.kind] || "?") + " " + f.path);
        fl.dataset.kind = f.kind;
        fl.dataset.path = f.path;
        files.append(fl);
      }
      li.append(files);
      const msgs = el("ul", "msgs");
      for (const m of byTurn.get(t.turn) || []) {
        if (m.role === "user" && m.text === t.prompt) continue;
        const ml = el("li");
        ml.dataset.role = m.role;
        ml.append(el("span", "role", m.role + ": "), document.createTextNode(m.text));
        msgs.append(ml);
      }
      if (msgs.childElementCount) li.append(msgs);
      li.addEventListener("click", () => select(t.turn));
      li.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); select(t.turn); } });
      tl.append(li);
    }
    $("timeline").dataset.count = turns.length;
    if (selected !== null && !turns.some((t) => t.turn === selected)) {
      selected = null;
      closeConfirm();
    }
    renderActions();
  }

  function select(turn) {
    selected = turn;
    closeConfirm();
    for (const li of document.querySelectorAll(".turn")) li.classList.toggle("selected", Number(li.dataset.turn) === turn);
    renderActions();
  }

  function renderActions() {
    const t = turns.find((x) => x.turn === selected);
    $("actions").hidden = !t;
    if (!t) return;
    $("actions").dataset.turn = t.turn;
    $("selected-turn").textContent = "#" + t.turn;
    $("selected-prompt").textContent = t.prompt;
    $("rewind-code").disabled = t.pruned;
    $("rewind-both").disabled = t.pruned;
  }

  function renderDiff(files, skipped) {
    const box = $("diff");
    box.textContent = "";
    if (!files.length) box.append(el("p", "hint", "No file changes."));
    for (const f of files) {
      const d = el("div", "file");
      d.dataset.path = f.path;
      d.dataset.action = f.action;
      d.append(el("div", "path", (f.action === "delete" ? "delete " : "restore ") + f.path));
      if (f.note) d.append(el("div", "hint", f.note));
      if (f.unified) {
        const pre = el("pre");
        for (const line of f.unified.split("\n")) {
          let cls = "";
          if (line.startsWith("@@")) cls = "hunk";
          else if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
          else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
          pre.append(el("span", cls, line + "\n"));
        }
        d.append(pre);
      }
      box.append(d);
    }
    for (const s of skipped || []) box.append(el("p", "hint", "skipped " + (s.path || "") + (s.reason ? ": " + s.reason : "")));
  }

  async function openConfirm(kind, scope) {
    if (selected === null) return;
    const turn = selected;
    pending = { kind, scope, turn };
    const c = $("confirm");
    c.hidden = false;
    c.dataset.state = "loading";
    c.dataset.kind = kind;
    c.dataset.scope = scope || "";
    $("fork-options").hidden = kind !== "fork";
    $("force-label").hidden = true;
    $("force").checked = false;
    $("confirm-title").textContent = kind === "fork" ? "Fork a new session from turn #" + turn : "Rewind " + scope + " to turn #" + turn;
    $("confirm-summary").textContent = "Loading the changes…";
    $("diff").textContent = "";
    $("confirm-ok").disabled = true;
    $("confirm-cancel").focus();
    try {
      const code = kind === "fork" || scope !== "conversation";
      const parts = [];
      if (code) {
        const d = await api("GET", "/api/diff?turn=" + turn);
        renderDiff(d.files, d.skipped);
        parts.push(d.files.length + " file(s) would change" + (kind === "fork" ? " if restored" : ""));
      }
      if (kind === "fork") {
        parts.push("the new session keeps the conversation before this turn; this session is untouched");
      } else if (scope !== "code") {
        const dropped = messages.filter((m) => m.turn >= turn).length;
        parts.push(dropped + " message(s) from turn #" + turn + " on would be dropped from the conversation");
      }
      if (!pending || pending.turn !== turn) return;
      $("confirm-summary").textContent = parts.join("; ") + ".";
      c.dataset.state = "ready";
      $("confirm-ok").disabled = false;
    } catch (e) {
      $("confirm-summary").textContent = "Cannot show the changes: " + e.message;
      c.dataset.state = "error";
    }
  }

  function closeConfirm() {
    pending = null;
    $("confirm").hidden = true;
    $("confirm").dataset.state = "closed";
  }

  function describe(r) {
    const n = (r.restored || []).length + (r.deleted || []).length;
    return "Rewound " + r.scope + " to turn #" + r.turn + ": " + n + " file(s) changed" +
      ((r.skipped || []).length ? ", " + r.skipped.length + " skipped" : "") + ".";
  }

  async function confirm() {
    if (!pending) return;
    const p = pending;
    const force = $("force").checked;
    $("confirm-ok").disabled = true;
    try {
      if (p.kind === "fork") {
        const body = { turn: p.turn, restore: $("fork-restore").checked, force };
        const to = $("fork-to").value.trim();
        if (to) body.to = to;
        const r = await api("POST", "/api/fork", body);
        status("Forked session " + r.session + " from turn #" + r.turn + (body.restore ? " (files restored)" : "") + ".", "ok");
      } else {
        const r = await api("POST", "/api/rewind", { turn: p.turn, scope: p.scope, force });
        status(describe(r), "ok");
        $("undo").disabled = false;
      }
      document.body.dataset.lastAction = p.kind;
      closeConfirm();
      await refresh();
    } catch (e) {
      if (e.status === 409 && e.data && e.data.result) {
        const cs = e.data.result.conflicts || [];
        $("confirm-summary").textContent = "Conflict: changed since the turn: " + cs.join(", ") + ". Tick force to overwrite.";
        $("force-label").hidden = false;
        $("confirm-ok").disabled = false;
        status(e.message, "error");
        return;
      }
      status("Failed: " + e.message, "error");
      $("confirm-ok").disabled = false;
    }
  }

  async function undo() {
    $("undo").disabled = true;
    try {
      const r = await api("POST", "/api/undo", {});
      status("Undid the last rewind (" + r.scope + " to turn #" + r.turn + ").", "ok");
      document.body.dataset.lastAction = "undo";
      await refresh();
    } catch (e) {
      status("Undo failed: " + e.message, "error");
    } finally {
      $("undo").disabled = false;
    }
  }

  // The event stream is read with fetch, so the token travels in the
  // Authorization header as on every other call, never in a URL.
  let retry = 500;
  async function stream(ctl) {
    const resp = await fetch("/api/events", { headers: { Authorization: "Bearer " + token }, signal: ctl.signal, cache: "no-store" });
    if (resp.status === 401) {
      $("auth").hidden = false;
      ctl.refused = true; // a new token reconnects (start)
    }
    if (!resp.ok || !resp.body) throw new Error("events: " + resp.status);
    $("live").textContent = "live";
    $("live").className = "live on";
    retry = 500;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let end;
      while ((end = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        if (block.split("\n").some((l) => l.startsWith("data:"))) refresh();
      }
    }
  }

  function connect() {
    if (events) events.abort();
    const ctl = new AbortController();
    events = ctl;
    stream(ctl).catch(() => {}).finally(() => {
      if (events !== ctl) return;
      $("live").textContent = ctl.refused ? "offline" : "reconnecting";
      $("live").className = "live off";
      if (ctl.refused) return;
      setTimeout(() => { if (events === ctl) connect(); }, retry);
      retry = Math.min(retry * 2, 15000);
    });
  }

  function start() {
    if (!token) {
      $("auth").hidden = false;
      status("No token: open the address printed by ckpt serve with #token=…", "error");
      return;
    }
    sessionStorage.setItem("ckpt-token", token);
    $("auth").hidden = true;
    $("undo").disabled = false;
    refresh();
    connect();
  }

  $("auth").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value.trim();
    start();
  });
  for (const b of document.querySelectorAll("[data-scope]")) b.addEventListener("click", () => openConfirm("rewind", b.dataset.scope));
  $("fork").addEventListener("click", () => openConfirm("fork"));
  $("confirm-cancel").addEventListener("click", closeConfirm);
  $("confirm-ok").addEventListener("click", confirm);
  $("undo").addEventListener("click", undo);
  $("refresh").addEventListener("click", refresh);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && pending) closeConfirm(); });
  window.addEventListener("hashchange", () => {
    const t = tokenFromHash();
    if (t && t !== token) { token = t; start(); }
  });
  start();
})();
