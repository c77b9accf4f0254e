// electd's status page (docs/design/http-contract.md, "HTTP API"). The server draws it
// with the values of the moment; this script reads the API of the electd
// that serves it and keeps the page current from GET /events.
//
// Every value shown comes from ZooKeeper (ids, advertise addresses, written
// by anyone who may write the election path) and is put into the page as
// text (textContent), never as HTML.
//
// Bounds: one EventSource per page (it counts against http.max_streams);
// re-reads of /participants (which asks ZooKeeper), /history and, with a
// forwarding proxy, /leader (the proxy's counts) are throttled to one per REREAD_MS; a hidden page closes its stream and stops
// polling until it is shown again. The page sends GET requests only.
"use strict";

(() => {
  const REREAD_MS = 1000; // at most one re-read of /participants and /history per second
  const LEASE_POLL_MS = 1000; // re-read /healthz/leader this often while leading
  const SLOW_POLL_MS = 15000; // joins behind the leader send no event: look now and then
  const RETRY_MS = 5000; // a stream refused (503 past http.max_streams) is retried after this
  const HISTORY_SHOWN = 20; // as the server draws it (uiview.go)
  const QUEUE_SHOWN = 50; // rows; the note counts the rest

  const $ = (id) => document.getElementById(id);

  // view is what the page knows; render* draw parts of it.
  const view = {
    event: null, // the last /events data (the /leader JSON)
    health: null, // the last /healthz/leader answer
    leaseAt: 0, // performance.now() when that request was sent
    leaseMax: 0, // the longest lease seen: the bar's full length
  };

  // ---- helpers -----------------------------------------------------------

  function setText(id, s) {
    $(id).textContent = s;
  }

  function td(tr, s, cls) {
    const c = document.createElement("td");
    c.textContent = s;
    if (cls) c.className = cls;
    tr.appendChild(c);
    return c;
  }

  function orDash(v) {
    return v === null || v === undefined || v === "" ? "–" : String(v);
  }

  async function getJSON(path) {
    const resp = await fetch(path, { cache: "no-store", headers: { Accept: "application/json" } });
    let body = null;
    try {
      body = await resp.json();
    } catch (e) {
      body = null;
    }
    return { status: resp.status, body };
  }

  function errorText(r) {
    return r.body && typeof r.body.error === "string" ? r.body.error : "HTTP " + r.status;
  }

  // throttle returns a function that runs fn at most once per gap ms, never
  // two at once, and once more after a run if it was asked for meanwhile.
  function throttle(fn, gap) {
    let last = -Infinity;
    let timer = null;
    let running = false;
    let again = false;
    const run = async () => {
      timer = null;
      running = true;
      last = performance.now();
      try {
        await fn();
      } catch (e) {
        // shown by fn's callers; the next event or poll tries again
      } finally {
        running = false;
        if (again) {
          again = false;
          schedule();
        }
      }
    };
    const schedule = () => {
      if (running) {
        again = true;
        return;
      }
      if (timer === null) {
        timer = setTimeout(run, Math.max(0, last + gap - performance.now()));
      }
    };
    return schedule;
  }

  // ---- the connection ----------------------------------------------------

  function setConn(kind, text) {
    const el = $("conn");
    el.dataset.conn = kind;
    el.textContent = text;
  }

  let source = null;
  let retryTimer = null;

  function connect() {
    retryTimer = null;
    if (source) return;
    const es = new EventSource("/events");
    source = es;
    es.addEventListener("leader", onEvent);
    es.addEventListener("state", onEvent);
    es.onopen = () => setConn("live", "Live: updated from /events as changes happen.");
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED) {
        setConn("retrying", "Connection to /events lost; reconnecting…");
        return;
      }
      // Refused (503 past http.max_streams) or not a stream: the browser
      // gives up, so retry by hand, slowly, and meanwhile read what the
      // stream would have said.
      es.close();
      source = null;
      setConn("down", "Live updates unavailable (/events refused); retrying every " + RETRY_MS / 1000 + " s.");
      retryTimer = setTimeout(connect, RETRY_MS);
      readLeader();
    };
  }

  // readLeader stands in for the stream while it is refused: GET /leader
  // answers the JSON of its events (503 with "leader": null when none).
  async function readLeader() {
    let r;
    try {
      r = await getJSON("/leader");
    } catch (e) {
      return; // electd is unreachable: the next retry tries again
    }
    if (source !== null || !r.body || !r.body.self) return; // the stream is back: it is newer
    show(r.body);
  }

  function disconnect() {
    if (source) {
      source.close();
      source = null;
    }
    clearTimeout(retryTimer);
    retryTimer = null;
    setConn("paused", "Paused while the page is hidden.");
  }

  function onEvent(ev) {
    let data;
    try {
      data = JSON.parse(ev.data);
    } catch (e) {
      return;
    }
    show(data);
  }

  // show draws the /leader JSON d and re-reads what it may have changed.
  function show(d) {
    view.event = d;
    renderLeader();
    renderSelf();
    rereadLists();
    readLease();
  }

  // ---- leader and self ---------------------------------------------------

  function renderLeader() {
    const d = view.event;
    setText("election", d.path ? d.path + " (" + d.mode + ")" : "");
    const l = d.leader;
    setText("leader-id", l ? l.id : "none known");
    setText("leader-token", l ? String(l.fencing_token) : "–");
    setText("leader-advertise", l ? orDash(l.advertise) : "–");
    setText("leader-node", l ? l.node : "–");
    setText("leader-proxy", l ? orDash(l.proxy) : "–");
    $("leader-id").dataset.known = l ? "yes" : "no";
    document.title = "electd: " + (l ? l.id + " leads" : "no leader known");
  }

  function renderSelf() {
    const s = view.event.self;
    setText("self-id", s.id);
    let role = s.is_leader ? "leader" : "follower";
    if (!s.candidate) role = "observer (not a candidate)";
    setText("self-role", role);
    $("self-role").dataset.leader = s.is_leader ? "yes" : "no";
    setText("self-state", s.state);
    let cand = s.candidate ? "yes" : "no";
    if (s.app_healthy === true) cand += " (application healthy)";
    if (s.app_healthy === false) cand += " (application unhealthy)";
    setText("self-candidate", cand);
    if (view.health) setText("self-reason", view.health.reason);
    renderProxy();
  }

  // renderProxy shows where this participant's forwarding proxy sends the
  // application's traffic, when it runs one (docs/design/proxy.md, "Forwarding").
  function renderProxy() {
    const p = view.event.proxy;
    document.querySelectorAll(".proxy").forEach((el) => {
      el.hidden = !p;
    });
    if (!p) return;
    let where = "holding: no leader to send to yet";
    if (p.route === "app") where = "to its application at " + p.to;
    if (p.route === "leader") where = "to the leader's proxy at " + p.to;
    setText("self-proxy", p.mode + " at " + p.advertise + ", " + where + "; " + p.held + " held, " +
      p.in_flight + " with the application, " + p.connections + " connections");
    $("self-proxy").dataset.route = p.route;
  }

  // readProxy refreshes the proxy's counts, which change without an event.
  async function readProxy() {
    if (!view.event || !view.event.proxy) return;
    const r = await getJSON("/leader");
    if (!r.body || !r.body.proxy || !view.event) return;
    view.event.proxy = r.body.proxy;
    renderProxy();
  }

  const readLease = throttle(async () => {
    const sent = performance.now();
    const r = await getJSON("/healthz/leader"); // 503 on a follower: still an answer
    if (!r.body || typeof r.body.is_leader !== "boolean") return;
    view.health = r.body;
    // The lease was measured between sending and receiving: counting from
    // the send understates what is left, never overstates it.
    view.leaseAt = sent;
    view.leaseMax = Math.max(view.leaseMax, r.body.lease_remaining_ms);
    setText("self-reason", r.body.reason);
    drawLease();
  }, 250);

  function leaseLeft() {
    if (!view.health || !view.health.is_leader) return 0;
    return Math.max(0, view.health.lease_remaining_ms - (performance.now() - view.leaseAt));
  }

  function drawLease() {
    const bar = $("lease-bar");
    if (!view.health || !view.health.is_leader) {
      bar.max = 1;
      bar.value = 0;
      setText("lease-text", "none (not leading)");
      return;
    }
    const left = leaseLeft();
    bar.max = Math.max(view.leaseMax, 1);
    bar.value = left;
    setText("lease-text", left > 0 ? (left / 1000).toFixed(1) + " s left" : "ran out: waiting for a renewal");
  }

  // ---- queue and history ---------------------------------------------------

  const rereadLists = throttle(async () => {
    await Promise.all([readQueue(), readHistory(), readProxy()]);
  }, REREAD_MS);

  async function readQueue() {
    const r = await getJSON("/participants");
    if (r.status !== 200 || !Array.isArray(r.body)) {
      setText("queue-note", "Cannot read the queue: " + errorText(r));
      return;
    }
    const n = r.body.length;
    setText("queue-note", "In queue order: the first participant leads. " + n + " participant" +
      (n === 1 ? "" : "s") + (n > QUEUE_SHOWN ? "; the first " + QUEUE_SHOWN + " shown, all at /participants" : "") + ".");
    // This electd's row, by id: each of several participants sharing the
    // id (electd_duplicate_ids_total counts them) is marked.
    const self = view.event ? view.event.self.id : null;
    const rows = r.body.slice(0, QUEUE_SHOWN).map((p, i) => {
      const tr = document.createElement("tr");
      tr.dataset.leader = p.is_leader ? "yes" : "no";
      td(tr, String(i + 1), "num");
      td(tr, p.id, "id");
      td(tr, orDash(p.advertise));
      td(tr, (p.is_leader ? "leader" : "follower") + (p.id === self ? " (this electd)" : ""));
      td(tr, orDash(p.fencing_token), "num");
      td(tr, p.session, "mono");
      return tr;
    });
    $("queue-rows").replaceChildren(...rows);
  }

  async function readHistory() {
    const r = await getJSON("/history?limit=" + HISTORY_SHOWN);
    if (r.status !== 200 || !Array.isArray(r.body)) {
      setText("history-note", "Cannot read /history: " + errorText(r));
      return;
    }
    setText("history-note", "Newest first, as this participant saw them.");
    const newest = r.body[r.body.length - 1];
    // The session is this participant's, as of its last transition: every
    // change of session is one.
    setText("self-session", newest && newest.session !== "0x0" ? newest.session : "none yet");
    const rows = r.body.slice().reverse().map((e) => {
      const tr = document.createElement("tr");
      tr.dataset.kind = e.kind;
      tr.dataset.seq = String(e.seq);
      const t = document.createElement("time");
      t.dateTime = e.time;
      t.textContent = e.time.replace("T", " ").replace("Z", "");
      td(tr, "").appendChild(t);
      td(tr, e.kind, "kind");
      td(tr, e.leader === null ? "none" : e.leader, "id");
      td(tr, orDash(e.fencing_token), "num");
      td(tr, e.reason);
      td(tr, e.state + (e.candidate ? "" : ", not a candidate"));
      return tr;
    });
    $("history-rows").replaceChildren(...rows);
  }

  // ---- timers and visibility ---------------------------------------------

  let timers = [];

  function start() {
    setConn("connecting", "Connecting to /events…");
    connect();
    rereadLists();
    readLease();
    timers = [
      setInterval(() => {
        if (view.health && view.health.is_leader) readLease();
      }, LEASE_POLL_MS),
      setInterval(rereadLists, SLOW_POLL_MS),
      setInterval(drawLease, 100),
    ];
  }

  function stop() {
    disconnect();
    timers.forEach(clearInterval);
    timers = [];
  }

  document.addEventListener("visibilitychange", () => {
    if (document.hidden) stop();
    else start();
  });
  if (!document.hidden) start();
  else setConn("paused", "Paused while the page is hidden.");
})();
