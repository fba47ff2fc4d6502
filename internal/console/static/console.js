// Scrolls each value box to its first violation, so that a long value does
// not hide it below the fold; again after htmx swaps a part of the page.
(function () {
  function reveal(root) {
    root.querySelectorAll('.box > .json').forEach(function (box) {
      var bad = box.querySelector('.jl.bad');
      if (bad && box.scrollHeight > box.clientHeight) {
        box.scrollTop = Math.max(0, bad.offsetTop - box.clientHeight / 3);
      }
    });
  }
  document.addEventListener('DOMContentLoaded', function () { reveal(document); });
  document.addEventListener('htmx:afterSwap', function (e) { reveal(e.target); });
})();
