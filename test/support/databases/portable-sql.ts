/** How one database spells what portable test SQL leaves open. */
export interface SqlSpelling {
  /** The placeholder of the `index`-th parameter (1-based): `?` or `$1`. */
  placeholder(index: number): string;
  /** A table name, quoted and qualified with the test file's namespace. */
  table(name: string): string;
}

const TABLE_REFERENCE = /^\{([A-Za-z_][A-Za-z0-9_]*)\}/;

/**
 * Rewrites portable test SQL for one database. Outside quoted strings and identifiers:
 * `{outbox_message}` becomes the qualified table name, and each `?` the database's placeholder;
 * an array parameter expands to one placeholder per element, so `IN (?)` takes a list on every
 * database.
 */
export function preparePortableSql(text: string, params: readonly unknown[], spelling: SqlSpelling): { text: string; params: unknown[] } {
  const out: string[] = [];
  const values: unknown[] = [];
  let next = 0;
  let i = 0;
  while (i < text.length) {
    const char = text[i];
    if (char === "'" || char === '"' || char === '`') {
      const end = closingQuote(text, i);
      out.push(text.slice(i, end));
      i = end;
    } else if (char === '?') {
      if (next >= params.length) throw new Error(`portable SQL has more ? than the ${params.length} parameter(s) given: ${text}`);
      const param = params[next++];
      const expanded = Array.isArray(param) ? param : [param];
      if (expanded.length === 0) throw new Error(`an empty list cannot stand for ? in: ${text}`);
      out.push(expanded.map((value) => (values.push(value), spelling.placeholder(values.length))).join(', '));
      i++;
    } else if (char === '{' && TABLE_REFERENCE.test(text.slice(i))) {
      const [reference, name] = TABLE_REFERENCE.exec(text.slice(i))!;
      out.push(spelling.table(name));
      i += reference.length;
    } else {
      out.push(char);
      i++;
    }
  }
  if (next !== params.length) throw new Error(`portable SQL has ${next} ? for ${params.length} parameter(s): ${text}`);
  return { text: out.join(''), params: values };
}

/** The index just after the quoted run starting at `start` (a doubled quote stays inside). */
function closingQuote(text: string, start: number): number {
  const quote = text[start];
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === quote) {
      if (text[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return i;
}
