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
  // The marks of Go's controller.ChangeKind.Mark, as the CLI shows them.
  const sigil = { created: "+", modified: "~", deleted: "-", unchanged: "=" };

  // quotePath shows a path as every ckpt front-end does (Go's
  // internal/quote.Path; a test holds the two to the same cases): as it
  // is when it is printable, else in double quotes with C escapes (\n,
  // \t, \", \\, octal bytes for the rest), so that a name holding a
  // newline can never pass for two names.
  const quoteEscapes = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: "\\\"", 92: "\\\\" };
  const unprintable = /[\p{C}\p{Z}]/u;
  const utf8 = new TextEncoder();
  const octal = (b) => "\\" + b.toString(8).padStart(3, "0");
  function quotePath(p) {
    let out = "";
    let quoted = false;
    for (const ch of p || "") {
      const c = ch.codePointAt(0);
      if (quoteEscapes[c]) out += quoteEscapes[c];
      else if (c < 0x20 || c === 0x7f) out += octal(c);
      else if (ch !== " " && unprintable.test(ch)) out += Array.from(utf8.encode(ch), octal).join("");
      else {
        out += ch;
        continue;
      }
      quoted = true;
    }
    return quoted ? '"' + out + '"' : p;
  }

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
  let ops = []; // GET /api/history, newest first
  let selected = null; // turn number
  let pending = null; // {kind: "rewind"|"fork", scope, turn, conflicts}
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
      const [cps, conv, hist] = await Promise.all([api("GET", "/api/checkpoints"), api("GET", "/api/conversation"), api("GET", "/api/history")]);
      turns = cps;
      messages = conv;
      ops = hist;
      render();
      renderHistory();
      document.body.dataset.loaded = "true";
    } catch (e) {
      status("Could not load the session: " + e.message, "error");
    }
  }

  // Which session and workspace the page changes, said before anything is.
  async function loadSession() {
    try {
      const s = await api("GET", "/api/session");
      current = s.session;
      $("session").textContent = s.session;
      $("workspace").textContent = quotePath(s.workspace);
      $("workspace").title = s.workspace;
      document.title = "ckpt · " + s.session;
    } catch (e) {
      status("Could not load the session: " + e.message, "error");
    }
  }

  // The session tree (GET /api/sessions, when the server lists sessions):
  // each fork under its parent; a fork whose parent is gone is a root that
  // says where it came from. The page's own session is marked.
  let current = "";
  async function loadTree() {
    let list;
    try {
      list = await api("GET", "/api/sessions");
    } catch (e) {
      $("tree-pane").hidden = true;
      return;
    }
    const byId = new Map(list.map((s) => [s.id, s]));
    const kids = new Map();
    const roots = [];
    for (const s of list) {
      if (s.parent && byId.has(s.parent.session)) {
        if (!kids.has(s.parent.session)) kids.set(s.parent.session, []);
        kids.get(s.parent.session).push(s);
      } else {
        roots.push(s);
      }
    }
    const seen = new Set();
    const node = (s, isRoot) => {
      seen.add(s.id);
      const li = el("li", s.id === current ? "node current" : "node");
      li.dataset.session = s.id;
      li.append(el("span", "id", s.id));
      if (s.parent) {
        li.append(el("span", "hint", isRoot ? "from " + s.parent.session + " turn #" + s.parent.turn + " (gone)" : "from turn #" + s.parent.turn));
      }
      li.append(el("span", "hint", s.error ? "unreadable" : s.turns + " turn(s)"));
      if (s.id === current) li.append(el("span", "tag", "this page"));
      const children = (kids.get(s.id) || []).filter((c) => !seen.has(c.id));
      if (children.length) {
        const ul = el("ul", "tree");
        for (const c of children) ul.append(node(c, false));
        li.append(ul);
      }
      return li;
    };
    const tree = $("session-tree");
    tree.textContent = "";
    for (const s of roots) tree.append(node(s, true));
    for (const s of list) if (!seen.has(s.id)) tree.append(node(s, true)); // a cycle of reused ids
    tree.dataset.count = list.length;
    $("tree-pane").hidden = false;
  }

  // What an op of the history did, in words.
  function describeOp(o) {
    switch (o.kind) {
      case "rewind": return "rewind of " + o.scope + " to turn #" + o.turn + (o.step ? " before tool call " + o.step : "");
      case "revert": return "revert of turn #" + o.turn;
      case "summarize": return "summary at turn #" + o.turn;
      case "undo": return "undo of op #" + o.undoes;
      case "redo": return "redo of op #" + o.undoes;
    }
    return o.kind + " #" + o.id;
  }

  // The history list, and Undo and Redo enabled only when the newest op
  // they act on exists (next_undo, next_redo).
  let shownOps = "";
  function renderHistory() {
    const sig = JSON.stringify(ops);
    if (sig === shownOps) return;
    shownOps = sig;
    const list = $("history");
    list.textContent = "";
    for (const o of ops) {
      const li = el("li", "op");
      li.id = "op-" + o.id;
      li.dataset.kind = o.kind;
      li.dataset.state = o.state;
      li.append(el("span", "num", "#" + o.id), el("span", "what", describeOp(o)),
        el("span", "state", o.in_effect ? "in effect" : o.state), el("span", "time", new Date(o.time).toLocaleString()));
      if (o.next_undo) li.append(el("span", "tag", "Undo reverses this"));
      if (o.next_redo) li.append(el("span", "tag", "Redo re-applies this"));
      const n = (o.files || []).length;
      if (n) li.append(el("div", "hint", n + " file(s): " + o.files.map((f) => quotePath(f.path)).join(", ")));
      list.append(li);
    }
    $("history").dataset.count = ops.length;
    $("history-empty").hidden = ops.length > 0;
    const nu = ops.find((o) => o.next_undo);
    const nr = ops.find((o) => o.next_redo);
    $("undo").disabled = !nu;
    $("undo").title = nu ? "Undo the " + describeOp(nu) : "nothing to undo";
    $("redo").disabled = !nr;
    $("redo").title = nr ? "Redo the " + describeOp(nr) : "nothing to redo";
  }

  // The timeline is rebuilt only when what it shows changed, so a refresh
  // with nothing new (the event stream's, another tab's) leaves the nodes a
  // person is about to click alone.
  let shown = "";
  function render() {
    const sig = JSON.stringify([turns, messages]);
    if (sig === shown) {
      renderActions();
      return;
    }
    shown = sig;
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
        const fl = el("li", "", (sigil[f.kind] || "?") + " " + quotePath(f.path));
        fl.dataset.kind = f.kind;
        fl.dataset.path = f.path;
        files.append(fl);
      }
      li.append(files);
      if ((t.steps || []).length) {
        // The turn's tool calls: a code rewind can go to just before one.
        const steps = el("ol", "steps");
        steps.dataset.testid = "steps";
        for (const s of t.steps) {
          const sl = el("li", "step");
          sl.dataset.step = s.step;
          sl.append(el("span", "num", t.turn + "." + s.step), el("span", "tool", " " + (s.tool || "tool call") + " "));
          for (const f of s.files) sl.append(el("span", "file", (f.existed ? "~" : "+") + quotePath(f.path) + " "));
          const b = el("button", "step-rewind", "Rewind code to before this");
          b.type = "button";
          b.dataset.step = s.step;
          b.disabled = t.pruned;
          b.addEventListener("click", (e) => {
            e.stopPropagation();
            select(t.turn);
            openConfirm("rewind", "code", s.step);
          });
          sl.append(b);
          steps.append(sl);
        }
        li.append(steps);
      }
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
      d.append(el("div", "path", (f.action === "delete" ? "delete " : "restore ") + quotePath(f.path)));
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
    for (const s of skipped || []) box.append(el("p", "hint", "skipped " + quotePath(s.path || "") + (s.reason ? ": " + s.reason : "")));
  }

  // showConflicts lists the files changed since the agent left them; with
  // any, Confirm leads to a second confirmation before forcing.
  function showConflicts(cs) {
    cs = cs || [];
    if (pending) pending.conflicts = cs;
    $("confirm").dataset.conflicts = cs.length;
    $("conflicts").hidden = cs.length === 0;
    $("conflict-list").textContent = "";
    for (const p of cs) $("conflict-list").append(el("li", "", quotePath(p)));
    $("conflicts-title").textContent = cs.length + (cs.length === 1 ? " file changed since the agent left it; the " : " files changed since the agent left them; the ") +
      (pending && pending.kind === "fork" ? "fork" : "rewind") + " would overwrite " + (cs.length === 1 ? "it:" : "them:");
    $("confirm-ok").textContent = cs.length ? "Overwrite and rewind…" : "Confirm";
  }

  async function openConfirm(kind, scope, step) {
    if (selected === null) return;
    const turn = selected;
    step = step || 0;
    pending = { kind, scope, turn, step, conflicts: [] };
    const c = $("confirm");
    c.hidden = false;
    c.dataset.state = "loading";
    c.dataset.kind = kind;
    c.dataset.scope = scope || "";
    c.dataset.step = step;
    $("fork-options").hidden = kind !== "fork";
    $("force-confirm").hidden = true;
    showConflicts([]);
    $("confirm-title").textContent = kind === "fork" ? "Fork a new session from turn #" + turn :
      "Rewind " + scope + " to turn #" + turn + (step ? " before tool call " + step + " (" + turn + "." + step + ")" : "");
    $("confirm-summary").textContent = "Loading the changes…";
    $("diff").textContent = "";
    $("confirm-ok").disabled = true;
    $("confirm-cancel").focus();
    try {
      const code = kind === "fork" || scope !== "conversation";
      const parts = [];
      if (code) {
        const d = await api("GET", "/api/diff?turn=" + turn + (step ? "&step=" + step : ""));
        renderDiff(d.files, d.skipped);
        parts.push(d.files.length + " file(s) would change" + (kind === "fork" ? " if restored" : ""));
      }
      if (kind === "rewind" && scope !== "conversation") {
        // A dry run changes nothing and names the conflicts.
        const plan = await api("POST", "/api/rewind", { turn, step, scope, dry_run: true });
        if (!pending || pending.turn !== turn || pending.step !== step) return;
        showConflicts(plan.conflicts);
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
    $("force-confirm").hidden = true;
  }

  function describe(r) {
    const n = (r.restored || []).length + (r.deleted || []).length;
    let s = "Rewound " + r.scope + " to turn #" + r.turn + (r.step ? " before tool call " + r.step : "") + ": " + n + " file(s) changed" +
      ((r.skipped || []).length ? ", " + r.skipped.length + " skipped" : "") + ".";
    if (r.scope !== "code" && r.prompt) s += " Turn #" + r.turn + "'s prompt, to edit and resend: " + r.prompt;
    return s;
  }

  // confirm is the first confirmation: it acts, unless there are conflicts,
  // which take the second one (askForce).
  function confirm() {
    if (!pending) return;
    if (pending.conflicts.length) {
      askForce();
      return;
    }
    act(false);
  }

  function askForce() {
    const n = pending.conflicts.length;
    $("confirm").dataset.state = "force";
    $("force-question").textContent = "Overwrite " + n + (n === 1 ? " file" : " files") + " changed since the agent left " + (n === 1 ? "it" : "them") + "?";
    $("force-note").textContent = "The current content is stored first: Undo brings " + (n === 1 ? "it" : "them") + " back.";
    $("force-confirm").hidden = false;
    $("confirm-ok").disabled = true;
    $("force-cancel").focus();
  }

  function declineForce() {
    closeConfirm();
    status("Nothing changed.", "ok");
  }

  async function act(force) {
    if (!pending) return;
    const p = pending;
    $("confirm-ok").disabled = true;
    $("force-ok").disabled = true;
    try {
      if (p.kind === "fork") {
        const body = { turn: p.turn, restore: $("fork-restore").checked, force };
        const to = $("fork-to").value.trim();
        if (to) body.to = to;
        const r = await api("POST", "/api/fork", body);
        status("Forked session " + r.session + " from turn #" + r.turn + (body.restore ? " (files restored)" : "") + ".", "ok");
        loadTree();
      } else {
        const r = await api("POST", "/api/rewind", { turn: p.turn, step: p.step, scope: p.scope, force });
        status(describe(r), "ok");
      }
      document.body.dataset.lastAction = p.kind;
      closeConfirm();
      await refresh();
    } catch (e) {
      if (e.status === 409 && e.data && e.data.result) {
        // Changed since the preview: list them; forcing takes the second
        // confirmation.
        $("force-confirm").hidden = true;
        $("confirm").dataset.state = "ready";
        showConflicts(e.data.result.conflicts);
        $("confirm-ok").disabled = false;
        status(e.message, "error");
        return;
      }
      status("Failed: " + e.message, "error");
      $("confirm-ok").disabled = false;
    } finally {
      $("force-ok").disabled = false;
    }
  }

  // undo and redo act on the newest op (the history's next_undo and
  // next_redo); a conflict is reported, never forced from here.
  async function reverse(kind) {
    $("undo").disabled = true;
    $("redo").disabled = true;
    try {
      const r = await api("POST", "/api/" + kind, {});
      const what = r.scope + " to turn #" + r.turn;
      status((kind === "undo" ? "Undid the rewind of " : "Redid the rewind of ") + what + ".", "ok");
      document.body.dataset.lastAction = kind;
    } catch (e) {
      status((kind === "undo" ? "Undo" : "Redo") + " failed: " + e.message, "error");
    }
    await refresh();
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
      status("No token: open the open_url that ckpt serve prints on stdout.", "error");
      return;
    }
    sessionStorage.setItem("ckpt-token", token);
    $("auth").hidden = true;
    loadSession().then(loadTree);
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
  $("force-ok").addEventListener("click", () => act(true));
  $("force-cancel").addEventListener("click", declineForce);
  $("undo").addEventListener("click", () => reverse("undo"));
  $("redo").addEventListener("click", () => reverse("redo"));
  $("refresh").addEventListener("click", refresh);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && pending) closeConfirm(); });
  window.addEventListener("hashchange", () => {
    const t = tokenFromHash();
    if (t && t !== token) { token = t; start(); }
  });
  start();
})();
