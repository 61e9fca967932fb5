// MathJax 3 configuration for pymdownx.arithmatex in generic mode. The renderer itself is the
// bundled vendor/mathjax/tex-svg-full.js (see mkdocs.yml): SVG output, all TeX extensions built in.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  },
  startup: {
    // The document$ subscription below typesets each page, so MathJax does not typeset it twice.
    typeset: false
  }
};

// Typeset once Material has the page, and again after instant navigation swaps the page content.
// (The SVG output keeps its glyph cache per equation, so there is no output cache to clear.)
document$.subscribe(() => {
  MathJax.startup.promise.then(() => {
    MathJax.typesetClear();
    MathJax.texReset();
    return MathJax.typesetPromise();
  });
});
