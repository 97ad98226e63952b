/** The first words of PostgreSQL's statements that begin, end or mark a transaction or savepoint. */
const CONTROL_WORDS = new Set(['begin', 'start', 'commit', 'end', 'rollback', 'abort', 'savepoint', 'release', 'prepare']);

/**
 * Whether `sql` holds a statement that begins, ends or marks a transaction or savepoint: one
 * whose first token is a control word, at the start of the text or after a `;`. It reads the
 * text as PostgreSQL's lexer (scan.l) does, so that nothing PostgreSQL runs hides in what looks
 * like a comment or a string: `--` comments end at `\n` or `\r`; block comments nest; a `$` inside
 * a word does not open a dollar quote; `E''` strings (and, where `standard_conforming_strings` is
 * off, every string) take backslash escapes; a string goes on after a line break and another
 * quote. Both settings are read, and a statement found under either is a yes. One pass each,
 * linear in the text whatever it holds.
 *
 * It errs towards yes: a `;` inside parentheses or a function body counts as a statement's end,
 * `PREPARE` of a prepared statement counts, and so does anything left unterminated where a `;`
 * came before its end (PostgreSQL refuses such a text whole). A yes costs the caller one
 * confirming query; a missed statement could send a rolled-back message.
 */
export function holdsTransactionControl(sql: string): boolean {
  return holdsControlWhere(sql, false) || (sql.includes('\\') && holdsControlWhere(sql, true));
}

/** `holdsTransactionControl` with plain `'…'` strings taking backslash escapes or not. */
function holdsControlWhere(sql: string, backslashEscapes: boolean): boolean {
  let statementStart = true;
  let i = 0;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (c === DASH && sql.charCodeAt(i + 1) === DASH) {
      i = endOfLineComment(sql, i + 2);
      continue;
    }
    if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      i = endOfBlockComment(sql, i + 2);
      if (i < 0) return true;
      continue;
    }
    if (c === SEMICOLON) {
      statementStart = true;
      i++;
      continue;
    }
    if (statementStart) {
      if (isIdentStart(c) && CONTROL_WORDS.has(sql.slice(i, endOfWord(sql, i)).toLowerCase())) return true;
      // No ; ahead: the last statement, whose first token was all that could be control.
      if (sql.indexOf(';', i) < 0) return false;
      statementStart = false;
    }
    const next = sql.charCodeAt(i + 1);
    // E'…' takes backslash escapes whatever the setting; B'…' and X'…' never do.
    if (next === QUOTE && (c === 0x45 || c === 0x65)) i = endOfString(sql, i + 2, true);
    else if (next === QUOTE && (c === 0x42 || c === 0x62 || c === 0x58 || c === 0x78)) i = endOfString(sql, i + 2, false);
    else if (isIdentStart(c)) i = endOfWord(sql, i);
    else if (c === QUOTE) i = endOfString(sql, i + 1, backslashEscapes);
    else if (c === DOUBLE_QUOTE) i = endOfQuotedIdentifier(sql, i + 1);
    else if (c === DOLLAR) i = endOfDollarQuote(sql, i);
    else i = isDigit(c) ? endOfDigits(sql, i) : i + 1;
    if (i < 0) return true;
  }
  return false;
}

const DASH = 0x2d;
const SLASH = 0x2f;
const STAR = 0x2a;
const SEMICOLON = 0x3b;
const QUOTE = 0x27;
const DOUBLE_QUOTE = 0x22;
const DOLLAR = 0x24;
const BACKSLASH = 0x5c;
const LF = 0x0a;
const CR = 0x0d;

/** PostgreSQL's `space`: ' ', \t, \n, \v, \f, \r (\v from PostgreSQL 16 on; a yes either way). */
function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** `ident_start`: a letter, `_`, or any non-ASCII character (each of its UTF-8 bytes is high). */
function isIdentStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c >= 0x80;
}

/** The index just past the word at `i`: `ident_cont` takes digits and `$` too, so `a$$` is one word. */
function endOfWord(sql: string, i: number): number {
  i++;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (!isIdentStart(c) && !isDigit(c) && c !== DOLLAR) break;
    i++;
  }
  return i;
}

/** The index just past the digits at `i`: a number, then whatever follows it is a token of its own. */
function endOfDigits(sql: string, i: number): number {
  while (i < sql.length && isDigit(sql.charCodeAt(i))) i++;
  return i;
}

/** The index of the line break (`\n` or `\r`) that ends a `--` comment whose text starts at `i`. */
function endOfLineComment(sql: string, i: number): number {
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === LF || c === CR) return i;
    i++;
  }
  return i;
}

/** The index just past the block comment whose body starts at `i` (they nest); -1 when it never closes. */
function endOfBlockComment(sql: string, i: number): number {
  let depth = 1;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === STAR && sql.charCodeAt(i + 1) === SLASH) {
      i += 2;
      if (--depth === 0) return i;
    } else if (c === SLASH && sql.charCodeAt(i + 1) === STAR) {
      depth++;
      i += 2;
    } else i++;
  }
  return -1;
}

/**
 * The index just past a string literal whose body starts at `i` (`''` is a quote; with
 * `backslashEscapes`, `\` takes the next character), and past every continuation of it: a quote
 * behind whitespace and `--` comments holding a line break goes on with the same string, escapes
 * and all. -1 when it never closes.
 */
function endOfString(sql: string, i: number, backslashEscapes: boolean): number {
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === BACKSLASH && backslashEscapes) i += 2;
    else if (c !== QUOTE) i++;
    else if (sql.charCodeAt(i + 1) === QUOTE) i += 2;
    else {
      const continued = continuationQuote(sql, i + 1);
      if (continued < 0) return i + 1;
      i = continued + 1;
    }
  }
  return -1;
}

/** scan.l's `quotecontinue`: the index of the quote that continues a string closed just before `i`, or -1. */
function continuationQuote(sql: string, i: number): number {
  let lineBreak = false;
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (c === QUOTE) return lineBreak ? i : -1;
    if (c === DASH && sql.charCodeAt(i + 1) === DASH) i = endOfLineComment(sql, i + 2);
    else if (isSpace(c)) {
      if (c === LF || c === CR) lineBreak = true;
      i++;
    } else return -1;
  }
  return -1;
}

/** The index just past a quoted identifier whose body starts at `i` (`""` is a quote); -1 when it never closes. */
function endOfQuotedIdentifier(sql: string, i: number): number {
  while (i < sql.length) {
    if (sql.charCodeAt(i) !== DOUBLE_QUOTE) i++;
    else if (sql.charCodeAt(i + 1) === DOUBLE_QUOTE) i += 2;
    else return i + 1;
  }
  return -1;
}

/**
 * At a `$` that starts a token: the index just past the dollar-quoted string it opens (`$$…$$`,
 * `$tag$…$tag$`, the tag case-sensitive), or just past the `$` when it opens none (`$1`, a lone
 * `$`); -1 when the quote never closes.
 */
function endOfDollarQuote(sql: string, i: number): number {
  let j = i + 1;
  if (j < sql.length && isIdentStart(sql.charCodeAt(j))) j = endOfTag(sql, j);
  if (sql.charCodeAt(j) !== DOLLAR) return i + 1;
  const tag = sql.slice(i, j + 1);
  const close = sql.indexOf(tag, j + 1);
  return close < 0 ? -1 : close + tag.length;
}

/** The index just past a dollar quote's tag at `i` (`dolq_cont`: letters, digits, `_`, non-ASCII; no `$`). */
function endOfTag(sql: string, i: number): number {
  while (i < sql.length) {
    const c = sql.charCodeAt(i);
    if (!isIdentStart(c) && !isDigit(c)) break;
    i++;
  }
  return i;
}
