/** What every page needs to know of the board it belongs to. */
export interface BoardView {
  /** The board's path as the browser sees it (global prefix included), without a trailing slash. */
  base: string;
  title: string;
  readOnly: boolean;
  /** Characters of a payload, headers or error shown before the rest is cut. */
  displayLimit: number;
  /** The CSRF token the page's forms carry. */
  csrfToken: string;
}
