"use strict";
// The master board console: renders the hub's state and sends the operator's actions.

(async () => {
  const $ = (id) => document.getElementById(id);
  const TYPES = {
    "regular": "Regular",
    "limited": "Limited",
    "winner-take-all": "Winner take all",
    "cover-all": "Cover-all",
  };
  const WEIGHT = { violation: 0, warning: 1, uncertain: 2, review: 3 };
  const sayCall = Board.announcer($("announce-calls"));
  const sayAlert = Board.announcer($("announce-alerts"));
  let state = null;
  let me = { csrf: "", may: [], reads: [], open: true };

  const dollars = (amount) =>
    amount === null || amount === undefined ? "not stated" : "$" + Number(amount).toLocaleString("en-US");
  const seconds = (t) => {
    const m = Math.floor(t / 60);
    const s = (t - m * 60).toFixed(1).padStart(4, "0");
    return m + ":" + s;
  };

  function item(text, className) {
    const li = document.createElement("li");
    if (className) li.className = className;
    li.textContent = text;
    return li;
  }

  function fill(list, items, empty) {
    // an empty list says so in words (a blank panel reads as a page still loading)
    list.replaceChildren(...(items.length || !empty ? items : [item(empty, "empty")]));
  }

  function lastBall(game) {
    // A(1) as heard: the caller's announcement, beside the program's when they differ
    const words = (required) => (required ? "required" : "not required");
    const plan = game ? game.last_ball_required : null;
    const heard = game ? game.last_ball_announced : null;
    if (heard) {
      const how = heard.unsure ? "heard unsure" : "announced";
      const differs = plan !== null && plan !== heard.required ? "; the program says " + words(plan) : "";
      return words(heard.required) + " (" + how + differs + ")";
    }
    return plan === null ? "not stated" : words(plan) + " (the program; not announced yet)";
  }

  function renderGame(game, status) {
    $("game-number").textContent = game ? String(game.number) : "none";
    $("game-status").textContent = status.text;
    $("game-status").dataset.phase = status.phase;
    $("game-type").textContent = game
      ? TYPES[game.type] + (game.type === "limited" && game.balls ? ", " + game.balls + " balls" : "")
      : "none";
    $("game-pattern").textContent = game && game.pattern ? game.pattern : "not stated";
    let prize = game ? dollars(game.prize) : "not stated";
    if (game && game.cards_sold !== null) prize += ", " + game.cards_sold + " cards sold";
    $("game-prize").textContent = prize;
    $("game-last-ball").textContent = lastBall(game);
    $("winner-required").hidden = !(game && game.winner_record_required);
  }

  function renderCalls(s) {
    $("current").textContent = s.current || "none";
    $("current").setAttribute("aria-label", s.current ? "Current call " + Board.spoken(s.current) : "No call yet");
    fill($("previous"), s.previous.map((b) => item(b)), "none yet");
    $("count").textContent = String(s.count);
    $("count-word").textContent = s.count === 1 ? "ball called" : "balls called";
    const limited = s.remaining !== null;
    $("remaining-line").hidden = !limited;
    if (limited) {
      $("remaining").textContent = String(s.remaining);
      $("planned").textContent = String(s.game.balls);
    }
    $("prizes").textContent = dollars(s.prizes_offered);
    $("prize-cap").textContent = dollars(s.prize_cap);
    $("prizes").classList.toggle("over", s.prizes_offered > s.prize_cap);
  }

  function renderClaim(claim) {
    $("claim-none").hidden = !!claim;
    $("claim-body").hidden = !claim;
    if (!claim) return;
    $("claim-manufacturer").textContent = claim.manufacturer || "not read yet";
    $("claim-serial").textContent = claim.serial || "not read yet";
    $("claim-held").textContent = claim.held_ball || "none";
    $("claim-result").textContent =
      claim.valid === null ? "being verified" : claim.valid ? "valid bingo" : "not a valid bingo";
    fill(
      $("claim-winning"),
      claim.winning.map((w) =>
        item(w.ball + (w.called ? " \u2713 called" : " \u2717 NOT CALLED"), w.called ? "called" : "not-called"),
      ),
    );
    $("claim-valid").disabled = !claim.open;
    $("claim-not-valid").disabled = !claim.open;
  }

  function finding(weight, head, text, heard) {
    const li = item("", "finding " + weight);
    const strong = document.createElement("strong");
    strong.textContent = head;
    li.append(strong, " " + text);
    if (heard) {
      const quote = document.createElement("span");
      quote.className = "quote";
      quote.textContent = " heard: \u201c" + heard + "\u201d";
      li.append(quote);
    }
    return li;
  }

  function renderFindings(s) {
    // the weightiest first (violation, warning, uncertain, then speech for review), each weight in time order
    $("finding-count").textContent = String(s.finding_count);
    const rows = s.findings
      .map((f) => [WEIGHT[f.severity], f.time, finding(f.severity, f.severity.toUpperCase() + " " + f.clause,
        seconds(f.time) + " \u00b7 " + f.message, f.heard)])
      .concat(s.for_review.map((r) => [WEIGHT.review, r.time, finding("review", "FOR REVIEW",
        seconds(r.time) + " \u00b7 " + r.role + (r.unsure ? " (unsure)" : "") + ": " + r.reason, r.heard)]));
    rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    fill($("findings"), rows.map((row) => row[2]), "No findings yet");
  }

  function render(s) {
    if (state && s.version < state.version) return; // an action's answer can cross a newer live update
    state = s;
    renderGame(s.game, s.status);
    Board.render($("board"), s);
    renderCalls(s);
    renderClaim(s.claim);
    renderFindings(s);
    fill(
      $("prompts"),
      s.prompts.slice().reverse().map((p) => item(seconds(p.time) + " \u00b7 " + p.text, "prompt")),
      "No prompts yet",
    );
    fill(
      $("heard"),
      s.heard
        .slice()
        .reverse()
        .slice(0, 8)
        .map((h) =>
          item(
            seconds(h.time) + " " + (h.kind === "keyed" ? "board: " + h.ball : h.role + ": " + h.text) + (h.uncertain ? " (unsure)" : ""),
            h.kind,
          ),
        ),
      "Nothing heard yet",
    );
    fill(
      $("winners"),
      s.winners.map((w) => item("Game " + w.game + ": " + w.name + ", " + w.contact + ", " + dollars(w.prize))),
      "No winner recorded yet",
    );
    document.title = (s.current ? s.current + " \u00b7 " : "") + "Master board";
    document.body.dataset.version = String(s.version);
  }

  function announce(events) {
    const calls = [];
    const alerts = [];
    for (const e of events) {
      if (e.kind === "call") calls.push(Board.spoken(e.ball));
      else if (e.kind === "withdrawn") calls.push(Board.spoken(e.ball) + " withdrawn");
      else if (e.kind === "game-opened") calls.push("Game " + e.game + " opened");
      else if (e.kind === "claim-opened") calls.push("Bingo claimed");
      else if (e.kind === "claim-resolved") calls.push(e.valid ? "Valid bingo" : "Not a valid bingo");
      else if (e.kind === "prompt") calls.push(e.text);
      else if (e.kind === "finding" && e.severity === "violation") alerts.push("Violation " + e.clause + ": " + e.message);
      else if (e.kind === "finding") calls.push(e.severity + " " + e.clause + ": " + e.message);
    }
    sayCall(calls.join(". "));
    sayAlert(alerts.join(". "));
  }

  async function send(path, body) {
    const status = $("operator-status");
    try {
      const response = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": me.csrf, "X-Action-Id": Board.token() },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (response.status === 401) {
        Board.toLogin();
        return false;
      }
      if (!response.ok) {
        status.textContent = answer.error || "the console refused that";
        status.className = "status error";
        return false;
      }
      status.textContent = "";
      status.className = "status";
      render(answer.state);
      return true;
    } catch (err) {
      status.textContent = "the console server is not answering";
      status.className = "status error";
      return false;
    }
  }

  function formData(form) {
    const data = {};
    for (const [key, value] of new FormData(form).entries()) data[key] = String(value).trim();
    return data;
  }

  function pick(ball) {
    if (!me.may.includes("board")) return;
    $("key-ball").value = ball;
    $("key-submit").focus();
  }

  Board.build($("board"), pick);

  $("key-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = $("key-ball");
    if (await send("/api/board", { ball: field.value })) {
      $("operator-status").textContent = "Keyed " + field.value.toUpperCase();
      field.value = "";
    }
    field.focus();
  });
  $("game-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await send("/api/game", formData(event.target))) $("operator-status").textContent = "Next game started";
  });
  $("winner-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await send("/api/winner", formData(event.target))) {
      event.target.reset();
      $("operator-status").textContent = "Winner recorded";
    }
  });
  $("claim-valid").addEventListener("click", () => send("/api/claim", { valid: true }));
  $("claim-not-valid").addEventListener("click", () => send("/api/claim", { valid: false }));

  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest && event.target.closest("input, select, textarea");
    if (me.may.includes("board") && !typing && !event.ctrlKey && !event.metaKey && !event.altKey && (event.key === "k" || event.key === "K")) {
      event.preventDefault();
      $("key-ball").focus();
    }
  });

  function showRole() {
    // the page shows each role only its own part (the server refuses the rest whatever the page shows)
    const may = new Set(me.may);
    $("key-form").hidden = !may.has("board");
    $("game-form").hidden = !may.has("game");
    $("winner-form").hidden = !may.has("winner");
    $("claim-actions").hidden = !may.has("claim");
    $("board-hint").hidden = !may.has("board");
    $("operator").hidden = may.size === 0;
    $("records-link").hidden = !me.reads.includes("records") || me.open;
    $("who").hidden = me.open;
    $("who-name").textContent = me.open ? "" : me.user + " (" + me.role + ")";
    document.body.dataset.role = me.role;
  }

  $("logout").addEventListener("click", async () => {
    await fetch("/api/logout", { method: "POST", headers: { "X-CSRF-Token": me.csrf } });
    Board.toLogin();
  });

  const answer = await fetch("/api/me");
  if (answer.status === 401) {
    Board.toLogin();
    return;
  }
  me = await answer.json();
  showRole();

  Board.connect(
    "/api/live",
    (message, fresh) => {
      if (fresh) state = null;
      render(message.state);
      announce(message.events);
    },
    (text) => {
      $("connection").textContent = text;
      $("connection").classList.toggle("down", text !== "live");
    },
  );
})();
