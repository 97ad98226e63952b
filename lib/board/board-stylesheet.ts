/**
 * The board's only stylesheet, served by the board itself (`assets/board.css`): no inline style
 * (the Content-Security-Policy allows none), no font or image from elsewhere, so the board works
 * offline.
 */
export const BOARD_STYLESHEET = `
:root { color-scheme: light dark; --line: #8884; --alert: #c0392b; --calm: #2e7d32; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1.2em; border-bottom: 1px solid var(--line); }
nav { display: flex; gap: 1em; }
main { padding: 0 1.2em 2em; }
h1 { font-size: 1.35em; word-break: break-all; }
h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid var(--line); padding: .25em .5em; text-align: left; vertical-align: top; }
td.error { max-width: 30em; overflow-wrap: anywhere; }
.alert { color: var(--alert); font-weight: 600; }
.calm { color: var(--calm); }
.badge { border: 1px solid var(--line); border-radius: .3em; padding: 0 .4em; }
.status.MANUAL_REQUIRED, .status.FAILED { color: var(--alert); }
.status.DONE { color: var(--calm); }
form.filter { display: flex; flex-wrap: wrap; gap: .5em 1em; align-items: end; margin: .5em 0; }
fieldset { border: 1px solid var(--line); }
.actions { display: flex; gap: .6em; align-items: center; }
a.button, button { border: 1px solid var(--line); border-radius: .3em; padding: .2em .7em; text-decoration: none; background: none; color: inherit; font: inherit; cursor: pointer; }
button.danger { border-color: var(--alert); color: var(--alert); }
pre.stored { border: 1px solid var(--line); padding: .6em; max-height: 40em; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dl.fields dd { margin: 0; overflow-wrap: anywhere; }
meter { width: 8em; }
.refused { color: var(--alert); }
`;

/** The board's icon, served by the board too: browsers ask for one, and would otherwise ask the app's root. */
export const BOARD_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="1" y="3" width="14" height="10" rx="2" fill="#2e7d32"/><path d="M4 8h8M9 5l3 3-3 3" stroke="#fff" stroke-width="1.6" fill="none"/></svg>`;
