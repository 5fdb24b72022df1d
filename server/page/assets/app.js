// app.js keeps the run page live: it follows the run's SSE stream from the
// cursor the server rendered, adds each event once (by run and seq), and
// keeps the reader's place across reloads. It builds the DOM with
// textContent only: every text of an event is data, never markup.
"use strict";
(function () {
  const root = document.getElementById("run");
  if (!root) return;
  const $ = (id) => document.getElementById(id);
  const runID = root.dataset.run;
  const timeline = $("timeline");
  const objects = $("objects");
  const seen = new Set(); // run + "/" + seq of every event shown
  const calls = new Map(); // call id: its timeline item
  let status = root.dataset.status;
  let cursor = root.dataset.cursor || "";
  let es = null;

  document.querySelectorAll("#run [data-seq]").forEach((e) => seen.add(e.dataset.run + "/" + e.dataset.seq));
  timeline.querySelectorAll("li[data-call]").forEach((li) => calls.set(li.dataset.call, li));

  const terminal = (s) => ["completed", "failed", "cancelled", "conflict", "superseded"].includes(s);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // head is an item's first line: time, the child run it came from, a kind
  // (or tool) and a text.
  function head(ev, kindCls, kind, text, textTag) {
    const h = el("div", "head");
    const t = el("time", "", (ev.at || "").slice(11, 19));
    t.setAttribute("datetime", ev.at || "");
    h.append(t);
    if (ev.run !== runID) h.append(" ", el("span", "who", ev.run));
    h.append(" ", el("span", kindCls, kind));
    h.append(" ", el(textTag || "span", "text", text));
    return h;
  }

  function item(ev, cls) {
    const li = el("li", "ev " + cls);
    li.dataset.run = ev.run;
    li.dataset.seq = String(ev.seq);
    return li;
  }

  function line(ev, cls, kind, text, textTag) {
    const li = item(ev, cls);
    li.append(head(ev, "kind", kind, text, textTag));
    timeline.append(li);
  }

  function verdict(r) {
    if (r.exitCode !== undefined && r.exitCode !== null) return "exit " + r.exitCode;
    return r.ok ? "ok" : "failed";
  }

  function details(key, summary, body) {
    const d = el("details");
    d.dataset.key = key;
    d.append(el("summary", "", summary), body);
    if (place.open.includes(key)) d.open = true;
    return d;
  }

  function resultBox(ev, paired) {
    const div = el("div", "result " + (ev.ok ? "ok" : "fail"));
    if (paired) {
      div.dataset.run = ev.run;
      div.dataset.seq = String(ev.seq);
    }
    div.append(el("span", "verdict", verdict(ev)), " ", el("span", "summary", ev.summary));
    if (ev.output) div.append(details(ev.run + "/" + ev.seq, "output", el("pre", "output", ev.output)));
    return div;
  }

  function call(ev) {
    const li = item(ev, "call");
    li.dataset.call = ev.callId;
    const h = head(ev, "tool", ev.tool, rest(ev.description, ev.tool));
    const pending = el("div", "result pending");
    pending.append(el("span", "verdict", "running…"));
    li.append(h, pending);
    timeline.append(li);
    calls.set(ev.callId, li);
  }

  // said shows a model's text as it streams, under its call; the call's
  // result, when it comes, holds the whole reply.
  function said(ev) {
    const li = calls.get(ev.callId);
    const pending = li && li.querySelector(".result.pending");
    if (!pending) return;
    let pre = li.querySelector("pre.said");
    if (!pre) {
      pre = el("pre", "said");
      pending.before(pre);
    }
    pre.textContent += ev.text;
  }

  function result(ev) {
    const li = calls.get(ev.callId);
    const pending = li && li.querySelector(".result.pending");
    if (pending) {
      const pre = li.querySelector("pre.said");
      if (pre) pre.remove();
      pending.replaceWith(resultBox(ev, true));
      return;
    }
    const orphan = item(ev, "call");
    orphan.dataset.call = ev.callId;
    const h = head(ev, "tool", ev.tool, ev.callId);
    orphan.append(h, resultBox(ev, false));
    timeline.append(orphan);
  }

  // label is a runtime object's line, worded as events.Text words it.
  function label(ev) {
    switch (ev.type) {
      case "memory_query":
        return ev.queryId + ": " + (ev.admitted || []).length + " blocks admitted (" + ev.memoryTokens + " tokens), " + (ev.dropped || []).length + " dropped";
      case "observation":
        return ev.observationId + " " + ev.summary;
      case "verification":
        return ev.verificationId + " " + ev.method + " passed=" + ev.passed + " " + (ev.evidence || "");
      case "outcome": {
        let s = ev.outcomeId + " " + ev.status;
        if (ev.verificationId) s += ", verified by " + ev.verificationId;
        if (ev.degraded && ev.degraded.length) s += ", degraded: " + ev.degraded.join(", ");
        return s;
      }
    }
    return ev.type;
  }

  // child keeps a descendant's line in the children pane: its status as
  // its events tell it, and a line for one spawned since the page loaded.
  function child(ev) {
    if (!ev.run.startsWith(runID + ".")) return;
    let li = document.querySelector('#children li[data-child="' + CSS.escape(ev.run) + '"]');
    if (!li) {
      li = el("li");
      li.dataset.child = ev.run;
      const a = el("a", "", ev.run);
      a.href = root.dataset.base + "?run=" + encodeURIComponent(ev.run);
      li.append(a, " ", el("span", "status status-running", "running"));
      $("children").append(li);
      $("children-box").hidden = false;
    }
    let s = "";
    if (ev.type === "answer") s = "completed";
    else if (ev.type === "run_note" && ev.note === "stopped") s = (ev.summary || "").split(":")[0];
    else if (ev.type === "run_note" && (ev.note === "waiting" || ev.note === "sleeping")) s = "waiting";
    else if (content.has(ev.type)) s = "running";
    const st = li.querySelector(".status");
    if (s && st && !terminal(st.textContent)) {
      st.textContent = s;
      st.className = "status status-" + s;
    }
  }

  function object(ev) {
    // Only once: an act's observation restates its call's result, and an
    // outcome of only a status, the status (as the server lays them out).
    if (ev.type === "observation" && calls.has((ev.observationId || "").replace(/^obs:/, ""))) return;
    if (ev.type === "outcome" && !ev.verificationId && !(ev.degraded || []).length) return;
    const li = el("li", "obj " + ev.type);
    li.dataset.run = ev.run;
    li.dataset.seq = String(ev.seq);
    li.append(el("span", "kind", ev.type), " ", el("span", "text", label(ev)));
    const key = "obj/" + ev.run + "/" + ev.seq;
    if (ev.type === "observation" && ev.detail) li.append(details(key, "detail", el("pre", "", ev.detail)));
    if (ev.type === "memory_query") {
      const ul = el("ul", "blocks");
      for (const b of ev.admitted || []) {
        const bl = el("li", "", b.name + " ");
        bl.append(el("span", "tokens", b.tokens));
        ul.append(bl);
      }
      for (const b of ev.dropped || []) {
        const bl = el("li", "dropped", b.name + " ");
        bl.append(el("span", "tokens", b.tokens), " dropped");
        ul.append(bl);
      }
      li.append(details(key, "blocks", ul));
    }
    objects.append(li);
    $("objects-box").hidden = false;
  }

  function show(boxID, id, text) {
    if (text === undefined || text === null || text === "") return;
    $(id).textContent = id === "answer" ? pretty(String(text)) : String(text);
    if (id === "answer") {
      // A long answer folds under a line that counts it.
      const n = $(id).textContent.replace(/\n+$/, "").split("\n").length;
      $("answer-lines").textContent = n + " lines";
      $("answer-fold").classList.toggle("short", n <= 24);
    }
    $(boxID).hidden = false;
  }

  // count is "1 step", "2,048 steps", as the server words it.
  function count(n, noun) {
    return Number(n).toLocaleString("en-US") + " " + noun + (n === 1 ? "" : "s");
  }

  // span is a duration as the server words it: 350ms, 4.2s, 3m12s, 2h05m.
  function span(ms) {
    ms = Math.max(ms, 0);
    const two = (x) => String(Math.floor(x)).padStart(2, "0");
    if (ms < 1000) return ms + "ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + "s";
    if (ms < 3600000) return Math.floor(ms / 60000) + "m" + two((ms / 1000) % 60) + "s";
    return Math.floor(ms / 3600000) + "h" + two((ms / 60000) % 60) + "m";
  }

  // figures is the summary's line: steps, tokens, how long it ran.
  function figures(s) {
    const parts = [count(s.steps || 0, "step")];
    if (s.tokens) parts.push(count(s.tokens, "token"));
    if (s.started) parts.push(s.ended ? "took " + span(s.ended - s.started) : span(Date.now() - s.started) + " so far");
    $("figures").textContent = parts.join(" · ");
  }

  // pretty is an answer as a person reads it: JSON indented.
  function pretty(text) {
    try {
      const v = JSON.parse(text);
      if (v !== null && typeof v === "object") return JSON.stringify(v, null, 2);
    } catch (e) {}
    return text;
  }

  // rest is a call's description without the tool's name it repeats.
  function rest(description, tool) {
    const d = description || "";
    return (d.startsWith(tool) ? d.slice(tool.length) : d).trim();
  }

  function setStatus(s) {
    if (!s) return;
    status = s;
    root.dataset.status = s;
    root.classList.toggle("ended", terminal(s));
    const st = $("status");
    st.textContent = s;
    st.className = "status status-" + s;
    if (s !== "waiting") $("waiting-box").hidden = true;
  }

  const content = new Set(["input", "run_meta", "tool_call", "tool_result", "assistant", "emit", "answer", "memory_query", "observation"]);

  function add(ev) {
    if (!ev || ev.run === undefined || ev.seq === undefined) return;
    const key = ev.run + "/" + ev.seq;
    if (seen.has(key)) return;
    seen.add(key);
    const own = ev.run === runID;
    if (own && status === "waiting" && content.has(ev.type)) setStatus("running");
    if (!own) child(ev);
    switch (ev.type) {
      case "input":
        if (own) {
          if (!$("input").textContent) $("input").textContent = ev.text;
          $("input-box").hidden = false;
          return;
        }
        return line(ev, "input", "input", ev.text);
      case "run_meta":
        if (own) {
          if (!$("prog").textContent) $("prog").textContent = ev.prog;
          return;
        }
        return line(ev, "run_meta", "started", ev.prog);
      case "answer":
        if (own) return show("answer-box", "answer", ev.text);
        return line(ev, "answer", "answer", ev.text);
      case "tool_call":
        return call(ev);
      case "tool_result":
        return result(ev);
      case "assistant":
        return said(ev);
      case "run_note":
        return line(ev, "note note-" + ev.note, ev.note, ev.summary);
      case "emit":
        return line(ev, "emit", ev.name, ev.data || "", "code");
      case "memory_query":
      case "observation":
      case "verification":
      case "outcome":
        return object(ev);
    }
  }

  let last = null; // the last state: how long a run that goes on has run, kept current
  setInterval(() => {
    if (last && last.started && !last.ended && !terminal(status)) figures(last);
  }, 1000);

  function applyState(s) {
    setStatus(s.status);
    last = s;
    figures(s);
    if (s.status === "waiting") {
      if (s.sleeps) {
        // A timer: nothing to answer, it goes on at its deadline.
        $("waiting-title").textContent = "Sleeping";
        $("waiting").textContent = "until " + new Date(s.sleeps).toLocaleTimeString([], {timeZoneName: "short"}) + ": it goes on by itself";
        $("wait-answer").hidden = true;
      } else {
        $("waiting-title").textContent = "Waiting";
        $("waiting").textContent = s.waiting || "";
        if (s.command) $("wait-command").textContent = s.command;
        $("wait-answer").hidden = false;
      }
      $("waiting-box").hidden = false;
    }
    show("answer-box", "answer", s.answer);
    show("error-box", "error", s.error && typeof s.error === "object" ? s.error.text : s.error);
    if (s.error && Array.isArray(s.error.trace) && !$("trace").children.length) {
      for (const f of s.error.trace) $("trace").append(el("li", "", "at " + f));
    }
  }

  function live(on) {
    $("live").hidden = !on;
  }

  // connect follows the stream from the cursor; the browser itself resumes
  // a dropped stream with Last-Event-ID, and a refused one is retried here.
  function connect() {
    const stream = root.dataset.events;
    const url = stream + (cursor ? (stream.includes("?") ? "&" : "?") + "cursor=" + encodeURIComponent(cursor) : "");
    es = new EventSource(url);
    es.onopen = () => live(true);
    es.onmessage = (m) => {
      if (m.lastEventId) cursor = m.lastEventId;
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch (e) {
        return;
      }
      add(ev);
    };
    es.addEventListener("state", (m) => {
      let s;
      try {
        s = JSON.parse(m.data);
      } catch (e) {
        return;
      }
      applyState(s);
      if (terminal(s.status)) {
        es.close();
        live(false);
      }
    });
    es.onerror = () => {
      live(false);
      if (es.readyState === EventSource.CLOSED && !terminal(status)) setTimeout(connect, 3000);
    };
  }

  // The reader's place: scroll position and open details, per page.
  const placeKey = "runehost:" + location.pathname;
  const place = (() => {
    try {
      const p = JSON.parse(sessionStorage.getItem(placeKey) || "{}");
      return { y: +p.y || 0, open: Array.isArray(p.open) ? p.open.map(String) : [] };
    } catch (e) {
      return { y: 0, open: [] };
    }
  })();
  function savePlace() {
    try {
      sessionStorage.setItem(placeKey, JSON.stringify(place));
    } catch (e) {}
  }
  document.querySelectorAll("details[data-key]").forEach((d) => {
    if (place.open.includes(d.dataset.key)) d.open = true;
  });
  if (place.y) window.scrollTo(0, place.y);
  document.addEventListener(
    "toggle",
    (e) => {
      const d = e.target;
      if (!(d instanceof HTMLDetailsElement) || !d.dataset.key) return;
      place.open = place.open.filter((k) => k !== d.dataset.key);
      if (d.open) place.open.push(d.dataset.key);
      savePlace();
    },
    true
  );
  let saving = 0;
  window.addEventListener("scroll", () => {
    if (saving) return;
    saving = setTimeout(() => {
      saving = 0;
      place.y = window.scrollY;
      savePlace();
    }, 200);
  });

  if (!terminal(status)) connect();
})();
