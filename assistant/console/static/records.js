"use strict";
// The inspector's records: the chain checked, and every login, refused login and action with who did it.

(() => {
  const $ = (id) => document.getElementById(id);

  async function get(path) {
    const response = await fetch(path);
    if (response.status === 401) {
      location.assign("/login?next=/records");
      throw new Error("logged out");
    }
    return response.json();
  }

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "" : String(text);
    return td;
  }

  async function verify() {
    $("verify").textContent = "checking";
    const answer = await get("/api/verify");
    $("verify").textContent = answer.text || answer.error;
    $("verify").className = answer.ok ? "status" : "status error";
  }

  async function access() {
    const answer = await get("/api/access");
    const rows = (answer.access || []).slice().reverse().map((r) => {
      const tr = document.createElement("tr");
      if (r.what.endsWith("Refused") || r.ok === false) tr.className = "refused";
      tr.append(
        cell(r.at.slice(0, 19).replace("T", " ")),
        cell(r.what),
        cell(r.user),
        cell(r.role),
        cell(r.action ? r.action + (r.data ? " " + JSON.stringify(r.data) : "") : ""),
        cell(r.address),
        cell(r.reason || r.error),
      );
      return tr;
    });
    if (!rows.length) {
      // an empty table says so: a blank one reads as a page still loading
      const none = cell("No entries yet");
      none.colSpan = 7;
      none.className = "empty";
      const tr = document.createElement("tr");
      tr.append(none);
      rows.push(tr);
    }
    $("access").replaceChildren(...rows);
  }

  $("verify-again").addEventListener("click", verify);
  verify();
  access();
})();
