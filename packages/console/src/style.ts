/** The console's one style sheet, served as /console/style.css (a module, so that it ships in dist). */
export const STYLE = `/* The console's one style sheet: system fonts, readable on a phone, visible focus, no colour-only meaning. */
:root {
  color-scheme: light dark;
  --fg: #1b1f24;
  --bg: #ffffff;
  --muted: #59636e;
  --line: #d1d9e0;
  --ok: #1a7f37;
  --bad: #cf222e;
  --warn: #9a6700;
  --accent: #0550ae;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6edf3;
    --bg: #0d1117;
    --muted: #9198a1;
    --line: #30363d;
    --ok: #3fb950;
    --bad: #f85149;
    --warn: #d29922;
    --accent: #4493f8;
  }
}
* {
  box-sizing: border-box;
}
body {
  margin: 0;
  font:
    15px/1.45 system-ui,
    sans-serif;
  color: var(--fg);
  background: var(--bg);
}
a {
  color: var(--accent);
}
:focus-visible {
  outline: 3px solid var(--accent);
  outline-offset: 2px;
}
.skip {
  position: absolute;
  left: -999px;
}
.skip:focus {
  left: 8px;
  top: 8px;
  background: var(--bg);
  padding: 4px 8px;
}
header {
  border-bottom: 1px solid var(--line);
  padding: 8px 16px;
}
nav {
  display: flex;
  flex-wrap: wrap;
  gap: 4px 16px;
  align-items: baseline;
}
nav a[aria-current='page'] {
  font-weight: 700;
  text-decoration: none;
}
.brand {
  font-weight: 700;
}
.health {
  display: flex;
  flex-wrap: wrap;
  gap: 4px 16px;
  margin-top: 6px;
  color: var(--muted);
  font-size: 13px;
}
main {
  padding: 8px 16px 32px;
  max-width: 1200px;
}
h1 {
  font-size: 22px;
  margin: 8px 0;
}
h2 {
  font-size: 17px;
  margin: 20px 0 8px;
}
.scroll {
  overflow-x: auto;
}
table {
  border-collapse: collapse;
  width: 100%;
}
caption {
  text-align: left;
  color: var(--muted);
  padding: 4px 0;
}
th,
td {
  text-align: left;
  padding: 6px 8px;
  border-bottom: 1px solid var(--line);
  white-space: nowrap;
}
.num {
  text-align: right;
}
.ok,
.breaker.closed,
.st.ok {
  color: var(--ok);
}
.bad,
.breaker.open,
.st.transient,
.st.permanent {
  color: var(--bad);
}
.warn,
.breaker.half-open {
  color: var(--warn);
}
.breaker.open {
  font-weight: 700;
}
.tag {
  border: 1px solid currentColor;
  border-radius: 4px;
  padding: 0 4px;
  margin-left: 6px;
  font-size: 12px;
}
.filter,
.actions,
.token {
  display: flex;
  flex-wrap: wrap;
  gap: 8px;
  align-items: center;
  margin: 8px 0;
}
input,
button,
.button {
  font: inherit;
  padding: 6px 10px;
  border: 1px solid var(--line);
  border-radius: 6px;
  background: var(--bg);
  color: var(--fg);
  min-height: 36px;
}
button,
.button {
  cursor: pointer;
  text-decoration: none;
}
button.danger {
  color: var(--bad);
  border-color: var(--bad);
}
.facts {
  display: grid;
  grid-template-columns: max-content 1fr;
  gap: 4px 16px;
}
.facts dd {
  margin: 0;
}
pre.config {
  overflow-x: auto;
  border: 1px solid var(--line);
  padding: 8px;
}
@media (max-width: 600px) {
  .facts {
    grid-template-columns: 1fr;
  }
  .facts dt {
    font-weight: 700;
  }
  th,
  td {
    padding: 4px 6px;
  }
}
`;
