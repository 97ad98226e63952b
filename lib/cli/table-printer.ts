/** A column of a printed table. */
export interface PrintedColumn {
  header: string;
  /** Numbers read best right-aligned. */
  align?: 'left' | 'right';
}

const GAP = '  ';

/**
 * Rows as aligned text columns under their headers, one line each, for a terminal. Cells are
 * made printable first: a stored text (a type, an error) with control characters could
 * otherwise break the lines or send escape sequences to the terminal.
 */
export function printTable(columns: PrintedColumn[], rows: string[][]): string {
  const cells = rows.map((row) => row.map(printable));
  const widths = columns.map((column, index) => Math.max(width(column.header), ...cells.map((row) => width(row[index] ?? ''))));
  const line = (row: string[]) =>
    columns
      .map((column, index) => {
        const cell = row[index] ?? '';
        const padding = ' '.repeat(widths[index] - width(cell));
        return column.align === 'right' ? padding + cell : cell + padding;
      })
      .join(GAP)
      .trimEnd();
  return [line(columns.map((column) => column.header)), ...cells.map(line)].join('\n') + '\n';
}

/** Text shown on one line: line breaks and tabs as spaces, other control characters escaped. */
export function printable(text: string): string {
  return text.replace(/[\t\n\r]/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Characters as a terminal lays them out, near enough: code points. */
function width(text: string): number {
  return [...text].length;
}
