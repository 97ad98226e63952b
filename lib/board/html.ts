/**
 * HTML built from templates whose every interpolated value is escaped unless it is already
 * `SafeHtml` (the output of another `html` template). Stored values (payloads, headers, errors,
 * keys) only ever reach a page through it, so none can open a tag, close an attribute or start a
 * script: `<script>`, `onerror=` and `javascript:` arrive as text.
 */
export class SafeHtml {
  /** @param text markup already escaped */
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text as it is safe inside an element or a double-quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (char) => ESCAPES[char]);
}

/** A value interpolated into a template: markup as it is, arrays joined, null and undefined as nothing, anything else escaped as text. */
function interpolated(value: unknown): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(interpolated).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** A template of markup: `html\`<td>${value}</td>\`` escapes `value`. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let text = strings[0];
  for (let index = 0; index < values.length; index++) text += interpolated(values[index]) + strings[index + 1];
  return new SafeHtml(text);
}

/**
 * A path and query of the board itself, for an `href` or `action`: every name and value
 * percent-encoded, so no stored value can make it another scheme or another origin.
 */
export function boardHref(base: string, page: string, query: Record<string, string | readonly string[] | undefined> = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const item of typeof value === 'string' ? [value] : value) search.append(name, item);
  }
  const text = search.toString();
  return `${base}${page ? `/${page}` : ''}${text ? `?${text}` : ''}`;
}

/**
 * Text cut for display: a payload or error of megabytes would make a page no one can read.
 * Cut at a code point, never inside a surrogate pair.
 */
export function cutForDisplay(text: string, limit: number): { shown: string; cut: boolean } {
  if (text.length <= limit) return { shown: text, cut: false };
  let end = limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return { shown: text.slice(0, end), cut: true };
}
