// Sortable tables: click a header to sort by that column (numbers by data-v).
(function () {
  "use strict";
  function key(cell) {
    var v = cell.getAttribute("data-v");
    if (v !== null && v !== "" && !isNaN(Number(v))) { return Number(v); }
    return cell.textContent.trim().toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.title = "sort";
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var asc = th.getAttribute("data-dir") !== "asc";
        heads.forEach(function (h) { h.removeAttribute("data-dir"); });
        th.setAttribute("data-dir", asc ? "asc" : "desc");
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]);
          if (x === y) { return 0; }
          return (x < y ? -1 : 1) * (asc ? 1 : -1);
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
}());
