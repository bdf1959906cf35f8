"use strict";
// Shared by the master board and the flashboard: the 75-ball board, the live feed and the announcements.

const Board = (() => {
  const LETTERS = "BINGO";

  function spoken(ball) {
    // "B7" -> "B 7": screen readers read it as a caller says it.
    return ball ? ball[0] + " " + ball.slice(1) : "";
  }

  function build(table, onPick) {
    table.textContent = "";
    const body = document.createElement("tbody");
    for (let row = 0; row < 5; row++) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = LETTERS[row];
      tr.appendChild(th);
      for (let i = 1; i <= 15; i++) {
        const number = row * 15 + i;
        const td = document.createElement("td");
        td.id = "ball-" + LETTERS[row] + number;
        td.dataset.ball = LETTERS[row] + number;
        td.textContent = String(number);
        if (onPick) td.addEventListener("click", () => onPick(td.dataset.ball));
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
  }

  function render(table, state) {
    const called = new Set(state.calls);
    for (const td of table.querySelectorAll("td[data-ball]")) {
      const ball = td.dataset.ball;
      const lit = called.has(ball);
      td.classList.toggle("lit", lit);
      td.classList.toggle("current", ball === state.current);
      td.setAttribute("aria-label", spoken(ball) + (lit ? ", called" : ", not called"));
    }
  }

  function announcer(region) {
    // Clear then set, so the same words twice in a row are still announced.
    let timer = null;
    return (text) => {
      if (!text) return;
      region.textContent = "";
      clearTimeout(timer);
      timer = setTimeout(() => { region.textContent = text; }, 60);
    };
  }

  function connect(onUpdate, onStatus) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + location.host + "/api/live");
    let fresh = true; // the first message of each connection is the whole state, even from a restarted server
    socket.onopen = () => onStatus("live");
    socket.onmessage = (event) => {
      onUpdate(JSON.parse(event.data), fresh);
      fresh = false;
    };
    socket.onclose = () => {
      onStatus("disconnected, reconnecting");
      setTimeout(() => connect(onUpdate, onStatus), 1000);
    };
    return socket;
  }

  return { LETTERS, spoken, build, render, announcer, connect };
})();
