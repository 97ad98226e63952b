/** The first words of PostgreSQL's statements that begin, end or mark a transaction or savepoint. */
const CONTROL_WORDS = new Set(['begin', 'start', 'commit', 'end', 'rollback', 'abort', 'savepoint', 'release', 'prepare']);

/**
 * Whether `sql` holds a statement that begins, ends or marks a transaction or savepoint: one
 * whose first word (behind whitespace and `--` or nested `/* *\/` comments) is a control word,
 * at the start of the text or after any `;`. One pass, linear in the text, whatever it holds
 * (a pattern with comment alternatives backtracks exponentially on runs of comments).
 *
 * It errs towards yes: a `;` inside a string literal counts as a statement's end, and `PREPARE`
 * of a prepared statement counts too; an unclosed comment is a yes. A yes costs the caller one
 * confirming query; a missed statement could send a rolled-back message.
 */
export function holdsTransactionControl(sql: string): boolean {
  let i = 0;
  while (i < sql.length) {
    i = skipSpaceAndComments(sql, i);
    if (i < 0) return true;
    const wordEnd = endOfWord(sql, i);
    if (wordEnd > i && CONTROL_WORDS.has(sql.slice(i, wordEnd).toLowerCase())) return true;
    const next = sql.indexOf(';', wordEnd);
    if (next < 0) return false;
    i = next + 1;
  }
  return false;
}

/** The index of the first character at or after `i` that is neither space nor comment; -1 inside an unclosed comment. */
function skipSpaceAndComments(sql: string, i: number): number {
  while (i < sql.length) {
    const c = sql[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f') i++;
    else if (c === '-' && sql[i + 1] === '-') {
      const lineEnd = sql.indexOf('\n', i + 2);
      if (lineEnd < 0) return sql.length;
      i = lineEnd + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      i = endOfBlockComment(sql, i + 2);
      if (i < 0) return -1;
    } else return i;
  }
  return i;
}

/** The index just past the block comment whose body starts at `i` (PostgreSQL's nest); -1 when it never closes. */
function endOfBlockComment(sql: string, i: number): number {
  let depth = 1;
  while (i < sql.length) {
    if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i += 2;
      if (depth === 0) return i;
    } else if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i += 2;
    } else i++;
  }
  return -1;
}

/** The index just past the identifier-like word at `i` (letters, digits, `_`, `$`). */
function endOfWord(sql: string, i: number): number {
  while (i < sql.length && /[A-Za-z0-9_$]/.test(sql[i])) i++;
  return i;
}
