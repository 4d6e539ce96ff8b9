/* Three layout helpers that CSS alone cannot do (book/_static/custom.css holds the styles they switch on).

   1. A box that scrolls sideways (a wide table, a code cell on a phone, a long formula) fades out at the edge where
      more of it lies hidden: class "scroll-more-right" / "scroll-more-left", kept up to date as the reader scrolls
      and as the window changes width. A phone's scroll bars are hidden until touched; without this cue a table's
      last columns, or a formula's end, were simply not there for the reader. (A CSS-only shadow drawn under the
      content cannot be seen through the cells' own backgrounds, nor match the theorem boxes' tinted ones.)
   2. Punctuation right after an inline formula is kept on the formula's line: browsers may break a line between
      an inline box (MathJax's formula) and a following ")." or ",", which then starts the next line alone.
   3. The cells of a table marked "cards-on-phone" are labelled with their column's name (data-label), which the
      stylesheet shows when, on a phone, each row is drawn as a card.
   4. A figure's image opens at full size when clicked: on a phone a multi-panel figure scaled to the screen's width
      has labels too small to read. */
(function () {
  "use strict";

  const SCROLL_BOXES = [
    ".pst-scrollable-table-container",  // the theme's box around a Markdown table
    "div.result-table > .output",       // a numbered result table (book/_ext/resulttable.py)
    "div.cell_output .output",          // a cell's output (a pandas table, a long printed line)
    "div.cell_input pre",               // a code cell: its lines are kept, so on a phone they scroll
    "main div.highlight pre",           // a code block in the prose
    "mjx-container[display='true']",    // a display formula
    "span.math",                        // an inline formula
  ].join(", ");

  function updateCue(box) {
    const hidden = box.scrollWidth - box.clientWidth;
    const more = box.clientWidth > 0 && hidden > 2;
    box.classList.toggle("scroll-more-left", more && box.scrollLeft > 1);
    box.classList.toggle("scroll-more-right", more && box.scrollLeft < hidden - 1);
    if (more) {
      box.style.setProperty("--fade", `${Math.min(48, Math.max(12, hidden))}px`);
    }
  }

  function watchScrollBoxes() {
    const boxes = document.querySelectorAll(SCROLL_BOXES);
    const resized = new ResizeObserver((entries) => entries.forEach((entry) => updateCue(entry.target)));
    boxes.forEach((box) => {
      updateCue(box);
      box.addEventListener("scroll", () => updateCue(box), { passive: true });
      resized.observe(box);
    });
    // a box keeps its width while its content changes (an image loads, a web font arrives)
    window.addEventListener("load", () => boxes.forEach(updateCue));
  }

  const OPENING = /[([“‘]+$/;
  const CLOSING = /^[.,;:!?)\]’”]+/;

  function gluePunctuation() {
    document.querySelectorAll("main span.math").forEach((math) => {
      const before = math.previousSibling;
      const after = math.nextSibling;
      const opening = before && before.nodeType === Node.TEXT_NODE ? OPENING.exec(before.data) : null;
      const closing = after && after.nodeType === Node.TEXT_NODE ? CLOSING.exec(after.data) : null;
      if (!opening && !closing) {
        return;
      }
      const glue = document.createElement("span");
      glue.className = "math-glue";
      math.parentNode.insertBefore(glue, math);
      if (opening) {
        before.data = before.data.slice(0, opening.index);
        glue.appendChild(document.createTextNode(opening[0]));
      }
      glue.appendChild(math);
      if (closing) {
        after.data = after.data.slice(closing[0].length);
        glue.appendChild(document.createTextNode(closing[0]));
      }
    });
  }

  function labelCards() {
    document.querySelectorAll("table.cards-on-phone").forEach((table) => {
      const names = [...table.querySelectorAll("thead th")].map((th) => th.textContent.trim());
      table.querySelectorAll("tbody tr").forEach((row) => {
        [...row.children].forEach((cell, i) => {
          if (names[i]) {
            cell.dataset.label = names[i];
          }
        });
      });
    });
  }

  function linkFigures() {
    document.querySelectorAll("figure img").forEach((img) => {
      if (img.closest("a") || !img.getAttribute("src")) {
        return;
      }
      const link = document.createElement("a");
      link.href = img.getAttribute("src");
      link.title = "Open the figure at full size";
      img.replaceWith(link);
      link.appendChild(img);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    gluePunctuation();
    labelCards();
    linkFigures();
    // the formulas' boxes exist once MathJax has drawn them (a page without mathematics does not load it)
    const mathjax = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    (mathjax || Promise.resolve()).then(watchScrollBoxes, watchScrollBoxes);
  });
})();
